#!/usr/bin/env bash
# A library's own test suite, run on autograd (1.9.1, or the version the library requires) and
# again with `autograd` bound to fastgrad's compiled engine; fails on any test that passes on
# autograd but not on fastgrad.
#
#   bash scripts/downstream_suite.sh mici                        # its tests from its sdist (a CI stage)
#   bash scripts/downstream_suite.sh pennylane /tmp/pennylane    # from a checkout (no 0.45.1 sdist):
#       git clone --depth 1 --branch v0.45.1 https://github.com/PennyLaneAI/pennylane /tmp/pennylane
#   bash scripts/downstream_suite.sh pennylane-workflows        # tests of ours, in LIB/tests (a CI stage)
#   bash scripts/downstream_suite.sh LIB [CHECKOUT] -- PYTEST_ARGS...   # another selection
#   DOWNSTREAM_VENV=/path/to/venv bash ...    # reuse a venv (fastgrad is reinstalled into it)
#   DOWNSTREAM_WORKERS=N bash ...             # pytest-xdist workers (default 2)
#
# scripts/downstream_suite/LIB/ holds the pinned requirements (the library, its autograd and
# what its tests need), the default pytest arguments, one per line, and optionally array-ufunc.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
here="$repo/scripts/downstream_suite"
usage="usage: $0 LIBRARY [CHECKOUT] [-- PYTEST_ARGS...]"
lib="${1:?$usage}"
shift
config="$here/$lib"
[[ -f "$config/requirements.txt" && -f "$config/pytest-args" ]] || { echo "no configuration in $config" >&2; exit 2; }
checkout=""
if [[ $# -gt 0 && "$1" != "--" ]]; then
    checkout="$(cd "$1" && pwd)"
    shift
fi
if [[ $# -gt 0 ]]; then
    [[ "$1" == "--" ]] || { echo "$usage" >&2; exit 2; }
    shift
    pytest_args=("$@")
else
    mapfile -t pytest_args < "$config/pytest-args"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1 MPLBACKEND=Agg
start=$SECONDS
venv="${DOWNSTREAM_VENV:-$work/venv}"
[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
# shellcheck disable=SC1091
source "$venv/bin/activate"
python -m pip install --quiet -r "$config/requirements.txt"
python -m pip install --quiet "$repo"
# The binding is made at interpreter start, so that pytest's workers and any process pools the
# library starts (fresh interpreters) are bound too.
site=$(python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
# LIB/array-ufunc, if there, holds install_as_autograd's array_ufunc (False: autograd 1.8's
# NumPy dispatch, for a library that requires autograd<1.9)
array_ufunc="$(cat "$config/array-ufunc" 2>/dev/null || echo True)"
[[ "$array_ufunc" == True || "$array_ufunc" == False ]] || { echo "$config/array-ufunc: True or False" >&2; exit 2; }
echo "import os; os.environ.get('DOWNSTREAM_AUTODIFF') == 'fastgrad' and __import__('fastgrad').install_as_autograd(array_ufunc=$array_ufunc)" \
    > "$site/fastgrad_binding.pth"
DOWNSTREAM_AUTODIFF=fastgrad python -c "import autograd, fastgrad; assert autograd is fastgrad and fastgrad.COMPILED
from autograd.numpy.numpy_boxes import ArrayBox; assert hasattr(ArrayBox, '__array_ufunc__') == $array_ufunc"
if [[ -z "$checkout" && -d "$config/tests" ]]; then  # tests of our own, using the library
    checkout="$config"
elif [[ -z "$checkout" ]]; then  # the tests of the installed version, from its sdist
    version=$(python -c "from importlib.metadata import version; print(version('$lib'))")
    python -m pip download --quiet --no-deps --no-binary :all: "$lib==$version" -d "$work/sdist"
    tar xzf "$work/sdist/$lib-$version.tar.gz" -C "$work"
    checkout="$work/$lib-$version"
fi
[[ -d "$checkout/tests" ]] || { echo "$checkout has no tests/ directory" >&2; exit 2; }
echo "setup: $((SECONDS - start)) s"

for impl in autograd fastgrad; do
    echo "=== $lib's tests, autograd bound to $impl ==="
    t=$SECONDS
    status=0
    (cd "$checkout" && DOWNSTREAM_AUTODIFF=$impl PYTHONPATH="$here:$repo/scripts" \
        python -m pytest -n "${DOWNSTREAM_WORKERS:-2}" -p binding -p no:cacheprovider -q --no-header --color=no \
        --junitxml="$work/$impl.xml" "${pytest_args[@]}" > "$work/$impl.log" 2>&1) || status=$?
    tail -n 1 "$work/$impl.log"
    echo "$impl: $((SECONDS - t)) s (pytest exit $status)"
    if [[ $status -ne 0 && $status -ne 1 ]]; then  # (1: tests failed, for compare.py to judge)
        tail -n 30 "$work/$impl.log" >&2
        exit 1
    fi
done
python "$here/compare.py" "$work/autograd.xml" "$work/fastgrad.xml"
