"""Library code prints nothing: progress is the caller's to show (the optimizers' and the
examples' ``callback``).  Only the demo, ``python -m fastgrad`` (``__main__.py``), prints."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "fastgrad"
MODULES = sorted(p for p in SRC.rglob("*.py") if p.name != "__main__.py")


def _print_calls(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "pprint")
    ]


def test_the_scan_sees_the_library():
    assert len(MODULES) > 30 and SRC / "differential_operators.py" in MODULES
    assert _print_calls(SRC / "__main__.py"), "the demo prints: the scan must find its calls"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_module_does_not_print(path):
    assert _print_calls(path) == [], f"{path.relative_to(SRC)} calls print at lines {_print_calls(path)}"
