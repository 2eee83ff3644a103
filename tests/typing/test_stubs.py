"""The type stubs fastgrad ships agree with the modules, and the typed user program runs.

mypy itself runs in CI (.ci/run: ``mypy`` on typed_user_program.py, strict, and
``python -m mypy.stubtest fastgrad.differential_operators``); these checks need no mypy and
run with the test suite, so a stub that drifts from its module fails here first.
"""

import ast
import importlib.util
import inspect
from pathlib import Path

import numpy
import pytest

from numpy_versions import needs_numpy

pytestmark = pytest.mark.fastgrad_only  # fastgrad's own stubs

HERE = Path(__file__).resolve().parent


def _stub(module):
    return ast.parse(Path(module.__file__).with_suffix(".pyi").read_text(encoding="utf-8"))


def _overloads(tree):
    """name -> the FunctionDef nodes (one per overload) of the stub's module-level functions."""
    functions = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions.setdefault(node.name, []).append(node)
    return functions


def _exported(tree):
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "__all__":
            return ast.literal_eval(node.value)
    return None


def test_typed_user_program_runs(capsys):
    spec = importlib.util.spec_from_file_location("typed_user_program", HERE / "typed_user_program.py")
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    program.main()  # asserts its gradients against closed forms


def test_operator_stub_has_the_module_parameters():
    from fastgrad import differential_operators as module

    tree = _stub(module)
    functions = _overloads(tree)
    assert _exported(tree) == module.__all__
    assert set(functions) == set(module.__all__)
    for name, overloads in functions.items():
        runtime = inspect.signature(getattr(module, name)).parameters
        for node in overloads:
            args = node.args
            assert not (args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs), name
            assert [a.arg for a in args.args] == list(runtime), name
            defaults = [None] * (len(args.args) - len(args.defaults)) + args.defaults
            for arg, default in zip(args.args, defaults):
                param = runtime[arg.arg]
                assert param.kind is param.POSITIONAL_OR_KEYWORD, (name, arg.arg)
                if default is None:
                    continue  # an overload may require what the function defaults (argnum: int)
                assert param.default is not param.empty, (name, arg.arg)
                if not (isinstance(default, ast.Constant) and default.value is Ellipsis):
                    assert ast.literal_eval(default) == param.default, (name, arg.arg)
        # ... and the default is usable: some overload accepts the call without it.
        for param in runtime.values():
            if param.default is not param.empty:
                position = list(runtime).index(param.name)
                assert any(len(n.args.args) - len(n.args.defaults) <= position for n in overloads), (name, param)


def test_overloads_of_an_operator_share_its_decorator():
    from fastgrad import differential_operators as module

    for name, overloads in _overloads(_stub(module)).items():
        decorated = [any(getattr(d, "id", None) == "overload" for d in n.decorator_list) for n in overloads]
        assert all(decorated) if len(overloads) > 1 else not any(decorated), name


# Names numpy's star import brings that fastgrad.numpy does not have: non-callables (index
# helpers) and submodules.  The stub's header lists them; a new one must be added there.
NOT_IN_FASTGRAD_NUMPY = {"s_", "index_exp", "mgrid", "ogrid", "char", "core", "ctypeslib", "emath", "f2py", "lib"}
NOT_IN_FASTGRAD_NUMPY |= {"ma", "polynomial", "rec", "strings", "test", "__array_namespace_info__"}


STUBS_NUMPY = needs_numpy((2, 0))  # the stubs describe fastgrad.numpy over NumPy 2's namespace


@STUBS_NUMPY
def test_numpy_stub_claims_only_what_fastgrad_numpy_has():
    import fastgrad.numpy as fnp

    tree = _stub(fnp)
    header = Path(fnp.__file__).with_suffix(".pyi").read_text(encoding="utf-8")
    # (private names are not mirrored: NumPy 2.0 lists _get_promotion_state... in __all__)
    missing = {n for n in numpy.__all__ if not hasattr(fnp, n) and not (n.startswith("_") and not n.startswith("__"))}
    assert missing <= NOT_IN_FASTGRAD_NUMPY, sorted(missing - NOT_IN_FASTGRAD_NUMPY)
    for name in sorted(missing - {"__array_namespace_info__"}):
        assert f" {name}" in header, f"the header of fastgrad/numpy/__init__.pyi does not name {name}"
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module is None:  # from . import submodule
            for alias in node.names:
                assert inspect.ismodule(getattr(fnp, alias.name)), alias.name
        if isinstance(node, ast.FunctionDef):
            runtime = inspect.signature(getattr(fnp, node.name)).parameters
            assert [a.arg for a in node.args.args] == list(runtime), node.name


@STUBS_NUMPY
def test_linalg_and_fft_stubs_claim_numpys_names_and_fastgrads_helpers():
    import numpy.fft
    import numpy.linalg

    import fastgrad.numpy.fft as ffft
    import fastgrad.numpy.linalg as flinalg

    assert set(ffft.__all__) == set(numpy.fft.__all__)
    assert set(flinalg.__all__) == set(numpy.linalg.__all__) | {"T"}
    for name, node in _overloads(_stub(flinalg)).items():
        runtime = inspect.signature(getattr(flinalg, name)).parameters
        assert [a.arg for a in node[0].args.args] == list(runtime), name
