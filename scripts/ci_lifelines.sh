#!/usr/bin/env bash
# Downstream CI job (issue #14, item 4): lifelines 0.30.3's own test suite with `autograd` bound
# to fastgrad, failing on any test that passes under autograd 1.9.1 but not under fastgrad.
#
#   bash scripts/ci_lifelines.sh                # install, run under fastgrad and under autograd, compare
#   bash scripts/ci_lifelines.sh --fastgrad-only  # compare against the committed list instead
#                                               # (scripts/ci_lifelines/autograd_failures.txt)
#   bash scripts/ci_lifelines.sh --regenerate   # run under autograd only and rewrite that list
#   LIFELINES_TESTS="lifelines/tests/test_estimation.py" bash scripts/ci_lifelines.sh   # a subset
#   LIFELINES_VENV=/path/to/venv bash ...       # reuse a venv that has the requirements (local runs)
#
# Steps: a fresh venv with scripts/ci_lifelines/requirements.txt and fastgrad from this checkout
# (compiled, required); lifelines' test suite comes from its sdist (the wheel ships no tests);
# each run is one pytest process loading scripts/ci_lifelines/autodiff_binding.py, which binds
# `autograd` (fastgrad.install_as_autograd() before lifelines is imported), asserts the binding at
# start and end, seeds NumPy's global generator per test, and writes each test's outcome;
# compare.py then fails on regressions and prints both wall times and their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
here="$repo/scripts/ci_lifelines"

mode=both
case "${1:-}" in
    "") ;;
    --fastgrad-only) mode=fastgrad-only ;;
    --regenerate) mode=regenerate ;;
    *) echo "usage: $0 [--fastgrad-only | --regenerate]" >&2; exit 2 ;;
esac

work="$(mktemp -d)"
if [[ -n "${LIFELINES_OUT:-}" ]]; then  # keep each run's outcomes (JSON) there
    mkdir -p "$LIFELINES_OUT"
    trap 'cp "$work"/*.json "$LIFELINES_OUT"/ 2>/dev/null || true; rm -rf "$work"' EXIT
else
    trap 'rm -rf "$work"' EXIT
fi
job_start=$(date +%s)
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1 MPLBACKEND=Agg
export FASTGRAD_REQUIRE_EXTENSIONS=1
unset FASTGRAD_PURE

if [[ -n "${LIFELINES_VENV:-}" ]]; then
    # shellcheck disable=SC1091
    source "$LIFELINES_VENV/bin/activate"
else
    python3 -m venv "$work/venv"
    # shellcheck disable=SC1091
    source "$work/venv/bin/activate"
    python -m pip install --quiet --upgrade pip
    python -m pip install --quiet -r "$here/requirements.txt"
    python -m pip install --quiet "$repo"
fi
python -c "import fastgrad; assert fastgrad.COMPILED, 'compiled engine not in use'; print('fastgrad', fastgrad.__version__, 'compiled, from', fastgrad.__file__)"

# lifelines' tests, from the sdist of the version installed
lifelines_version=$(python -c "from importlib.metadata import version; print(version('lifelines'))")
python -m pip download --quiet --no-deps --no-binary :all: "lifelines==$lifelines_version" -d "$work/sdist"
tar xzf "$work/sdist/lifelines-$lifelines_version.tar.gz" -C "$work"
suite="$work/lifelines-$lifelines_version"
tests="${LIFELINES_TESTS:-lifelines/tests}"
install_seconds=$(( $(date +%s) - job_start ))
echo "setup took ${install_seconds} s"

run_suite() {  # run_suite MODE: one pytest process; outcomes to $work/MODE.json
    local m=$1 start end status=0
    echo "=== lifelines $lifelines_version test suite, autograd bound to $m ==="
    start=$(date +%s.%N)
    (cd "$suite" && LIFELINES_AUTODIFF=$m LIFELINES_RESULTS="$work/$m.json" PYTHONPATH="$here:$repo/scripts${PYTHONPATH:+:$PYTHONPATH}" \
        timeout "${LIFELINES_TIMEOUT:-3600}" python -m pytest -p autodiff_binding -p no:cacheprovider \
        -q -rfE --no-header $tests) || status=$?
    end=$(date +%s.%N)
    python -c "print('lifelines suite under $m: %.1f s (pytest exit $status)' % ($end - $start))"
    # pytest exits 1 when tests fail: that is for compare.py to judge; anything else is a broken run
    if [[ $status -ne 0 && $status -ne 1 ]]; then
        echo "pytest under $m did not complete (exit $status)" >&2
        exit 1
    fi
    [[ -f "$work/$m.json" ]] || { echo "no results from the $m run" >&2; exit 1; }
}

verdict=0
case $mode in
    regenerate)
        run_suite autograd
        python "$here/compare.py" regenerate --autograd "$work/autograd.json" --out "$here/autograd_failures.txt" \
            --lifelines "$lifelines_version" --tests "$tests"
        ;;
    fastgrad-only)
        run_suite fastgrad
        python "$here/compare.py" check --fastgrad "$work/fastgrad.json" --known "$here/autograd_failures.txt" || verdict=$?
        ;;
    both)
        run_suite fastgrad
        run_suite autograd
        python "$here/compare.py" check --fastgrad "$work/fastgrad.json" --autograd "$work/autograd.json" \
            --known "$here/autograd_failures.txt" || verdict=$?
        ;;
esac
echo "lifelines job took $(( $(date +%s) - job_start )) s in all (setup ${install_seconds} s)"
exit $verdict
