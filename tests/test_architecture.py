"""The shape of the package: one seam between the engine and the layers above, no module
that patches another, no import cycle, every module importable alone.

These are checks of the source (read with ``ast``) and of fresh interpreters, so that a
change that breaks the layering fails here rather than in a reader's head.
"""

import ast
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import fastgrad
from fastgrad import _core_py

try:
    from fastgrad import _core
except ImportError:  # the compiled engine is optional unless FASTGRAD_REQUIRE_EXTENSIONS=1
    _core = None

pytestmark = pytest.mark.fastgrad_only

PACKAGE = Path(fastgrad.__file__).resolve().parent
ENGINES = [
    pytest.param(_core_py, id="pure"),
    pytest.param(_core, id="compiled", marks=pytest.mark.skipif(_core is None, reason="compiled engine not built")),
]


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
ENGINE_SOURCES = sorted(PACKAGE.glob("_core*.py*")) + sorted(PACKAGE.glob("_core*.pxi"))
ENGINE_SOURCES += [PACKAGE / "_scalar_kernels.pxi"]


# ---- the seam ------------------------------------------------------------------------------


def test_the_engine_is_configured_by_one_binding_entry():
    found = []
    for path in ENGINE_SOURCES:
        for line in path.read_text().splitlines():
            if re.match(r"\s*(c?p?def)\s+(set_\w+|bind)\s*\(", line):
                found.append((path.name, line.split("(")[0].split()[-1]))
    assert sorted(found) == [("_core.pyi", "bind"), ("_core_seam.pxi", "bind"), ("_core_seam.py", "bind")], found


@pytest.mark.parametrize("engine", ENGINES)
def test_bind_rejects_unknown_entries_and_bad_values_and_changes_nothing(engine):
    def add(prev, owned, g):
        return g, False

    before = engine.bind()
    assert before == {}
    current = engine.bind(generic_add=add)["generic_add"]
    try:
        with pytest.raises(TypeError, match=r"bind: unknown entry 'generic_sum' \(the entries are generic_add, "):
            engine.bind(generic_add=current, generic_sum=add)
        with pytest.raises(TypeError, match="hooks must be a Hooks"):
            engine.bind(generic_add=current, hooks=object())
        with pytest.raises(TypeError, match="box_operators maps the operator names add, sub"):
            engine.bind(box_operators={"plus": (add, add)})
        with pytest.raises(TypeError, match="the values of box_operators are pairs"):
            engine.bind(box_operators={"add": add})
        with pytest.raises(TypeError, match="sparse_type must be a type or None"):
            engine.bind(sparse_type=3)
        with pytest.raises(TypeError, match="generic_add must be callable or None"):
            engine.bind(generic_add=3)
        assert engine.bind(generic_add=add)["generic_add"] is add  # (none of the above took effect)
    finally:
        engine.bind(generic_add=current)


@pytest.mark.parametrize("engine", ENGINES)
def test_bind_returns_what_it_replaced(engine):
    hooks = engine.Hooks()
    assert hooks.debug is None and hooks.record_replay is None
    previous = engine.bind(hooks=hooks, box_fast_types=[float])
    try:
        assert type(previous["hooks"]) is engine.Hooks and previous["hooks"] is not hooks
        again = engine.bind(hooks=previous["hooks"], box_fast_types=previous["box_fast_types"])
        assert again == {"hooks": hooks, "box_fast_types": frozenset([float])}
    finally:
        engine.bind(**previous)


@pytest.mark.skipif(_core is None, reason="compiled engine not built")
def test_scalar_kernel_tables_are_checked_before_anything_changes():
    from fastgrad.core import primitive_vjps
    from fastgrad.numpy import numpy_wrapper as anp

    with pytest.raises(ValueError, match="scalar_kernels maps primitives"):
        _core.bind(scalar_kernels={anp.sin: ("no-such-kernel", False)})
    with pytest.raises(ValueError, match="scalar_vjps maps"):
        _core.bind(scalar_vjps={(primitive_vjps[anp.sin], 1): ("g*cos(x)", False)})


# Functions and classes of the pure engine that the compiled one has no counterpart for, or
# has elsewhere: the operator methods of a Python class; the object holding what is bound
# (C variables in the compiled engine); the kernel names (beside the kernels, in
# _scalar_kernels.pxi); the wrapper that makes RuleTable's methods count (written out, method
# by method, in a cdef class).
PURE_ONLY = {
    "_core_boxes.py": {"_binop_methods"},
    "_core_seam.py": {"_Bound", "scalar_kernel_names"},
    "_core_rules.py": {"_counted"},
}
_CYTHON_DEFINITION = re.compile(r"(?:cdef|cpdef|def|class)\s+(?:class\s+)?(?:inline\s+)?(?:[\w.]+\**\s+)*(\w+)\s*[(:]")


def _engine_pairs():
    pure = sorted(p.name for p in PACKAGE.glob("_core_*.py") if p.name != "_core_py.py")
    return [("_core_py.py", "_core.pyx")] + [(name, name[:-3] + ".pxi") for name in pure]


def test_the_two_engines_are_the_same_files_in_the_same_order():
    pure = [name[:-3] for name, _ in _engine_pairs()[1:]]
    assert sorted(p.stem for p in PACKAGE.glob("_core_*.pxi")) == sorted(pure)
    imported = [module for level, module, names in _imports(PACKAGE / "_core_py.py") if level == 1]
    included = re.findall(r'^include "(_core_\w+)\.pxi"', (PACKAGE / "_core.pyx").read_text(), re.M)
    assert list(dict.fromkeys(imported)) == included == [m for m in dict.fromkeys(imported) if m in pure]


@pytest.mark.parametrize("pure_file,compiled_file", _engine_pairs())
def test_each_pure_module_and_its_compiled_mirror_define_the_same_things_in_order(pure_file, compiled_file):
    body = ast.parse((PACKAGE / pure_file).read_text()).body
    pure = [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    pure = [n for n in pure if n not in PURE_ONLY.get(pure_file, ())]
    compiled = [
        m.group(1) for m in map(_CYTHON_DEFINITION.match, (PACKAGE / compiled_file).read_text().splitlines()) if m
    ]
    assert set(pure) <= set(compiled), set(pure) - set(compiled)
    assert pure == [n for n in compiled if n in pure]


def _imports(path):
    """(level, module, names) of every import statement in ``path`` (anywhere in it)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "", tuple(alias.name for alias in node.names)))
    return found


def test_the_engine_imports_nothing_above_it():
    allowed_top = {"gc", "itertools", "os", "threading", "types", "warnings", "numpy"}
    for path in sorted(PACKAGE.glob("_core*.py")):
        for level, module, names in _imports(path):
            if level == 0:
                assert module.split(".")[0] in allowed_top, (path.name, module)
            else:
                assert level == 1 and module.startswith("_core"), (path.name, module, names)
    for path in [PACKAGE / "_core.pyx"] + sorted(PACKAGE.glob("_core*.pxi")):
        for line in path.read_text().splitlines():
            words = line.split()
            if words[:1] in (["import"], ["cimport"]) or words[:1] == ["from"] and "import" in words[2:3]:
                assert words[1].split(".")[0] in {
                    "cython",
                    "cpython",
                    "libc",
                    "numpy",
                    "operator",
                    "os",
                    "threading",
                    "types",
                    "warnings",
                }, line


# ---- no module patches another, no import cycle ----------------------------------------------


def _resolve(importer, level, module):
    """The absolute name of what a (level, module) import names, from module ``importer``."""
    if level == 0:
        return module
    package = importer if MODULES[importer].name == "__init__.py" else importer.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return package + ("." + module if module else "")


def _imported_modules(name):
    """The fastgrad modules that module ``name`` imports (anywhere in it, lazily too)."""
    found = set()
    for level, module, names in _imports(MODULES[name]):
        target = _resolve(name, level, module)
        if target in MODULES:
            found.add(target)
        for n in names:  # ``from package import submodule``
            if target + "." + n in MODULES:
                found.add(target + "." + n)
    return found


def _module_aliases(name):
    """Names that module ``name`` binds to fastgrad modules at its top level."""
    aliases = set()
    for node in ast.parse(MODULES[name].read_text()).body:
        if isinstance(node, ast.ImportFrom):
            target = _resolve(name, node.level, node.module or "")
            for alias in node.names:
                if target + "." + alias.name in MODULES:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in MODULES or alias.name.split(".")[0] in ("numpy", "scipy"):
                    aliases.add(alias.asname or alias.name.split(".")[0])
    return aliases


def _top_level_statements(body):
    """The statements that run at import: not inside functions or classes."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            yield from _top_level_statements(getattr(node, field, []) or [])


def test_no_module_assigns_into_another_modules_attributes():
    offences = []
    for name in MODULES:
        aliases = _module_aliases(name) | {"sys", "builtins"}
        for node in _top_level_statements(ast.parse(MODULES[name].read_text()).body):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value
                if isinstance(call.func, ast.Name) and call.func.id in ("setattr", "delattr") and call.args:
                    targets = [ast.Attribute(value=call.args[0], attr="?")]
            for target in targets:
                while isinstance(target, ast.Attribute):  # module.attr = ..., module.a.b = ...
                    target = target.value
                    if isinstance(target, ast.Name) and target.id in aliases:
                        offences.append("{}:{}: {}".format(name, node.lineno, ast.unparse(node)[:80]))
    assert not offences, "\n".join(offences)


def _cycles():
    graph = {}
    for name in MODULES:
        ancestors = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
        graph[name] = sorted(_imported_modules(name) - ancestors - {name})  # (a parent is always imported first)
    cycles, state = [], {}

    def visit(start):
        stack = [(start, iter(graph[start]))]
        path, state[start] = [start], "open"
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = "done"
            elif state.get(child) == "open":
                cycles.append(path[path.index(child) :] + [child])
            elif child not in state:
                state[child] = "open"
                path.append(child)
                stack.append((child, iter(graph[child])))

    for name in graph:
        if name not in state:
            visit(name)
    return cycles


def test_no_import_cycle():
    assert _cycles() == [], "import cycles: " + "; ".join(" -> ".join(c) for c in _cycles())


def _import_alone(name):
    code = "import importlib, warnings; warnings.simplefilter('error'); importlib.import_module({!r})".format(name)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    return name, proc.returncode, proc.stderr[-2000:]


@pytest.mark.slow
def test_every_module_imports_alone_in_a_fresh_interpreter():
    # (with the engine this process uses: FASTGRAD_PURE=1 passes on to the interpreters)
    names = [n for n in MODULES if n != "fastgrad.__main__"]
    if not _has_scipy():
        names = [n for n in names if not n.startswith("fastgrad.scipy")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [r for r in pool.map(_import_alone, names) if r[1] != 0]
    assert not failures, "\n\n".join("{} (exit {}):\n{}".format(*f) for f in failures)


def _has_scipy():
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    return True
