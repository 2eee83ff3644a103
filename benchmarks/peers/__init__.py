"""Other autodiff systems a user might pick instead of fastgrad: optional benchmark columns.

One module per system, each holding that system's versions of the benchmark cases written in its
own idiom (same math, same sizes, same inputs as ``workloads.py`` and ``asv_scenarios.py``), so
they can be reviewed side by side with the definitions they mirror:

- ``torch`` (``torch_impl.py``): PyTorch eager on the CPU, float64, one thread;
- ``mygrad`` (``mygrad_impl.py``): MyGrad, a NumPy-based tape;
- ``jax`` and ``jax-jit`` (``jax_impl.py``): JAX with 64-bit floats, without jit (op by op) and
  with ``jax.jit`` around the gradient (loops as ``lax`` loops, the idiom under jit).

Every module exposes ``gradient_call(cid) -> (call, info)`` like ``_impls.gradient_call``: ``call()``
returns the gradient (anything ``numpy.asarray`` converts, in autograd's structure once flattened),
``info`` the version and thread settings.  None of them is imported unless its worker asks: a
timing process imports one autodiff library only.  A peer that is not installed is skipped.
"""

import importlib.util

# implementation name -> (module in this package, import names it needs)
PEERS = {
    "torch": ("torch_impl", ("torch",)),
    "mygrad": ("mygrad_impl", ("mygrad",)),
    "jax": ("jax_impl", ("jax", "jaxlib")),
    "jax-jit": ("jax_impl", ("jax", "jaxlib")),
}
TITLES = {"torch": "PyTorch eager", "mygrad": "MyGrad", "jax": "JAX", "jax-jit": "JAX jit"}
# The cases every peer implements: PERF.md's workloads, autograd's asv scenarios and the small
# gradient of the mixed case (not fastgrad's option variants, nor the scaling chain).
CASES = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "asv-short", "asv-long", "asv-fan", "mixed-small")
# Peers whose arrays NumPy does not allocate: tracemalloc does not see their memory.
UNTRACED = {"torch", "jax", "jax-jit"}


def missing(peer):
    """None when ``peer`` can be imported, else the reason it cannot (without importing it)."""
    for name in PEERS[peer][1]:
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed"
    return None


def gradient_call(peer, cid):
    module = importlib.import_module(f"peers.{PEERS[peer][0]}")
    if peer == "jax-jit":
        return module.gradient_call(cid, jit=True)
    return module.gradient_call(cid)
