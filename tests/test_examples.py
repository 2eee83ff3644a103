"""The example programs of examples/: each runs with a small iteration count, writes its PNG
plot, and its loss goes down; plus a check of what each one computes that could go wrong.

The examples need matplotlib (and scikit-learn or SciPy for some): `pip install
".[examples]"`.  Without them the tests skip.  The whole file takes well under a minute.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as onp
import pytest

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.fastgrad_only  # the examples are fastgrad programs


EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# name -> (small keyword arguments for main(), modules it needs besides matplotlib)
SMALL_RUNS = {
    "logistic_regression": ({"num_iters": 40}, []),
    "mlp_digits": ({"num_iters": 60}, ["sklearn"]),
    "gaussian_process": ({"num_iters": 6}, ["scipy"]),
    "black_box_vi": ({"num_iters": 60}, []),
    "neural_ode": ({"num_iters": 12}, ["scipy"]),
    "newton_cg": ({"num_iters": 15, "dim": 10}, ["scipy"]),
    "char_rnn": ({"num_iters": 40, "hidden": 32}, []),
    # Dask in this process (no cluster): tests/backends/test_dask_cluster.py runs one
    "dask_logistic_regression": (
        {"num_iters": 4, "n_rows": 40_000, "chunk_rows": 10_000, "local_cluster": False},
        ["dask"],
    ),
}


def load_example(name):
    """The example module examples/<name>.py (examples/ is not a package)."""
    path = EXAMPLES_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"fastgrad_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_small(name, tmp_path):
    kwargs, needs = SMALL_RUNS[name]
    for module in needs:
        pytest.importorskip(module)
    plot = tmp_path / f"{name}.png"
    progress = []
    result = load_example(name).main(
        plot_path=str(plot), verbose=False, callback=lambda i, loss: progress.append((i, loss)), **kwargs
    )
    assert plot.read_bytes()[:8] == PNG_MAGIC, f"{name} did not write a PNG to {plot}"
    assert plot.stat().st_size > 10_000, "suspiciously small plot"
    assert_progress_reported(progress, result["losses"])
    return result


def assert_progress_reported(progress, losses):
    """The callback saw every iteration, in order, with the loss the example recorded."""
    steps = [i for i, _ in progress]
    assert len(progress) >= 3 and steps == sorted(set(steps)), steps
    assert steps[-1] - steps[0] == len(steps) - 1, "an iteration was not reported"
    reported = [loss for _, loss in progress]
    assert all(loss in losses for loss in reported), (reported, losses)


def assert_loss_decreased(losses):
    losses = onp.asarray(losses, dtype=float)
    assert len(losses) >= 3 and onp.all(onp.isfinite(losses)), losses
    k = max(1, len(losses) // 5)  # averages: minibatch losses are noisy
    assert losses[-k:].mean() < losses[:k].mean(), losses
    assert losses[-1] < losses[0], losses


def central_difference_grad(f, x, eps=1e-6):
    return onp.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in onp.eye(len(x))])


def test_every_example_is_covered():
    scripts = {p.stem for p in EXAMPLES_DIR.glob("*.py") if not p.stem.startswith("_")}
    assert len(scripts) >= 8
    assert scripts == set(SMALL_RUNS) | {"tanh_derivatives"}


def test_dask_logistic_regression(tmp_path):
    result = run_small("dask_logistic_regression", tmp_path)
    assert_loss_decreased(result["losses"])
    assert result["gradient_check"] <= 1e-10  # fastgrad's first gradient vs the hand-written one


def test_logistic_regression(tmp_path):
    result = run_small("logistic_regression", tmp_path)
    assert_loss_decreased(result["losses"])
    assert result["accuracy"] > 0.6  # two balanced classes: chance is 0.5


def test_mlp_digits(tmp_path):
    result = run_small("mlp_digits", tmp_path)
    assert_loss_decreased(result["losses"])
    assert result["test_accuracy"] > 0.5  # ten classes: chance is 0.1


def test_gaussian_process(tmp_path):
    result = run_small("gaussian_process", tmp_path)
    assert_loss_decreased(result["losses"])
    # The gradient handed to L-BFGS-B (through cholesky and cho_solve) is the true one.
    from fastgrad import grad

    gp = load_example("gaussian_process")
    x, y = gp.make_data(onp.random.RandomState(3), n=12)

    def nll(theta):
        return gp.negative_log_marginal_likelihood(theta, x, y)

    theta = onp.array([0.2, -0.5, -1.0, 0.3])
    onp.testing.assert_allclose(grad(nll)(theta), central_difference_grad(nll, theta), rtol=1e-5, atol=1e-7)


def test_black_box_vi(tmp_path):
    result = run_small("black_box_vi", tmp_path)
    assert_loss_decreased(result["losses"])


def test_neural_ode(tmp_path):
    result = run_small("neural_ode", tmp_path)
    assert_loss_decreased(result["losses"])


def test_newton_cg(tmp_path):
    result = run_small("newton_cg", tmp_path)
    assert_loss_decreased(result["losses"])
    assert result["hvp_error"] < 1e-8  # H v agrees with the Hessian built column by column
    # Newton-CG uses curvature: after the same number of iterations it is ahead of L-BFGS-B.
    newton, lbfgs = result["losses"], result["lbfgs_losses"]
    same_step = min(len(newton), len(lbfgs)) - 1
    assert newton[same_step] < lbfgs[same_step]


def test_char_rnn(tmp_path):
    result = run_small("char_rnn", tmp_path)
    assert_loss_decreased(result["losses"])
    text = (EXAMPLES_DIR / "data" / "lighthouse.txt").read_text(encoding="utf-8")
    sample = result["sample"]
    assert len(sample) == len("The keeper ") + 300
    assert set(sample) <= set(text)


def test_tanh_derivatives(tmp_path):
    plot = tmp_path / "tanh.png"
    progress = []
    result = load_example("tanh_derivatives").main(
        order=6, plot_path=str(plot), verbose=False, callback=lambda k, v: progress.append((k, v))
    )
    assert plot.read_bytes()[:8] == PNG_MAGIC
    x, values = result["x"], result["derivatives"]
    assert len(values) == 7
    assert [k for k, _ in progress] == [1, 2, 3, 4, 5, 6]
    assert all(v is values[k] for k, v in progress)
    assert max(result["closed_form_errors"]) < 1e-12
    # tanh is odd, so its derivatives alternate between even and odd functions ...
    for k, v in enumerate(values):
        onp.testing.assert_allclose(v[::-1], (-1) ** (k + 1) * v, atol=1e-9)
    # ... and each one is the slope of the one before (central differences on the grid).
    h = x[1] - x[0]
    for lower, higher in zip(values[3:], values[4:]):
        slope = (lower[2:] - lower[:-2]) / (2 * h)
        assert onp.max(onp.abs(slope - higher[1:-1])) < 0.01 * onp.max(onp.abs(higher))


def test_examples_print_nothing_when_quiet(tmp_path, capsys):
    load_example("logistic_regression").main(num_iters=3, plot_path=str(tmp_path / "q.png"), verbose=False)
    assert capsys.readouterr().out == ""


def test_example_runs_as_a_script(tmp_path):
    plot = tmp_path / "script.png"
    env = dict(os.environ, MPLBACKEND="Agg")
    out = subprocess.run(
        [sys.executable, str(EXAMPLES_DIR / "logistic_regression.py"), "--iters", "5", "--plot", str(plot)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "final loss" in out.stdout
    assert plot.read_bytes()[:8] == PNG_MAGIC
