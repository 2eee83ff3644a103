#!/usr/bin/env bash
# The whole test suite on the oldest NumPy fastgrad supports (the lower bound of its numpy
# requirement in pyproject.toml), compiled engine required, in a venv of its own.  fastgrad
# differentiates what the installed NumPy has, and NumPy 1 differs from NumPy 2 in its
# namespace (no vecdot, cumulative_sum...; product, trapz, msort... instead), in its casting
# (by value: a float32 scalar with a Python float is float64) and in some results (cond of a
# complex matrix is complex); tests of what only a newer NumPy has skip, naming the version.
#
#   bash scripts/ci_oldest_numpy.sh [PYTEST_ARGS...]     (default: -q -n 2)
set -euo pipefail
cd "$(dirname "$0")/.."
oldest=$(python3 - <<'PY'
import re, tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(next(re.fullmatch(r"numpy>=(\d+\.\d+)", d).group(1) for d in deps if d.startswith("numpy")))
PY
)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
# shellcheck disable=SC1091
source "$work/venv/bin/activate"
echo "numpy==$oldest.*" > "$work/constraints.txt"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -c "$work/constraints.txt" ".[test]"
python -c "import numpy; print('NumPy', numpy.__version__)"
export FASTGRAD_REQUIRE_EXTENSIONS=1
if [[ $# -eq 0 ]]; then set -- -q -n 2; fi
python -m pytest "$@"
python -c "import fastgrad; assert fastgrad.COMPILED, 'compiled engine not in use'"
