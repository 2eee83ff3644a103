"""Minimal reproducers of the causes of lifelines' test failures under fastgrad, each run under
the real autograd 1.9.1 and under fastgrad (``install_as_autograd()``), in separate processes.

    python scripts/ci_lifelines/reproducers.py            # every case, a table of both outcomes
    python scripts/ci_lifelines/reproducers.py stack-dict-values

Needs autograd 1.9.1 and fastgrad installed (the ci_lifelines venv has both).  A case is a few
lines of autograd-style code whose value is printed; "same" means both implementations printed
the same text (values rounded to 12 digits).  benchmarks/results/lifelines_failures.md says which
lifelines tests each case stands for.
"""

import subprocess
import sys

CASES = {
    # 36 tests: lifelines' univariate fitters take the hazard as elementwise_grad of the
    # cumulative hazard w.r.t. the durations, which are integer arrays in those tests.
    "egrad-int-array": """
f = lambda params, t: (t / params[0]) ** params[1]
show(elementwise_grad(f, 1)(np.array([2.0, 1.5]), np.array([1, 2, 3])))
""",
    # ... and lifelines does it inside value_and_grad w.r.t. the parameters (a float array).
    "egrad-int-array-in-grad": """
f = lambda params, t: (t / params[0]) ** params[1]
hazard_sum = lambda params: np.sum(elementwise_grad(f, 1)(params, np.array([1, 2, 3])))
show(value_and_grad(hazard_sum)(np.array([2.0, 1.5])))
""",
    "grad-int-array": """
show(grad(lambda x: np.sum(x * 2.5))(np.array([1, 2])))
""",
    # PiecewiseExponentialRegressionFitter._add_penalty: np.stack(params.values()) on a plain dict
    # of boxes (the parameters unflattened inside value_and_grad).
    "stack-dict-values": """
show(grad(lambda x: np.sum(np.stack({"a": x, "b": 2 * x}.values()) ** 2))(np.ones(2)))
""",
    "stack-generator": """
show(grad(lambda x: np.sum(np.stack(x * i for i in range(3))))(np.ones(2)))
""",
    "stack-generator-untraced": """
show(np.stack(np.ones(2) * i for i in range(3)))
""",
    "vstack-hstack-generator": """
show(grad(lambda x: np.sum(np.vstack(x * i for i in range(3))) + np.sum(np.hstack(x * i for i in range(3))))(np.ones(2)))
""",
}

PRELUDE = """
import sys, warnings
warnings.simplefilter("ignore")
if sys.argv[1] == "fastgrad":
    import fastgrad
    fastgrad.install_as_autograd()
import numpy as onp
import autograd.numpy as np
from autograd import grad, value_and_grad, elementwise_grad, jacobian, hessian

def show(value):
    if isinstance(value, (tuple, list)):
        value = [onp.round(onp.asarray(v, dtype=float), 12).tolist() for v in value]
    elif isinstance(value, dict):
        value = {k: onp.round(onp.asarray(v, dtype=float), 12).tolist() for k, v in value.items()}
    else:
        value = onp.round(onp.asarray(value, dtype=float), 12).tolist()
    print("value:", value)

try:
{body}
except Exception as e:
    print("raises:", type(e).__name__ + ":", str(e).splitlines()[0][:160])
"""


def run(name, impl):
    body = "\n".join("    " + line for line in CASES[name].strip().splitlines())
    proc = subprocess.run([sys.executable, "-c", PRELUDE.replace("{body}", body), impl], capture_output=True, text=True)
    out = proc.stdout.strip() or proc.stderr.strip().splitlines()[-1:] or ["(nothing)"]
    return out if isinstance(out, str) else out[0]


def main(names):
    failures = 0
    for name in names or CASES:
        a, f = run(name, "autograd"), run(name, "fastgrad")
        same = a == f
        failures += not same
        print(f"{name}: {'same' if same else 'DIFFERENT'}")
        print(f"    autograd: {a}")
        if not same:
            print(f"    fastgrad: {f}")
    print(f"{failures} of {len(names or CASES)} cases differ")


if __name__ == "__main__":
    main(sys.argv[1:])
