#!/usr/bin/env bash
# Downstream CI job: autograd's own test suite (from the sdist of the autograd version installed,
# 1.9.1) run three times in the current environment: on the real autograd (the suite must pass
# there, or this environment cannot judge), then with `autograd` bound to fastgrad's compiled
# engine and to its pure engine.  Under fastgrad every test must pass except those listed in
# scripts/ci_autograd_suite/differences.txt (intentional differences), which must still fail.
#
#   bash scripts/ci_autograd_suite.sh          # needs fastgrad and autograd installed (the test extra)
#   AUTOGRAD_SUITE_TESTS="tests/test_systematic.py" bash scripts/ci_autograd_suite.sh   # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
here="$repo/scripts/ci_autograd_suite"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1

# The suite from the sdist (the wheel ships no tests), in a directory of its own: not beside
# autograd's sources (which `import autograd` would find first) nor its pyproject.toml (whose
# pytest options ask for pytest-cov).
version=$(python -c "from importlib.metadata import version; print(version('autograd'))")
python -m pip download --quiet --no-deps --no-binary :all: "autograd==$version" -d "$work/sdist"
tar xzf "$work/sdist/autograd-$version.tar.gz" -C "$work"
mkdir "$work/suite"
mv "$work/autograd-$version/tests" "$work/suite/tests"
printf '[pytest]\n' > "$work/suite/pytest.ini"
tests="${AUTOGRAD_SUITE_TESTS:-tests}"

run_suite() {  # run_suite IMPL [ENV=VALUE ...]: one pytest process; fails the job on any failure
    local impl=$1 start
    shift
    echo "=== autograd $version's test suite, autograd bound to $impl ${*:-} ==="
    start=$SECONDS
    (cd "$work/suite" && env "$@" AUTOGRAD_SUITE_IMPL="$impl" AUTOGRAD_SUITE_DIFFERENCES="$here/differences.txt" \
        PYTHONPATH="$here:$repo/scripts${PYTHONPATH:+:$PYTHONPATH}" \
        python -m pytest -p suite_binding -p no:cacheprovider -q -rfEX --no-header --disable-warnings $tests)
    echo "autograd's suite on $impl ${*:-}: $((SECONDS - start)) s"
}

run_suite autograd
run_suite fastgrad FASTGRAD_REQUIRE_EXTENSIONS=1
run_suite fastgrad FASTGRAD_PURE=1 FASTGRAD_REQUIRE_EXTENSIONS=0
