#!/usr/bin/env bash
# Packaging check: fastgrad builds and installs the way users get it.
#
#   1. `python -m build` makes the sdist, then the wheel from the sdist (build's default);
#   2. `twine check --strict` passes on both (metadata, README rendering);
#   3. the sdist's file list holds every file of src/ that git tracks (the .pyx, .pxd, .pxi
#      and .h files the build needs among them) and no build product (.so, generated .c,
#      .o, build/, __pycache__); the wheel holds the five compiled modules and the typing
#      files, and no generated C.  The wheel's size is printed;
#   4. the wheel is installed into a fresh virtual environment outside the checkout, and
#      scripts/packaging_smoke.py runs there (from outside the checkout) with
#      FASTGRAD_REQUIRE_EXTENSIONS=1: real gradients against known values, every compiled
#      module loaded, fastgrad.COMPILED.  The sdist is not installed on its own: step 1
#      already built the wheel from it in an isolated environment, which is what
#      `pip install fastgrad-*.tar.gz` does (a second compile would prove nothing more).
#
# Usage: scripts/check_packaging.sh        (about 4 minutes on 2 cores: one compile)
# Environment: PYTHON=python3 (the interpreter of the fresh environments),
#              PACKAGING_KEEP=1 (keep the work directory and print its path).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
work="$(mktemp -d "${TMPDIR:-/tmp}/fastgrad-packaging.XXXXXX")"
if [[ "${PACKAGING_KEEP:-0}" == 1 ]]; then
    echo "packaging: work directory $work (kept)"
else
    trap 'rm -rf "$work"' EXIT
fi
case "$work/" in "$repo"/*) echo "packaging: the work directory must be outside the checkout" >&2; exit 2 ;; esac

die() { echo "packaging: FAILED: $*" >&2; exit 1; }
# pip names every missing local index directory of this machine's configuration: not ours
quiet_pip() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
step_start=$SECONDS
step() { echo "packaging: $* ($((SECONDS - step_start)) s so far)"; }

fresh_venv() {  # fresh_venv DIR: a new virtual environment with an up-to-date pip
    "$PYTHON" -m venv "$1"
    quiet_pip "$1/bin/python" -m pip install --quiet --upgrade pip
}

# ---- 1. build ------------------------------------------------------------------------------
fresh_venv "$work/tools"
quiet_pip "$work/tools/bin/python" -m pip install --quiet build twine
step "building the sdist and, from it, the wheel"
(cd "$repo" && "$work/tools/bin/python" -m build --outdir "$work/dist" . >"$work/build.log" 2>&1) \
    || { tail -40 "$work/build.log" >&2; die "python -m build (log above)"; }
# setuptools' deprecation notices (licence format, ...) are packaging bugs of ours; its
# other notices (blocks between "!!" lines) are shown.
if grep -n -E "DeprecationWarning|remove deprecated calls" "$work/build.log"; then
    die "the build printed deprecation warnings (above; log: $work/build.log)"
fi
grep -q -x -E "[[:space:]]*!!" "$work/build.log" && { echo "packaging: setuptools notices:"; grep -B2 -A12 -x -E "[[:space:]]*!!" "$work/build.log" | head -60; }
shopt -s nullglob
sdists=("$work"/dist/*.tar.gz) wheels=("$work"/dist/*.whl)
[[ ${#sdists[@]} == 1 && ${#wheels[@]} == 1 ]] || die "expected one sdist and one wheel in $work/dist"
sdist="${sdists[0]}" wheel="${wheels[0]}"
step "built $(basename "$sdist") and $(basename "$wheel")"

# ---- 2. metadata ---------------------------------------------------------------------------
"$work/tools/bin/python" -m twine check --strict "$sdist" "$wheel"

# ---- 3. what the archives hold -------------------------------------------------------------
"$work/tools/bin/python" - "$repo" "$sdist" "$wheel" <<'EOF'
import os, subprocess, sys, tarfile, zipfile

repo, sdist, wheel = sys.argv[1:]
with tarfile.open(sdist) as tar:
    root = os.path.commonpath(tar.getnames())
    in_sdist = {os.path.relpath(n, root) for n in tar.getnames() if tar.getmember(n).isfile()}
with zipfile.ZipFile(wheel) as whl:
    in_wheel = set(whl.namelist())
problems = []

# Every file of the package that the repository tracks is in the sdist.
tracked = subprocess.run(["git", "-C", repo, "ls-files", "src"], capture_output=True, text=True, check=True)
tracked = set(tracked.stdout.split())
if not tracked:
    problems.append("git ls-files src listed nothing: not a git checkout?")
problems += [f"sdist lacks {f}" for f in sorted(tracked - in_sdist)]
needed = sorted(f for f in tracked if f.endswith((".pyx", ".pxd", ".pxi", ".h")))
if len(needed) < 4:
    problems.append(f"expected the Cython sources and C headers among the tracked files, found {needed}")
# ... and nothing that is built: the rest is the build's own files and setuptools' metadata.
allowed = {"LICENSE", "MANIFEST.in", "PKG-INFO", "README.md", "pyproject.toml", "setup.cfg", "setup.py"}
for f in sorted(in_sdist - tracked - allowed):
    if not f.startswith("src/fastgrad.egg-info/"):
        problems.append(f"sdist ships {f}, which is not a tracked source")
for f in sorted(in_sdist):
    if f.endswith((".so", ".pyd", ".o", ".c", ".pyc")) or f.startswith("build/") or "__pycache__" in f:
        problems.append(f"sdist ships the build product {f}")

import ast  # the plain modules setup.py compiles, as _stale.COMPILED_SOURCES lists them
stale = ast.parse(open(os.path.join(repo, "src", "fastgrad", "_stale.py")).read())
listed = next(n.value for n in stale.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == "COMPILED_SOURCES")
compiled = ["fastgrad/_core"] + [name.replace(".", "/") for name in ast.literal_eval(listed)]
for module in compiled:
    if not any(n.startswith(module + ".") and n.endswith((".so", ".pyd")) for n in in_wheel):
        problems.append(f"wheel lacks the compiled module {module}")
for data in ["fastgrad/py.typed", "fastgrad/_core.pyi", "fastgrad/differential_operators.pyi",
             "fastgrad/numpy/__init__.pyi"]:
    if data not in in_wheel:
        problems.append(f"wheel lacks {data}")
problems += [f"wheel ships generated C {n}" for n in sorted(in_wheel) if n.endswith(".c")]
dist_info = os.path.basename(wheel).split("-")[0] + "-" + os.path.basename(wheel).split("-")[1] + ".dist-info/"
problems += [f"wheel ships {n}, outside the package" for n in sorted(in_wheel)
             if not (n.startswith("fastgrad/") or n.startswith(dist_info))]
if dist_info + "licenses/LICENSE" not in in_wheel:
    problems.append("wheel lacks the licence file")

if problems:
    sys.exit("packaging: FAILED:\n  " + "\n  ".join(problems))
print(f"packaging: sdist holds {len(in_sdist)} files, every tracked source ({len(needed)} Cython/C build "
      f"inputs among them) and no build product; wheel holds {len(in_wheel)} files")
EOF
wheel_bytes=$(stat -c %s "$wheel")
echo "packaging: wheel size $((wheel_bytes / 1024)) KiB ($(basename "$wheel")); sdist $(($(stat -c %s "$sdist") / 1024)) KiB"

# ---- 4. install each into a fresh environment and use it ----------------------------------
smoke() {  # smoke VENV LABEL: the smoke test, run from outside the checkout
    (cd "$work" && env -u PYTHONPATH -u FASTGRAD_PURE FASTGRAD_REQUIRE_EXTENSIONS=1 \
        "$1/bin/python" "$repo/scripts/packaging_smoke.py") || die "smoke test of the $2 install"
    # The one runtime dependency is numpy.
    extra=$("$1/bin/python" -m pip list --format=freeze --exclude pip --exclude setuptools \
        | grep -v -i -E '^(fastgrad|numpy)==' || true)
    [[ -z "$extra" ]] || die "installing the $2 brought in more than numpy: $extra"
}

step "installing the wheel into a fresh environment"
fresh_venv "$work/venv-wheel"
quiet_pip "$work/venv-wheel/bin/python" -m pip install --quiet "$wheel"
smoke "$work/venv-wheel" wheel

step "done: sdist and wheel build (the wheel from the sdist), pass twine check, hold the right files, and the wheel installs and runs"
