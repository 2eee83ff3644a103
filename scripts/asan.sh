#!/usr/bin/env bash
# Memory-safety check of fastgrad's compiled modules with AddressSanitizer, over the whole
# test suite.  (scripts/memcheck.sh does the same with valgrind, which is ~30x slower: use
# it for a few files, and this script for the whole suite.)
#
# What it does:
#   1. copies the working tree (src/, tests/, benchmarks/, examples/, scripts/, docs/,
#      setup.py, pyproject.toml, README.md) into a temporary directory, without build
#      products, so the shared (editable) install is never touched;
#   2. creates a fresh virtual environment there and installs the copy into it with its
#      test and examples extras; setup.py builds every compiled module (fastgrad._core,
#      and the plain Python modules it compiles) with FASTGRAD_SANITIZE=address: ASan at
#      -O1 with debug line info, Cython's bounds, wraparound and initialisation checks on,
#      line tracing off.
#      With ASAN_PYTHON=/path/to/python the copy is built in place instead and that
#      interpreter's own packages are used (it needs Cython, setuptools, numpy and the test
#      dependencies; no network needed);
#   3. runs pytest on the copy's tests/ with the ASan runtime preloaded into the (not
#      instrumented) interpreter, PYTHONMALLOC=malloc so that every Python object is a
#      malloc block ASan guards, and FASTGRAD_REQUIRE_EXTENSIONS=1.  A small pytest plugin
#      checks inside that run, before any test, that fastgrad and fastgrad._core come from
#      the sanitized copy, that every compiled module there is instrumented and that the
#      ASan runtime is loaded, and stops the run otherwise;
#   4. reads ASan's logs (one per process: pytest and every interpreter a test starts) and
#      lists every error report with its stacks.  A report is fastgrad's when one of its
#      stacks has a frame in fastgrad's compiled modules.
#
# Exit status: 0 = no ASan error report at all and pytest completed; 1 = ASan error reports
# with a frame in fastgrad's compiled code, or any other ASan error report (unless
# ASAN_ONLY_FASTGRAD=1, which makes those informational), or test failures with
# ASAN_STRICT_TESTS=1; 2 = setup/build problem, the sanitized build was not the one
# imported, or pytest did not complete (crash, internal error, a process ASan stopped).
# Test failures alone (pytest status 1) are reported but do not fail the run by default:
# this script looks for memory errors, the normal test run looks for wrong answers.
#
# Usage:
#   scripts/asan.sh                            # the whole test suite
#   scripts/asan.sh tests/test_engine.py -k chain   # any pytest arguments instead
#
# Environment:
#   ASAN_OUT=dir             where the logs go (default: kept in a new temporary directory)
#   ASAN_KEEP=1              keep the temporary copy (and its venv)
#   ASAN_PYTHON=python       build in place and use this interpreter's packages (no venv)
#   ASAN_ONLY_FASTGRAD=1     fail only on reports with a frame in fastgrad's compiled code
#   ASAN_STRICT_TESTS=1      also fail when a test fails under ASan
#   ASAN_HALT=1              stop each process at its first error (default: report all)
#   PYTHON=python3           the interpreter the fresh venv is made from
#
# Known limits and the workarounds in this script:
#   - libstdc++ is preloaded after the ASan runtime: without it, ASan cannot find the real
#     __cxa_throw when a C++ extension loaded later (matplotlib's ft2font) throws, and the
#     process dies in "CHECK failed ... real___cxa_throw" (google/sanitizers#934);
#   - detect_leaks=0: CPython does not free everything at exit;
#   - only fastgrad's modules are instrumented; CPython, NumPy and the rest are checked
#     through ASan's malloc/free and libc interceptors (memcpy, strlen...) only.
#
# Runtime (measured on 2 shared cores, gcc 12, CPython 3.11, Cython 3.3): the fresh venv and
# the sanitized build ~2.5 minutes (pip's cache warm), the whole suite (6558 tests) 16-17
# minutes, against ~5 natively.  Result then: zero ASan error reports, in fastgrad or
# anywhere else.
set -uo pipefail

# Everything is in main, which bash reads whole before running: the script can be edited
# (or updated by a checkout) while a long run is in progress.
main() {

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=scripts/_private_copy.sh
source "$here/_private_copy.sh"
PYTHON="${PYTHON:-python3}"

die() { echo "asan: $*" >&2; exit 2; }

command -v gcc >/dev/null || die "gcc is not installed"
libasan="$(gcc -print-file-name=libasan.so)"
[[ -f "$libasan" ]] || die "gcc has no AddressSanitizer runtime (apt-get install libasan8 or gcc)"
libstdcxx="$(gcc -print-file-name=libstdc++.so.6)"
[[ -f "$libstdcxx" ]] || libstdcxx=""
preload="$libasan${libstdcxx:+:$libstdcxx}"

if [[ $# -eq 0 ]]; then
    pytest_args=(tests)
else
    pytest_args=("$@")
fi

fg_make_workdir asan "${ASAN_OUT:-}" "${ASAN_KEEP:-0}"

# ---- 1. a private copy of the working tree ------------------------------------------------
copy="$work/repo"
fg_copy_tree "$repo" "$copy" src tests benchmarks examples scripts docs setup.py pyproject.toml README.md

# ---- 2. the sanitized build --------------------------------------------------------------
export FASTGRAD_SANITIZE=address
unset FASTGRAD_DEBUG_BUILD FASTGRAD_PURE
start=$SECONDS
if [[ -n "${ASAN_PYTHON:-}" ]]; then
    py="$(command -v "$ASAN_PYTHON")" || die "no interpreter $ASAN_PYTHON"
    "$py" -c "import Cython, setuptools, numpy, pytest" 2>/dev/null \
        || die "$ASAN_PYTHON needs Cython, setuptools, numpy and pytest"
    echo "asan: building the sanitized extensions in $copy (using $py's packages)"
    (cd "$copy" && "$py" setup.py build_ext --inplace >"$out/build.log" 2>&1) \
        || { tail -40 "$out/build.log" >&2; die "the sanitized build failed (log: $out/build.log)"; }
    export PYTHONPATH="$copy/src${PYTHONPATH:+:$PYTHONPATH}"
else
    echo "asan: a fresh virtual environment in $work/venv, with the sanitized build of the copy"
    "$PYTHON" -m venv "$work/venv" || die "cannot create a virtual environment with $PYTHON"
    py="$work/venv/bin/python"
    {
        "$py" -m pip install --upgrade pip &&
        # the build requirements of pyproject.toml, installed first: the build below runs
        # without isolation so that it sees FASTGRAD_SANITIZE and this Cython
        "$py" -m pip install "setuptools>=77" wheel "Cython>=3.0" "numpy>=1.24" &&
        (cd "$copy" && "$py" -m pip install -v --no-build-isolation ".[test,examples]")
    } >"$out/build.log" 2>&1 \
        || { tail -40 "$out/build.log" >&2; die "installing the sanitized copy failed (log: $out/build.log)"; }
    unset PYTHONPATH
fi
grep -q -- "-fsanitize=address" "$out/build.log" \
    || die "the compiler was not given -fsanitize=address: FASTGRAD_SANITIZE had no effect"
echo "asan: built and installed in $((SECONDS - start)) s"

# ---- 3. pytest with the ASan runtime -----------------------------------------------------
# The guard runs inside the pytest process, before any test.
mkdir -p "$work/plugin"
cat >"$work/plugin/asan_guard.py" <<'EOF'
"""pytest plugin of scripts/asan.sh: the run must use the sanitized build of the copy."""
import os

import pytest


def pytest_sessionstart(session):
    import fastgrad
    import fastgrad._core as core
    work = os.environ["FASTGRAD_ASAN_WORK"]
    package = os.path.dirname(os.path.realpath(fastgrad.__file__))
    compiled = sorted(os.path.join(d, f) for d, _, files in os.walk(package)
                      for f in files if f.endswith(".so"))
    problems = []
    if not fastgrad.COMPILED:
        problems.append("fastgrad did not select the compiled engine")
    if not package.startswith(work + os.sep):
        problems.append("fastgrad is imported from {}, not the sanitized copy in {}".format(
            package, work))
    if os.path.realpath(core.__file__) not in compiled:
        problems.append("fastgrad._core is {}, not a compiled module of {}".format(
            core.__file__, package))
    for path in compiled:   # every module setup.py compiles
        if b"__asan_report" not in open(path, "rb").read():
            problems.append(path + " is not built with AddressSanitizer")
    with open("/proc/self/maps") as maps:
        if "libasan" not in maps.read():
            problems.append("the ASan runtime is not loaded in the pytest process")
    if problems:
        pytest.exit("asan guard: " + "; ".join(problems), returncode=4)
    print("asan guard: fastgrad._core is", os.path.realpath(core.__file__))
    print("asan guard: {} sanitized modules: {}".format(
        len(compiled), " ".join(os.path.relpath(p, package) for p in compiled)))
EOF

asan_options="detect_leaks=0:log_path=$out/asan:exitcode=86:allocator_may_return_null=1"
asan_options+=":print_summary=1:handle_abort=1"
if [[ "${ASAN_HALT:-0}" == 1 ]]; then
    asan_options+=":halt_on_error=1"
else
    asan_options+=":halt_on_error=0"   # the build has -fsanitize-recover=address
fi
rm -f "$out"/asan.*
echo "asan: pytest ${pytest_args[*]}  (log: $out/pytest.log, ASan logs: $out/asan.<pid>)"
start=$SECONDS
(cd "$copy" && env \
    FASTGRAD_ASAN_WORK="$work" FASTGRAD_REQUIRE_EXTENSIONS=1 \
    PYTHONPATH="$work/plugin${PYTHONPATH:+:$PYTHONPATH}" PYTHONMALLOC=malloc \
    PYTHONDONTWRITEBYTECODE=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1 \
    MPLBACKEND=Agg ASAN_OPTIONS="$asan_options" LD_PRELOAD="$preload" \
    "$py" -m pytest -q -p asan_guard -p no:cacheprovider --junitxml="$out/junit.xml" \
        "${pytest_args[@]}" >"$out/pytest.log" 2>&1)
test_status=$?
elapsed=$((SECONDS - start))
tail -3 "$out/pytest.log"
echo "asan: pytest exited with status $test_status after ${elapsed} s"
grep -q "^asan guard: fastgrad._core is" "$out/pytest.log" \
    || die "the guard did not confirm the sanitized build (see $out/pytest.log)"

# ---- 4. the report -----------------------------------------------------------------------
"$py" - "$work" "$out" <<'EOF'
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET
from collections import Counter

work, out = sys.argv[1], sys.argv[2]
only_fastgrad = os.environ.get("ASAN_ONLY_FASTGRAD", "0") == "1"

ERROR = re.compile(r"^(?:==\d+==\s*)?(?:ERROR: AddressSanitizer|AddressSanitizer: CHECK failed)")
SUMMARY = re.compile(r"^SUMMARY: AddressSanitizer")
FRAME = re.compile(r"^\s+#\d+ 0x[0-9a-f]+ (?:in (?P<fn>.*?) )?(?P<where>\S+)$")
OURS = re.compile(r"(^|/)fastgrad/[^:+]*\.(c|pyx|py|so)\b")

# Reports in third-party code that are known not to be errors: (kind, a substring of one
# of the first frames of the access stack, the reason).  None so far.
KNOWN = []


def reports(path):
    """The error reports of one ASan log: lists of lines, from the ERROR line to SUMMARY."""
    current = None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if ERROR.match(line):
            if current:
                yield current
            current = [line]
        elif current is not None:
            current.append(line)
            if SUMMARY.match(line):
                yield current
                current = None
    if current:
        yield current


def stacks(report):
    """Stacks of a report (the access, then 'freed by' / 'allocated by'), as frame lists."""
    result, frames = [], None
    for line in report:
        m = FRAME.match(line)
        if m:
            if frames is None:
                frames = []
                result.append(frames)
            frames.append((m.group("fn") or "", m.group("where")))
        else:
            frames = None
    return result


def in_fastgrad(frame):
    """A frame of fastgrad's compiled modules: its source (the C file Cython generated) or,
    when not symbolized, its shared object is in the fastgrad package, or it is a function
    Cython generated for a module of the fastgrad package."""
    fn, where = frame
    if OURS.search(where.strip("()")):
        return True
    return fn.startswith("__pyx_") and "8fastgrad" in fn


def kind(report):
    m = re.search(r"AddressSanitizer: ([\w-]+)", report[0])
    return "CHECK-failed" if "CHECK failed" in report[0] else (m.group(1) if m else "?")


ours, others, known = [], [], Counter()
logs = sorted(glob.glob(os.path.join(out, "asan.*")))
warnings = Counter()
for path in logs:
    for line in open(path, errors="replace"):
        if "WARNING: AddressSanitizer" in line:
            warnings[re.sub(r"0x[0-9a-f]+|\d+", "N", line.split("WARNING: ", 1)[1].strip())] += 1
    for report in reports(path):
        frames = [f for s in stacks(report) for f in s]
        access = stacks(report)[0] if stacks(report) else []
        if any(in_fastgrad(f) for f in frames):
            ours.append((path, report))
            continue
        for k, marker, reason in KNOWN:
            if kind(report) == k and any(marker in fn + " " + w for fn, w in access[:8]):
                known[reason] += 1
                break
        else:
            others.append((path, report))


def show(path, report, limit=25):
    """A report as ASan wrote it, without its shadow-memory map, at most ``limit`` frames
    per stack."""
    print("--- " + os.path.basename(path))
    depth, in_shadow_map = 0, False
    for line in report:
        in_shadow_map = (in_shadow_map or line.startswith("Shadow bytes around")) \
            and not SUMMARY.match(line)
        depth = depth + 1 if FRAME.match(line) else 0
        if line.strip() and not in_shadow_map and depth <= limit:
            print("    " + line)


def distinct(items):
    """Reports grouped by kind and first frames, with how many times each happened."""
    groups = {}
    for path, report in items:
        s = stacks(report)
        key = (kind(report), tuple(fn for fn, _ in (s[0] if s else [])[:6]))
        groups.setdefault(key, [path, report, 0])[2] += 1
    return list(groups.values())


try:
    suite = ET.parse(os.path.join(out, "junit.xml")).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    n = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    print("asan: {tests} tests run under ASan: {failures} failed, {errors} errors, "
          "{skipped} skipped".format(**n))
except (OSError, ET.ParseError, AttributeError):
    print("asan: no test counts (pytest wrote no junit report)")
print("asan: {} ASan log(s) (one per process that reported something)".format(len(logs)))
for text, count in warnings.most_common(10):
    print("asan: warning x{}: {}".format(count, text[:160]))
for reason, count in known.items():
    print("asan: {} known third-party report(s), not counted: {}".format(count, reason))
print("asan: {} error report(s) with a frame in fastgrad's compiled code".format(len(ours)))
for path, report, count in distinct(ours)[:20]:
    print("x{}".format(count))
    show(path, report)
print("asan: {} other error report(s) (interpreter, NumPy, other libraries){}".format(
    len(others), " - informational (ASAN_ONLY_FASTGRAD=1)" if only_fastgrad and others else ""))
for path, report, count in distinct(others)[:20]:
    print("x{}".format(count))
    show(path, report)
status = 1 if ours or (others and not only_fastgrad) else 0
print("asan: RESULT: {}".format(
    "FAIL" if status else "OK, zero AddressSanitizer errors{}".format(
        " in fastgrad's compiled code" if others else "")))
sys.exit(status)
EOF
report_status=$?

fg_exit_status asan "$report_status" "$test_status" "${ASAN_STRICT_TESTS:-0}" ASan
}

main "$@"
exit $?
