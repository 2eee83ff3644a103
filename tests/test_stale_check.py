"""A compiled plain module whose .py was edited after the build is refused at import with a
clear error (an editable checkout would otherwise run the old build, silently)."""

import importlib.machinery
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastgrad.core

pytestmark = pytest.mark.fastgrad_only

PACKAGE = Path(fastgrad.core.__file__).parent
COMPILED = fastgrad.core.__file__.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
needs_compiled_in_place = pytest.mark.skipif(
    not COMPILED or not (PACKAGE / "core.py").exists() or not (PACKAGE / "_compiled_sources.json").exists(),
    reason="needs the plain modules compiled beside their .py, with the build's record of them",
)


def _clean_env(tmp_path):
    """Only the copy on the path (nothing of the checkout or the installed package), but the
    settings of a sanitizer run kept: a sanitized build imports only with its runtime loaded."""
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    env.update((k, v) for k, v in os.environ.items() if k in ("LD_PRELOAD", "ASAN_OPTIONS", "PYTHONMALLOC"))
    return env


def _import_from_copy(tmp_path, edit=None, drop_manifest=False):
    copy = tmp_path / "fastgrad"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.c", "*.html"))
    if edit is not None:
        with open(copy / edit, "a") as f:
            f.write("\n# an edit after the build\n")
    if drop_manifest:
        (copy / "_compiled_sources.json").unlink()
    return subprocess.run(
        [sys.executable, "-c", "import fastgrad.numpy, fastgrad.core as c; print(c.__file__)"],
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        capture_output=True,
        text=True,
    )


@needs_compiled_in_place
def test_an_unedited_build_imports(tmp_path):
    out = _import_from_copy(tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().startswith(str(tmp_path))


@needs_compiled_in_place
@pytest.mark.parametrize("edited", ["core.py", "numpy/numpy_vjps.py"])
def test_an_edited_source_beside_its_old_build_is_an_import_error(tmp_path, edited):
    out = _import_from_copy(tmp_path, edit=edited)
    assert out.returncode != 0
    module = "fastgrad." + edited[:-3].replace("/", ".")
    assert (
        "ImportError: fastgrad: {} is compiled from another version of {}".format(module, edited.rsplit("/", 1)[-1])
        in out.stderr
    ), out.stderr
    assert "rebuild" in out.stderr


@needs_compiled_in_place
def test_a_build_without_its_record_is_an_import_error(tmp_path):
    out = _import_from_copy(tmp_path, drop_manifest=True)
    assert out.returncode != 0 and "ImportError: fastgrad: " in out.stderr, out.stderr
