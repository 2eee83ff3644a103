"""autoray's dispatch (quimb's, PennyLane's) over traced arrays, as over autograd's: its
functions applied to a box are fastgrad.numpy's, with autoray's reduced SVD and complex(re,
im); whether autoray is imported before or after fastgrad."""

import subprocess
import sys
import textwrap
import types
import warnings

import numpy as onp
import pytest

from gradcheck import check_grads

autoray = pytest.importorskip("autoray")
do = autoray.do


def _through_autoray(x):
    y = do("tensordot", x, x[::-1], axes=0) + do("stack", [x, x**2 + 1.0, do("cos", x)])
    u, s, vh = do("linalg.svd", y)  # (distinct singular values: differentiable)
    z = do("complex", do("sin", x), x**2)
    return do("sum", do("tanh", y) * 0.3) + do("sum", s**2) + do("sum", do("abs", z) ** 2) + do("trace", u @ vh)


# (autograd has no forward-mode rule for svd)
@pytest.mark.parametrize("mode", ["rev", pytest.param("fwd", marks=pytest.mark.fastgrad_only)])
def test_autoray_functions_on_a_traced_array(ag, np, mode):
    x0 = onp.array([0.4, -1.3, 0.8])
    check_grads(_through_autoray, x0, modes=(mode,), order=2)
    value = ag.make_vjp(_through_autoray)(x0)[1]
    assert value == pytest.approx(_through_autoray(x0), rel=1e-13)


def test_autoray_gives_the_reduced_svd_of_a_box(ag):
    seen = []

    def f(x):
        u, s, vh = do("linalg.svd", x)
        seen.append((u.shape, s.shape, vh.shape))
        return do("sum", s)

    x0 = onp.arange(8.0).reshape(4, 2) ** 1.5
    ag.grad(f)(x0)
    assert seen == [((4, 2), (2,), (2, 2))]


def test_autoray_results_match_autograds(ref):
    import fastgrad

    x0 = onp.array([0.4, -1.3, 0.8])
    ours = fastgrad.grad(_through_autoray)(x0)
    theirs = ref.grad(_through_autoray)(x0)
    onp.testing.assert_allclose(ours, theirs, rtol=1e-12)


@pytest.mark.fastgrad_only
def test_autoray_names_the_backend_of_a_box():
    import fastgrad

    names = []
    fastgrad.grad(lambda x: names.append(autoray.infer_backend(x)) or do("sum", x))(onp.ones(2))
    assert names == ["fastgrad.numpy"]
    assert do("sin", fastgrad.numpy.ones(2), like="fastgrad.numpy").tolist() == onp.sin(onp.ones(2)).tolist()


@pytest.mark.fastgrad_only
def test_autoray_imported_before_fastgrad():
    code = textwrap.dedent(
        """
        import autoray, numpy
        import fastgrad
        g = fastgrad.grad(lambda x: autoray.do("sum", autoray.do("exp", x)))(numpy.zeros(2))
        print(g.tolist())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[1.0,", "1.0]"]


@pytest.mark.fastgrad_only
def test_autoray_sees_autograd_under_install_as_autograd():
    # (PennyLane's dispatch names the autograd interface from autoray's backend name)
    code = textwrap.dedent(
        """
        import fastgrad
        fastgrad.install_as_autograd()
        import autograd, autoray, numpy
        names = []
        g = autograd.grad(lambda x: names.append(autoray.infer_backend(x)) or autoray.do("sum", autoray.do("sin", x)))
        print(names if g(numpy.zeros(2)).tolist() == [1.0, 1.0] else "wrong gradient")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['autograd']"


@pytest.mark.fastgrad_only
def test_an_integration_runs_once_when_its_module_is_imported(tmp_path, monkeypatch):
    from fastgrad import _backends

    name = "fastgrad_test_integration_target"
    (tmp_path / (name + ".py")).write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    calls = []
    _backends.add_integration(name, lambda module: calls.append(module.VALUE))
    try:
        assert calls == []  # (not imported yet)
        __import__(name)
        _backends._library_imported(name)  # (a second notice does nothing)
        assert calls == [1]
    finally:
        _backends._INTEGRATIONS.pop(name, None)
        _backends._INTEGRATED.discard(name)
        sys.modules.pop(name, None)


@pytest.mark.fastgrad_only
def test_an_integration_that_fails_warns_and_leaves_the_import_alone(monkeypatch):
    from fastgrad import _backends

    name = "fastgrad_test_failing_integration"
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))

    def register(module):
        raise AttributeError("module has no attribute 'register_backend'")

    try:
        with pytest.warns(RuntimeWarning, match="fastgrad cannot register with {}: module has no".format(name)):
            _backends.add_integration(name, register)
        assert name not in _backends._INTEGRATED
    finally:
        _backends._INTEGRATIONS.pop(name, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        __import__(name)


@pytest.mark.fastgrad_only
def test_an_autoray_without_backend_aliases_is_left_alone():
    # (autoray < 0.9 names backends per class only, which would outrank the module name
    # "autograd" under install_as_autograd(): PennyLane, with autoray 0.8, then failed)
    from fastgrad import _autoray

    calls = []
    old = types.SimpleNamespace(
        register_backend=lambda cls, name: calls.append(("backend", cls, name)),
        register_function=lambda backend, name, fn: calls.append(("function", backend, name)),
    )
    _autoray.register(old)
    assert calls == []
