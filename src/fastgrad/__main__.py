"""`python -m fastgrad`: fit a tiny model with fastgrad.grad, then compare its speed with autograd.

The model: a 2-16-1 tanh network that learns which points of the plane lie inside the unit circle
(synthetic data, fixed seed), trained by gradient descent with momentum.

This module imports nothing from fastgrad at the top, and only NumPy besides the standard library,
so the autograd timing subprocess can load this very file (by path, not as part of the package)
and run the same model code without fastgrad in its process: two autodiff libraries in one
process slow each other's garbage collection and would distort the comparison.
"""

import json
import os
import subprocess
import sys
import time

import numpy

STEPS, EVERY, LEARNING_RATE, MOMENTUM = 300, 50, 0.5, 0.9


def make_data():
    rng = numpy.random.RandomState(0)
    X = rng.uniform(-1.5, 1.5, size=(200, 2))
    y = (numpy.sum(X**2, axis=1) < 1.0).astype(float)
    params = [rng.randn(2, 16) * 0.5, numpy.zeros(16), rng.randn(16) * 0.5, numpy.zeros(())]
    return params, X, y


def make_loss(np):
    """The model's loss written against array module ``np`` (fastgrad.numpy or autograd.numpy)."""

    def predict(params, X):
        W1, b1, w2, b2 = params
        return np.tanh(X @ W1 + b1) @ w2 + b2  # logits

    def loss(params, X, y):
        sign = 2.0 * y - 1.0
        return np.mean(np.log1p(np.exp(-sign * predict(params, X))))  # logistic loss

    return loss, predict


def median_call_time(grad_fn, args, budget=0.5):
    """Median time of one call, over calls repeated for about ``budget`` seconds (at least 5)."""
    grad_fn(*args)  # warm-up
    times, start = [], time.perf_counter()
    while len(times) < 5 or time.perf_counter() - start < budget:
        t0 = time.perf_counter()
        grad_fn(*args)
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def time_grad(grad, np):
    """Run in the subprocess: print the median time of this demo's gradient under the given
    library's ``grad`` and array module, as JSON."""
    loss, _ = make_loss(np)
    print(json.dumps({"median": median_call_time(grad(loss), make_data())}))


# Run in a separate interpreter, so that fastgrad itself never imports autograd: the
# comparison library is loaded only there, and this file is loaded by path for the model.
_AUTOGRAD_TIMER = (
    "import importlib.util, json, sys\n"
    "try:\n"
    "    from autograd import grad\n"
    "    import autograd.numpy as anp\n"
    "except ImportError:\n"
    "    print(json.dumps({'median': None}))\n"
    "    sys.exit(0)\n"
    "spec = importlib.util.spec_from_file_location('_fastgrad_demo', sys.argv[1])\n"
    "demo = importlib.util.module_from_spec(spec)\n"
    "spec.loader.exec_module(demo)\n"
    "demo.time_grad(grad, anp)\n"
)


def autograd_median():
    """autograd's median time in a fresh process, or (None, reason) when it cannot be run."""
    code = _AUTOGRAD_TIMER
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, os.path.abspath(__file__)], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"autograd timing failed ({e})"
    if out.returncode != 0:
        return None, "autograd timing failed: " + (out.stderr.strip().splitlines() or ["?"])[-1]
    median = json.loads(out.stdout.strip().splitlines()[-1])["median"]
    return median, (None if median else "autograd is not installed: speed comparison skipped")


def fmt(seconds):
    return f"{seconds * 1e3:.3f} ms" if seconds >= 1e-3 else f"{seconds * 1e6:.1f} us"


def main():
    import fastgrad
    import fastgrad.numpy as np
    from fastgrad import grad

    if fastgrad.COMPILED:
        engine = "compiled"
    elif os.environ.get("FASTGRAD_PURE", "").strip().lower() not in ("", "0", "false", "no"):
        engine = "pure Python (FASTGRAD_PURE is set)"
    else:
        engine = "pure Python (the compiled extension is not available)"
    print(f"fastgrad {getattr(fastgrad, '__version__', '')}, engine: {engine}")

    loss, predict = make_loss(np)
    params, X, y = make_data()
    grad_loss = grad(loss)
    velocity = [numpy.zeros_like(p) for p in params]
    print(
        f"Training a 2-16-1 tanh network on {len(X)} points (inside the unit circle or not), "
        f"{STEPS} steps of gradient descent with momentum:"
    )
    start = time.perf_counter()
    for step in range(STEPS + 1):
        if step % EVERY == 0:
            print(f"  step {step:4d}  loss {float(loss(params, X, y)):.4f}")
        if step == STEPS:
            break
        for v, g in zip(velocity, grad_loss(params, X, y)):
            v *= MOMENTUM
            v -= LEARNING_RATE * g
        params = [p + v for p, v in zip(params, velocity)]
    elapsed = time.perf_counter() - start
    accuracy = numpy.mean((numpy.asarray(predict(params, X)) > 0) == (y > 0.5))
    print(f"Done in {elapsed:.2f} s. Training accuracy: {accuracy:.1%}")

    ours = median_call_time(grad_loss, make_data())
    theirs, why_not = autograd_median()
    short = "compiled" if fastgrad.COMPILED else "pure"
    print(f"Median time of one gradient call: fastgrad ({short}) {fmt(ours)}", end="")
    if theirs is None:
        print(f"\n{why_not}.")
    else:
        print(f", autograd {fmt(theirs)} (in a separate process): speed-up {theirs / ours:.1f}x.")
    print("(A small model; benchmarks/run.py has the full measurement.)")


if __name__ == "__main__":
    main()
