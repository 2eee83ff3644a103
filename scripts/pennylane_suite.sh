#!/usr/bin/env bash
# PennyLane's own test suite, on autograd 1.9.1 and with `autograd` bound to fastgrad; fails on
# any test that passes on autograd but not on fastgrad.  Not a CI stage: PennyLane publishes no
# sdist of 0.45.0, so its tests come from a checkout of its repository, which CI cannot reach.
#
#   git clone --depth 1 --branch v0.45.0 https://github.com/PennyLaneAI/pennylane /tmp/pennylane
#   bash scripts/pennylane_suite.sh /tmp/pennylane                # the autograd-marked tests (~3,700)
#   PENNYLANE_TESTS="tests/numpy tests/optimize" PENNYLANE_MARKS="not torch and not jax and not tf" \
#       bash scripts/pennylane_suite.sh /tmp/pennylane            # another selection
#   PENNYLANE_VENV=/path/to/venv bash ...                         # reuse a venv (fastgrad reinstalled)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
here="$repo/scripts/pennylane_suite"
checkout="${1:?usage: $0 PATH_TO_PENNYLANE_CHECKOUT}"
checkout="$(cd "$checkout" && pwd)"
[[ -d "$checkout/tests" ]] || { echo "$checkout has no tests/ directory" >&2; exit 2; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1 MPLBACKEND=Agg
start=$SECONDS
venv="${PENNYLANE_VENV:-$work/venv}"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet -r "$here/requirements.txt"
python -m pip install --quiet "$repo"
# The binding is made at interpreter start, so that pytest's workers and the process pools of
# PennyLane's devices (which start fresh interpreters) are bound too.
site=$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
echo 'import os; os.environ.get("PENNYLANE_AUTODIFF") == "fastgrad" and __import__("fastgrad").install_as_autograd()' \
    > "$site/fastgrad_binding.pth"
PENNYLANE_AUTODIFF=fastgrad python -c "import autograd, fastgrad; assert autograd is fastgrad and fastgrad.COMPILED"
echo "setup: $((SECONDS - start)) s"

for impl in autograd fastgrad; do
    echo "=== PennyLane's tests, autograd bound to $impl ==="
    t=$SECONDS
    status=0
    (cd "$checkout" && PENNYLANE_AUTODIFF=$impl PYTHONPATH="$here:$repo/scripts" \
        python -m pytest -n "${PENNYLANE_WORKERS:-2}" -p binding -p no:cacheprovider -q --no-header \
        -m "${PENNYLANE_MARKS:-autograd}" ${PENNYLANE_TESTS:-tests} --junitxml="$work/$impl.xml" \
        > "$work/$impl.log" 2>&1) || status=$?
    tail -n 1 "$work/$impl.log"
    echo "$impl: $((SECONDS - t)) s (pytest exit $status)"
    if [[ $status -ne 0 && $status -ne 1 ]]; then  # (1: tests failed, for compare.py to judge)
        tail -n 30 "$work/$impl.log" >&2
        exit 1
    fi
done
python "$here/compare.py" "$work/autograd.xml" "$work/fastgrad.xml"
