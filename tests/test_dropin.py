"""install_as_autograd() (SPEC §9): a program written against autograd's imports gives the
same printed output under autograd 1.9.1 and under fastgrad after the switch.

Each run is a fresh subprocess (the switch changes the import system of its process, and
must not see the real autograd imported by other tests).
"""

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.fastgrad_only

REPO_SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

# Uses autograd, autograd.numpy, autograd.extend, autograd.test_util and autograd.builtins
# the way user code does; prints values rounded to 8 significant digits (round-off may
# differ in the last bits) and the text of errors raised on purpose.
PROGRAM = textwrap.dedent("""
    import warnings
    import numpy as onp
    import autograd
    import autograd.numpy as np
    import autograd.numpy.random as npr
    from autograd import (grad, value_and_grad, elementwise_grad, jacobian, hessian, make_vjp,
                          grad_and_aux, hessian_vector_product, vector_jacobian_product,
                          holomorphic_grad, make_hvp, grad_named, deriv, make_jvp, checkpoint,
                          make_ggnvp, tensor_jacobian_product, hessian_tensor_product)
    from autograd.extend import primitive, defvjp, defjvp, defvjp_argnum, vspace, Box, VSpace
    from autograd.test_util import check_grads, combo_check
    from autograd.builtins import isinstance as ag_isinstance
    import autograd.builtins as agb
    from autograd.core import make_vjp as core_make_vjp

    def show(label, value):
        def fmt(v):
            if isinstance(v, dict):
                return "{" + ", ".join("%s: %s" % (k, fmt(v[k])) for k in sorted(v)) + "}"
            if isinstance(v, (list, tuple)):
                return type(v).__name__ + "(" + ", ".join(fmt(e) for e in v) + ")"
            a = onp.asarray(v)
            if a.dtype.kind == "c":
                return "complex:" + fmt(a.real) + "+" + fmt(a.imag) + "j"
            return repr(onp.array([float("%.8g" % e) + 0.0 for e in a.ravel()]).reshape(a.shape).tolist())
        print(label, fmt(value))

    npr.seed(0)
    x = npr.randn(4)
    W = npr.randn(3, 4)

    def f(x, W, scale=1.0):
        return np.sum(np.tanh(np.dot(W, x)) ** 2) * scale

    show("grad", grad(f)(x, W))
    show("grad W", grad(f, 1)(x, W, scale=2.0))
    show("grad tuple", grad(f, (0, 1))(x, W))
    show("value_and_grad", value_and_grad(f)(x, W))
    show("elementwise_grad", elementwise_grad(np.tanh)(x))
    show("jacobian", jacobian(lambda x: np.tanh(np.dot(W, x)))(x))
    show("hessian", hessian(f)(x, W))
    show("hvp", hessian_vector_product(f)(x, W, np.ones(4)))
    show("htp", hessian_tensor_product(f)(x, W, x))
    show("vjp", vector_jacobian_product(lambda x: np.sin(x) * x)(x, np.ones(4)))
    show("tjp", tensor_jacobian_product(lambda x: np.outer(x, x))(x, np.ones(4)))
    vjp, ans = make_vjp(lambda x: np.exp(x) / np.sum(np.exp(x)))(x)
    show("make_vjp", (vjp(np.arange(4.0)), ans))
    vjp, ans = core_make_vjp(lambda x: np.sin(x) * 2.0, x)
    show("core make_vjp", vjp(np.ones(4)))
    hvp, g = make_hvp(f)(x, W)
    show("make_hvp", (hvp(np.ones(4)), g))
    show("ggnvp", make_ggnvp(lambda x: np.sin(np.dot(W, x)))(x)(np.ones(4)))
    show("holomorphic", holomorphic_grad(lambda z: z ** 3 + np.sin(z))(1.0 + 0.5j))
    show("grad_named", grad_named(f, "W")(x, W))
    show("grad_and_aux", grad_and_aux(lambda x: (np.sum(x ** 2), np.sum(x)))(x))
    show("deriv", deriv(np.tanh)(0.3))
    show("make_jvp", make_jvp(lambda x: np.sin(x) * x)(x)(np.ones(4)))
    show("grad^4", grad(grad(grad(grad(lambda t: np.sin(t) * t))))(0.5))
    show("checkpoint", grad(lambda x: np.sum(checkpoint(lambda y: np.tanh(y) * y)(x)))(x))
    print("names", grad(f).__name__, jacobian(f, 1).__name__, hessian_vector_product(f).__name__)

    # linalg, indexing, reductions
    A = npr.randn(3, 3)
    A = np.dot(A, A.T) + 3 * np.eye(3)
    show("linalg", grad(lambda A: np.linalg.slogdet(A)[1] + np.trace(np.linalg.inv(A)))(A))
    show("eigh", grad(lambda A: np.sum(np.linalg.eigh(A)[0] ** 2))(A))
    show("indexing", grad(lambda x: np.sum(x[1:3] ** 2) + x[0] * x[-1])(x))
    show("reductions", grad(lambda m: np.mean(m, axis=0).sum() + np.max(m) + np.std(m))(W))

    # containers and autograd.builtins
    def container_loss(params):
        total = 0.0
        for k in sorted(params):
            a, b = params[k]
            total = total + np.sum(a * b)
        return total
    show("dict of tuples", grad(container_loss)({"p": (x, 2 * x), "q": (x[:2], x[2:])}))
    show("list", grad(lambda l: l[0] * np.sum(l[1]))([1.5, x]))

    def builds(x):
        t = agb.tuple([x, np.sin(x)])
        l = agb.list([t[1], 2.0 * x])
        d = agb.dict(a=l[0], b=t[0])
        assert ag_isinstance(x, np.ndarray) and ag_isinstance(t, tuple) and agb.isinstance(d, dict)
        assert agb.type(x) is onp.ndarray
        return np.sum(d["a"] * d["b"]) + np.sum(l[1])
    show("builtins", grad(builds)(x))

    # extend: a new primitive with both rules, checked by test_util
    @primitive
    def logsumexp(x):
        m = np.max(x)
        return m + np.log(np.sum(np.exp(x - m)))

    defvjp(logsumexp, lambda ans, x: lambda g: g * np.exp(x - ans))
    defjvp(logsumexp, lambda g, ans, x: np.sum(g * np.exp(x - ans)))
    show("logsumexp grad", grad(logsumexp)(x))
    show("logsumexp jvp", make_jvp(logsumexp)(x)(np.ones(4)))
    check_grads(logsumexp, modes=["rev"])(x)
    check_grads(logsumexp)(x)
    check_grads(f, (0, 1), modes=["rev"], order=2)(x, W)
    check_grads(np.sin)(x)
    combo_check(lambda a, b: np.sum(a * np.cos(b)), [0, 1])([x, 0.3], [x])
    print("checks passed")

    @primitive
    def wrong(x):
        return x ** 2
    defvjp(wrong, lambda ans, x: lambda g: g * 3 * x)
    defjvp(wrong, lambda g, ans, x: g * 3 * x)
    npr.seed(1)
    for modes in (["rev"], ["fwd"]):
        try:
            check_grads(wrong, modes=modes)(x)
        except AssertionError as e:
            print("check failure", modes, str(e).replace("\\n", " | "))

    # VSpace of the values
    print("vspace", int(vspace(x).size), vspace(W).shape, int(vspace((x, 1.0)).size))

    # errors
    try:
        grad(lambda x: x * 2.0)(x)
    except TypeError as e:
        print("error", e)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        show("independent", grad(lambda x: 3.0)(x))
    print("warning", [str(w.message) for w in caught])
""")


def _run(code, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=os.path.dirname(REPO_SRC),
    )


def _finish(proc, what):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"{what} failed:\n{err[-3000:]}"
    return out


def _fastgrad_env():
    # the fastgrad this test process imported (an installed copy carries its compiled
    # engine; the source tree of a non-editable install does not)
    import fastgrad

    where = os.path.dirname(os.path.dirname(os.path.abspath(fastgrad.__file__)))
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": where + (os.pathsep + path if path else "")}


def test_program_gives_the_same_output_under_autograd_and_fastgrad():
    pytest.importorskip("autograd")
    switch = (
        "import fastgrad\nfastgrad.install_as_autograd()\n"
        "import sys, autograd, autograd.numpy\n"
        "assert autograd is sys.modules['fastgrad'] and autograd.numpy is sys.modules['fastgrad.numpy']\n"
    )
    reference = _run(PROGRAM)
    ours = _run(switch + PROGRAM, _fastgrad_env())
    expected = _finish(reference, "the program under autograd")
    actual = _finish(ours, "the program under fastgrad")
    assert "checks passed" in expected and "check failure ['rev']" in expected
    expected_lines, actual_lines = expected.splitlines(), actual.splitlines()
    assert len(actual_lines) == len(expected_lines), (actual, expected)
    for got, want in zip(actual_lines, expected_lines):
        assert got == want


def test_modules_are_fastgrad_modules_and_registry_is_shared():
    code = textwrap.dedent("""
        import sys, fastgrad
        fastgrad.install_as_autograd()
        import autograd, autograd.numpy as anp, autograd.extend, autograd.core, autograd.builtins
        import autograd.test_util, autograd.util, autograd.wrap_util, autograd.tracer
        import autograd.differential_operators, autograd.numpy.linalg, autograd.numpy.numpy_boxes
        import fastgrad.numpy as fnp, fastgrad.extend
        for name in ["", ".numpy", ".extend", ".core", ".builtins", ".test_util", ".util",
                     ".wrap_util", ".tracer", ".differential_operators", ".numpy.linalg",
                     ".numpy.numpy_boxes"]:
            assert sys.modules["autograd" + name] is sys.modules["fastgrad" + name], name
        assert autograd.grad is fastgrad.grad and anp.sin is fnp.sin
        assert autograd.extend.primitive is fastgrad.extend.primitive
        # a rule registered through one name is seen through the other
        @autograd.extend.primitive
        def twice(x):
            return 2.0 * x
        autograd.extend.defvjp(twice, lambda ans, x: lambda g: 2.0 * g)
        assert fastgrad.core.primitive_vjps.get(twice) is not None
        print(fastgrad.grad(lambda x: twice(x) * x)(3.0))
        fastgrad.install_as_autograd()   # a second call is harmless
    """)
    out = _finish(_run(code, _fastgrad_env()), "the module check")
    assert float(out.strip()) == 12.0


def test_refuses_after_real_autograd_was_imported():
    pytest.importorskip("autograd")
    code = textwrap.dedent("""
        import autograd, fastgrad
        try:
            fastgrad.install_as_autograd()
        except RuntimeError as e:
            print("refused:", e)
    """)
    out = _finish(_run(code, _fastgrad_env()), "the refusal check")
    assert out.startswith("refused:") and "already" in out


def test_classes_report_autograds_module_names_only_under_the_switch():
    # a dispatch library picks its backend from type(x).__module__.split(".")[0]
    code = textwrap.dedent("""
        import pickle
        import fastgrad, fastgrad.numpy as fnp
        from fastgrad.extend import vspace
        def backend(x):
            return type(x).__module__.split(".")[0]
        seen = []
        fastgrad.grad(lambda x: seen.append(backend(x)) or fnp.sum(x ** 2))(fnp.ones(2))
        print("before", seen[0], backend(vspace(fnp.ones(2))), backend(vspace([1.0])))
        fastgrad.install_as_autograd()
        import autograd.numpy as np
        from autograd import grad
        from autograd.numpy.numpy_boxes import ArrayBox
        seen = []
        g = grad(lambda x: seen.append((backend(x), type(x).__module__)) or np.sum(x ** 2))(np.ones(2))
        print("after", seen[0][0], seen[0][1], backend(vspace(np.ones(2))), type(vspace([1.0])).__module__,
              type(vspace({"a": 1.0})).__module__, type(vspace(1j)).__module__)
        assert pickle.loads(pickle.dumps(ArrayBox)) is ArrayBox is fastgrad.numpy.numpy_boxes.ArrayBox
        assert list(g) == [2.0, 2.0] and isinstance(g, fnp.ndarray)
    """)
    lines = _finish(_run(code, _fastgrad_env()), "the module-name check").split("\n")
    assert lines[0] == "before fastgrad fastgrad fastgrad"
    assert lines[1] == (
        "after autograd autograd.numpy.numpy_boxes autograd autograd.builtins autograd.builtins "
        "autograd.numpy.numpy_vspaces"
    )
