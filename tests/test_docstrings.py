"""Docs as a contract (issue #8): every public function and class has a docstring with an
example, every example runs and prints what it says, and the public operators carry the
signatures editors show.

The public names are those of SPEC.md §1-§7, module by module: a module's ``__all__``
where it has one, else the spec's list.  Each example runs as a doctest in an empty
namespace (so it must import what it uses, as a user copying it would), with warnings
turned into errors, and with NumPy printing scalars the NumPy 1 way (``1.0``, not
``np.float64(1.0)``) so that the same text holds for NumPy 1.x and 2.x.

A few names are implemented in the compiled engine (``fastgrad._core``, and its twin
``fastgrad._core_py``), whose docstrings cannot be changed from Python (a Cython class's
``__doc__`` is read-only).  Their examples are in the docstring of the module that
re-exports them (``fastgrad.tracer`` or ``fastgrad.core``): ENGINE_NAMES says which, and
the test requires an example line there that uses the name.
"""

import collections.abc
import contextlib
import doctest
import importlib
import inspect
import re
import sys
import typing
import warnings

import numpy
import pytest

pytestmark = pytest.mark.fastgrad_only


def _module(name):
    importlib.import_module(name)
    return sys.modules[name]  # (fastgrad.misc.flatten the attribute is the function)


def _exported(name):
    return list(_module(name).__all__)


def _has_scipy():
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    return True


# SPEC §2: the top-level functions and classes (not COMPILED / __version__), beyond those
# of differential_operators.
TOP_LEVEL = [
    "dict",
    "list",
    "tuple",
    "isinstance",
    "type",
    "primitive",
    "stop_gradient",
    "install_as_autograd",
    "set_debug",
    "recompute",
]
# SPEC §3 (plus defvjp_direct, fastgrad's fast rule form); the registries primitive_vjps,
# primitive_jvps and sparse_object_types are data, not functions.
CORE = [
    "make_vjp",
    "make_jvp",
    "backward_pass",
    "VJPNode",
    "JVPNode",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "defvjp_direct",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "def_linear",
    "translate_vjp",
    "translate_jvp",
    "add_outgrads",
    "sum_outgrads",
    "sparse_add",
    "VSpace",
    "vspace",
    "SparseBox",
    "SparseObject",
    "identity_vjp",
    "identity_jvp",
    "primitive",
    "Box",
    "Node",
    "getval",
    "isbox",
    "toposort",
    "trace",
    "func",
    "subval",
]
TRACER = ["trace", "Node", "primitive", "notrace_primitive", "register_notrace", "Box", "new_box", "isbox", "getval"]
UTIL = ["subvals", "subval", "func", "toposort", "quick_grad_check"]
WRAP_UTIL = ["unary_to_nary", "wraps", "wrap_nary_f", "get_name", "get_doc"]
TEST_UTIL = [
    "check_grads",
    "check_vjp",
    "check_jvp",
    "check_equivalent",
    "combo_check",
    "make_numerical_jvp",
    "scalar_close",
]

PUBLIC = {
    "fastgrad": [n for n in _exported("fastgrad.differential_operators") if n != "make_jvp_reversemode"] + TOP_LEVEL,
    "fastgrad.differential_operators": _exported("fastgrad.differential_operators"),
    "fastgrad.extend": _exported("fastgrad.extend"),
    "fastgrad.core": CORE,
    "fastgrad.tracer": TRACER,
    "fastgrad.util": UTIL,
    "fastgrad.wrap_util": WRAP_UTIL,
    "fastgrad.builtins": _exported("fastgrad.builtins"),
    "fastgrad.test_util": TEST_UTIL,
    "fastgrad.misc": _exported("fastgrad.misc"),
    "fastgrad.misc.flatten": _exported("fastgrad.misc.flatten"),
    "fastgrad.misc.optimizers": _exported("fastgrad.misc.optimizers"),
    "fastgrad.misc.fixed_points": _exported("fastgrad.misc.fixed_points"),
    "fastgrad.misc.tracers": _exported("fastgrad.misc.tracers"),
    # fastgrad.numpy wraps NumPy (NumPy's docstrings); these helpers are fastgrad's own.
    "fastgrad.numpy": ["make_diagonal"],
    "fastgrad.numpy.linalg": ["T", "_dot"],
}
if _has_scipy():
    PUBLIC["fastgrad.scipy.integrate"] = _exported("fastgrad.scipy.integrate")

# Implemented in the engine: the module whose docstring holds their examples.
ENGINE_NAMES = {
    "Box": "fastgrad.tracer",
    "Node": "fastgrad.tracer",
    "trace": "fastgrad.tracer",
    "new_box": "fastgrad.tracer",
    "isbox": "fastgrad.tracer",
    "getval": "fastgrad.tracer",
    "register_notrace": "fastgrad.tracer",
    "VJPNode": "fastgrad.core",
    "JVPNode": "fastgrad.core",
}
ENGINE_MODULES = ("fastgrad._core", "fastgrad._core_py")  # (the pure one's parts: fastgrad._core_*)


def _public_objects():
    """[(public names, object)] with each object once, however many names it has."""
    found = {}
    for module, names in PUBLIC.items():
        for name in names:
            obj = getattr(_module(module), name)
            found.setdefault(id(obj), ([], obj))[0].append(module + "." + name)
    return list(found.values())


OBJECTS = _public_objects()
OBJECT_IDS = [names[0] for names, _ in OBJECTS]


def _is_engine_object(obj):
    module = getattr(obj, "__module__", None) or ""
    return module in ENGINE_MODULES or module.startswith("fastgrad._core_")


# ---------------------------------------------------------------------------
# running examples

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@contextlib.contextmanager
def _example_setup():
    legacy = int(numpy.__version__.split(".")[0]) >= 2
    with numpy.printoptions(legacy="1.25") if legacy else contextlib.nullcontext(), warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def run_examples(name, obj):
    """(examples attempted, failures, report) of the examples in ``obj``'s docstring (a
    string is taken as the docstring itself), run in an empty namespace."""
    if isinstance(obj, str):
        tests = [doctest.DocTestParser().get_doctest(obj, {}, name, None, 0)]
    else:
        tests = doctest.DocTestFinder(recurse=False).find(obj, name, module=False, globs={})
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    with _example_setup():
        for test in tests:
            runner.run(test, out=report.append, clear_globs=True)
    attempted, failed = runner.tries, runner.failures
    return attempted, failed, "".join(report)


def _example_lines(docstring):
    return [line.strip() for line in (docstring or "").splitlines() if line.strip().startswith((">>>", "..."))]


# ---------------------------------------------------------------------------
# every public object has an example, and its examples work


@pytest.mark.parametrize("names,obj", OBJECTS, ids=OBJECT_IDS)
def test_public_object_has_an_example(names, obj):
    if _is_engine_object(obj):
        short = names[0].rsplit(".", 1)[1]
        assert short in ENGINE_NAMES, (
            "{} is implemented in the engine: say in ENGINE_NAMES which module's docstring holds its example".format(
                names
            )
        )
        doc = _module(ENGINE_NAMES[short]).__doc__
        uses = [line for line in _example_lines(doc) if re.search(r"\b{}\b".format(short), line)]
        assert uses, "no example using {} in the docstring of {}".format(short, ENGINE_NAMES[short])
    else:
        assert obj.__doc__ and ">>>" in obj.__doc__, "no example in the docstring of {}".format(names)


# engine objects' examples are in their module's docstring: test_module_examples_run runs them
OWN_EXAMPLES = [(names, obj) for names, obj in OBJECTS if not _is_engine_object(obj)]


@pytest.mark.parametrize("names,obj", OWN_EXAMPLES, ids=[names[0] for names, _ in OWN_EXAMPLES])
def test_examples_run(names, obj):
    attempted, failed, report = run_examples(names[0], obj)
    assert attempted > 0
    assert failed == 0, report


MODULES_WITH_EXAMPLES = sorted({m for m in PUBLIC if ">>>" in (_module(m).__doc__ or "")} | set(ENGINE_NAMES.values()))


@pytest.mark.parametrize("module", MODULES_WITH_EXAMPLES)
def test_module_examples_run(module):
    attempted, failed, report = run_examples(module, _module(module).__doc__ or "")
    assert attempted > 0
    assert failed == 0, report


def test_engine_names_are_engine_objects():
    # An entry of ENGINE_NAMES for a name that moved to Python would hide a missing example.
    for name, module in ENGINE_NAMES.items():
        assert _is_engine_object(getattr(_module(module), name)), name


def test_the_checker_reports_wrong_output_errors_and_warnings():
    def wrong():
        """
        >>> 1 + 1
        3
        """

    def raising():
        """
        >>> import fastgrad.numpy as np
        >>> from fastgrad import grad
        >>> grad(lambda x: x * np.ones(2))(1.0)
        1.0
        """

    def warning():
        """
        >>> import warnings
        >>> warnings.warn("careful")
        """

    def right():
        """
        >>> import fastgrad.numpy as np
        >>> from fastgrad import grad
        >>> grad(np.exp)(0.0)
        1.0
        """

    assert run_examples("wrong", wrong)[:2] == (1, 1)
    assert run_examples("raising", raising)[:2] == (3, 1)
    assert run_examples("warning", warning)[:2] == (2, 1)
    assert run_examples("right", right)[:2] == (3, 0)
    # the namespace is empty: an example must import what it uses
    assert run_examples("no import", ">>> grad\n")[:2] == (1, 1)


# ---------------------------------------------------------------------------
# signatures of the operators

OPERATORS = [
    "grad",
    "value_and_grad",
    "elementwise_grad",
    "deriv",
    "jacobian",
    "holomorphic_grad",
    "hessian",
    "make_hvp",
    "make_vjp",
    "make_jvp",
    "grad_and_aux",
]
OTHER_FUNCTIONS = [
    "grad_named",
    "hessian_tensor_product",
    "hessian_vector_product",
    "tensor_jacobian_product",
    "vector_jacobian_product",
    "make_ggnvp",
    "multigrad_dict",
    "checkpoint",
    "stop_gradient",
    "install_as_autograd",
    "set_debug",
]


def test_grad_signature_shows_fun_and_argnum():
    import fastgrad

    signature = inspect.signature(fastgrad.grad)
    assert list(signature.parameters) == ["fun", "argnum"]
    fun, argnum = signature.parameters.values()
    assert fun.annotation == typing.Callable[..., typing.Any]
    assert argnum.default == 0
    assert argnum.annotation == typing.Union[int, typing.Sequence[int]]
    assert signature.return_annotation == typing.Callable[..., typing.Any]
    assert typing.get_type_hints(fastgrad.grad)["argnum"] == argnum.annotation
    # the operator still takes what autograd's does
    assert fastgrad.grad(lambda a, b: a * b, 1)(2.0, 3.0) == 2.0
    assert fastgrad.grad(lambda a, b: a * b, argnum=(0, 1))(2.0, 3.0) == (3.0, 2.0)


@pytest.mark.parametrize("op", OPERATORS + ["make_jvp_reversemode"])
def test_nary_operator_signature(op):
    from fastgrad import differential_operators

    signature = inspect.signature(getattr(differential_operators, op))
    names = list(signature.parameters)
    assert names[:2] == ["fun", "argnum"], names
    assert signature.parameters["argnum"].default == 0
    assert typing.get_origin(signature.return_annotation) is collections.abc.Callable


@pytest.mark.parametrize("name", OPERATORS + OTHER_FUNCTIONS)
def test_public_function_is_annotated(name):
    import fastgrad

    signature = inspect.signature(getattr(fastgrad, name))
    missing = [p.name for p in signature.parameters.values() if p.annotation is p.empty]
    assert not missing, "{}: parameters without annotation: {}".format(name, missing)
    assert signature.return_annotation is not signature.empty, name


def test_unannotated_operator_keeps_the_generic_signature():
    from fastgrad.wrap_util import unary_to_nary

    @unary_to_nary
    def twice(fun, x):
        return 2 * fun(x)

    assert str(inspect.signature(twice)) == "(fun, argnum=0, *nary_op_args, **nary_op_kwargs)"
    assert twice(lambda a, b: a + b, 1)(1.0, 2.0) == 6.0


# The stub differential_operators.pyi is compared with the module in tests/typing/test_stubs.py
# (and by mypy.stubtest in CI).
