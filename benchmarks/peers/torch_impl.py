"""The benchmark cases in PyTorch eager (CPU, float64, one thread), in PyTorch's idiom.

Each function mirrors its definition in ``workloads.py`` / ``asv_scenarios.py`` op for op, on
tensors: the differentiated argument is a leaf tensor with ``requires_grad=True`` made once from
the shared inputs (as a user differentiating at a point would), the other inputs plain tensors.
One gradient call runs the forward and ``torch.autograd.grad`` (which returns the gradient
instead of accumulating it into ``.grad``).
"""

import torch

from _impls import case_inputs

torch.set_num_threads(1)  # the method pins every implementation's compute to one thread
torch.set_num_interop_threads(1)


def w1_scalar_chain(x):
    for _ in range(1000):
        x = torch.sin(x) * x + 0.1
    return x


def w2_small_array_chain(x):
    for _ in range(1000):
        x = torch.sin(x) * x + 0.1
    return torch.sum(x)


def w3_mlp(params, X, Y):
    h = X
    for i, (W, b) in enumerate(params):
        z = h @ W + b
        h = torch.tanh(z) if i < len(params) - 1 else z
    return torch.mean((h - Y) ** 2)


def w4_big_arrays(x):
    return torch.sum(torch.exp(torch.sin(x)) * x**2 + torch.log1p(x * x))


def w5_deep_graph(x):
    for _ in range(50_000):
        x = x * 1.0000001 + 1e-9
    return x


def w6_fan_in(x, C):
    total = 0.0
    for c in C:
        total = total + x * c
    return torch.sum(total)


def w7_logistic(w, X, y):
    p = 0.5 * (torch.tanh((X @ w) / 2) + 1)
    return -torch.sum(torch.log(p * y + (1 - p) * (1 - y)))


def w8_indexing(x):
    s = 0.0
    for i in range(1000):
        s = s + x[i] * x[i]
    return s


def w9_saved_state(Z, A):
    for _ in range(50):
        Z = torch.tanh(A @ Z)
    return torch.sum(Z)


def asv_short(x):
    return x**2


def asv_long(x):
    for _ in range(50):
        x = torch.sin(x)
    return x


def asv_fan_out_fan_in(x):
    for _ in range(10**4):
        x = (x + x) / 2.0
    return x


FUNCTIONS = {
    "W1": w1_scalar_chain,
    "W2": w2_small_array_chain,
    "W3": w3_mlp,
    "W4": w4_big_arrays,
    "W5": w5_deep_graph,
    "W6": w6_fan_in,
    "W7": w7_logistic,
    "W8": w8_indexing,
    "W9": w9_saved_state,
    "asv-short": asv_short,
    "asv-long": asv_long,
    "asv-fan": asv_fan_out_fan_in,
    "mixed-small": asv_short,
}


def _tensor(value, requires_grad=False):
    """float64 tensor of a float or a NumPy array (W3's params: a list of (W, b) pairs)."""
    if isinstance(value, list):
        return [tuple(_tensor(a, requires_grad) for a in pair) for pair in value]
    return torch.tensor(value, dtype=torch.float64, requires_grad=requires_grad)


def gradient_call(cid):
    fun = FUNCTIONS[cid]
    first, *rest = case_inputs(cid)
    x = _tensor(first, requires_grad=True)
    others = [_tensor(a) for a in rest]
    leaves = [t for pair in x for t in pair] if isinstance(x, list) else [x]
    single = not isinstance(x, list)

    def call():
        g = torch.autograd.grad(fun(x, *others), leaves)
        return g[0] if single else g

    info = {"version": torch.__version__, "threads": torch.get_num_threads()}
    return call, info
