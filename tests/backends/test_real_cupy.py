"""The same checks on real CuPy arrays, on a machine with a CUDA device (skipped elsewhere).

Every rule case runs on CuPy as on the stand-in; the test fails where real CuPy gives a
wrong answer (a wrong value, a value moved to the host) for a case the stand-in passes,
and prints the cases whose outcome differs from the stand-in's (the stand-in's fidelity).
"""

import numpy as onp
import pytest

cupy = pytest.importorskip("cupy")
try:
    _DEVICES = cupy.cuda.runtime.getDeviceCount()
except Exception:  # CuPy installed without a driver or a device
    _DEVICES = 0
if not _DEVICES:
    pytest.skip("CuPy is installed but no CUDA device is available", allow_module_level=True)

import fastgrad  # noqa: E402
import fastgrad.numpy as np  # noqa: E402
import array_backends as backends  # noqa: E402
import cases  # noqa: E402
import harness  # noqa: E402


class CupyBackend(backends.Backend):
    name = "cupy"
    moves_constants = True

    def put(self, x):
        return cupy.asarray(x)

    def take(self, x):
        return cupy.asnumpy(x) if isinstance(x, cupy.ndarray) else x

    def owns(self, x):
        return isinstance(x, cupy.ndarray)


def test_cupy_is_recognised_without_registration():
    from fastgrad import _backends
    from fastgrad.extend import vspace

    x = cupy.ones((2, 3))
    assert _backends.backend_of(x).name == "cupy"
    assert isinstance(vspace(x).zeros(), cupy.ndarray)
    acc = _backends.backend_of(x).scatter_add(cupy.zeros(3), onp.array([0, 0, 2]), cupy.ones(3))
    assert cupy.asnumpy(acc).tolist() == [2.0, 0.0, 1.0]


def test_logistic_gradient_on_the_gpu():
    rs = onp.random.RandomState(0)
    X, y, w = rs.randn(1000, 5), (rs.rand(1000) < 0.5) * 1.0, rs.randn(5)

    def loss(w, X, y):
        z = X @ w
        return np.mean(np.logaddexp(0.0, z) - y * z)

    g = fastgrad.grad(loss)(cupy.asarray(w), cupy.asarray(X), cupy.asarray(y))
    assert isinstance(g, cupy.ndarray)
    onp.testing.assert_allclose(cupy.asnumpy(g), fastgrad.grad(loss)(w, X, y), rtol=1e-10)


def test_rule_cases_on_cupy_agree_with_the_stand_in():
    real, fake = CupyBackend(), backends.FAKE_CUPY
    differ, wrong = [], []
    for case in cases.all_cases():
        ours, theirs = harness.run(case, real), harness.run(case, fake)
        if ours.correct != theirs.correct:
            differ.append((case.id, ours, theirs))
        if ours.kind == "wrong" and theirs.correct:
            wrong.append((case.id, ours))
    for case_id, ours, theirs in differ:
        print("differs: %s: cupy %r, stand-in %r" % (case_id, ours, theirs))
    assert not wrong, wrong
