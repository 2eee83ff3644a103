#!/usr/bin/env bash
# Memory-safety check of fastgrad's compiled engine under valgrind memcheck.
#
# For the WHOLE test suite use scripts/asan.sh (AddressSanitizer, run by CI): valgrind is
# 30-50x slower than a native run, so this script is for a few files (the default subset
# below, or any pytest arguments) and for what ASan does not see: reads of uninitialised
# memory, and bad accesses inside CPython or NumPy code (not instrumented by ASan).
#
# What it does:
#   1. copies the working tree (src/, tests/, benchmarks/, setup.py, pyproject.toml) into a
#      temporary directory, without build products, so the shared (editable) install is
#      never touched;
#   2. builds a debug copy of the extension there: FASTGRAD_DEBUG_BUILD=1 switches setup.py
#      to bounds checks, wraparound and initialisation checks, line tracing, -O0 -g;
#   3. runs pytest on that copy under valgrind memcheck, with PYTHONMALLOC=malloc (so every
#      Python object is a malloc block valgrind can see) and Python's suppressions;
#   4. reads valgrind's XML report and lists every error (invalid read/write, use of
#      uninitialised memory, invalid/mismatched free, overlapping copy...) attributed to
#      fastgrad's compiled code (_core, and any other module setup.py compiles): the
#      first frame of the error's stack that is not in the interpreter or libc is in one
#      of them (and no interpreted Python frame comes before it).
#   Exit status: 0 = no memcheck error in fastgrad and pytest did not crash; 1 = memcheck
#   errors attributed to fastgrad (or, with MEMCHECK_STRICT=1, any memcheck error at all);
#   2 = setup/build problem or pytest crashed / errored outside of test failures.
#   Test failures under valgrind (pytest exit status 1) are reported, and fail the run only
#   with MEMCHECK_STRICT_TESTS=1: some tests are sensitive to the ~50x slowdown.
#
# Usage:
#   scripts/memcheck.sh                 # the engine, workload, memory and reliability tests
#   scripts/memcheck.sh --all           # the whole test suite
#   scripts/memcheck.sh tests/test_engine.py -k chain   # any pytest arguments
#
# Environment:
#   MEMCHECK_OUT=dir            where the logs go (default: a new temporary directory)
#   MEMCHECK_KEEP=1             keep the temporary copy of the repository
#   MEMCHECK_LEAKS=1            also run the leak checker at exit and report definitely-lost
#                               blocks allocated with _core on the stack (informational:
#                               CPython does not free everything at exit)
#   MEMCHECK_TRACK_ORIGINS=1    --track-origins=yes (about twice as slow)
#   MEMCHECK_STRICT=1           fail on any memcheck error, not only fastgrad's
#   MEMCHECK_STRICT_TESTS=1     fail if a test fails under valgrind
#   FASTGRAD_FUZZ_EXAMPLES=n    programs run by tests/test_fuzz.py (this script's default: 100)
#   FASTGRAD_LEAK_CALLS=n       repeated calls in tests/test_leaks.py (default here: 200)
#   FASTGRAD_THREAD_GRADS=n     gradients per thread in tests/test_threads_load.py (here: 50)
#   PYTHON=python3              the interpreter (needs numpy, Cython, setuptools, pytest,
#                               hypothesis; autograd optional)
#
# Runtime (measured on 2 shared cores, valgrind 3.19, CPython 3.11, Cython 3.3): the debug
# build takes ~20 s; the default subset ~70 minutes (test_engine + test_workloads +
# test_memory ~50 min, the five reliability test files ~20 min with the lowered counts
# below); --all several hours (the suite takes ~5 min natively, memcheck is 30-50x slower).
# Run a single file, or add -k, while iterating.
set -uo pipefail

# Everything is in main, which bash reads whole before running: the script can be edited
# (or updated by a checkout) while a long run is in progress.
main() {

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
# shellcheck source=scripts/_private_copy.sh
source "$here/_private_copy.sh"
PYTHON="${PYTHON:-python3}"

die() { echo "memcheck: $*" >&2; exit 2; }

command -v valgrind >/dev/null || die "valgrind is not installed (apt-get install valgrind)"
"$PYTHON" -c "import Cython, setuptools, numpy, pytest" 2>/dev/null \
    || die "$PYTHON needs Cython, setuptools, numpy and pytest"
# The interpreter binary itself (not a launcher script such as a pyenv shim, which valgrind
# would trace instead of Python).
python_exe="$("$PYTHON" -c "import os, sys; print(os.path.realpath(sys.executable))")"

default_tests=(tests/test_engine.py tests/test_workloads.py tests/test_memory.py
               tests/test_leaks.py tests/test_faults.py tests/test_bad_input.py
               tests/test_fuzz.py tests/test_threads_load.py)
if [[ $# -eq 0 ]]; then
    pytest_args=()
    for t in "${default_tests[@]}"; do
        [[ -f "$repo/$t" ]] && pytest_args+=("$t")
    done
elif [[ "$1" == "--all" ]]; then
    shift
    pytest_args=(tests "$@")
else
    pytest_args=("$@")
fi

fg_make_workdir memcheck "${MEMCHECK_OUT:-}" "${MEMCHECK_KEEP:-0}"

# ---- 1. a private copy of the working tree ------------------------------------------------
copy="$work/repo"
fg_copy_tree "$repo" "$copy" src tests benchmarks setup.py pyproject.toml README.md

# ---- 2. the debug build ------------------------------------------------------------------
echo "memcheck: building the debug extension in $copy"
start=$SECONDS
if ! (cd "$copy" && FASTGRAD_DEBUG_BUILD=1 "$PYTHON" setup.py -q build_ext --inplace \
        >"$out/build.log" 2>&1); then
    tail -40 "$out/build.log" >&2
    die "the debug build failed (log: $out/build.log)"
fi
so="$(ls "$copy"/src/fastgrad/_core*.so 2>/dev/null | head -1)"
[[ -n "$so" ]] || die "the debug build produced no extension"
extensions="$(cd "$copy/src" && find fastgrad -name "*.so" | sort | tr '\n' ' ')"
grep -q "__Pyx_TraceLine" "$copy/src/fastgrad/_core.c" \
    || die "the extension was not built with line tracing: FASTGRAD_DEBUG_BUILD had no effect"
echo "memcheck: built $extensions in $((SECONDS - start)) s (bounds checks, line tracing, -O0 -g)"

export PYTHONPATH="$copy/src${PYTHONPATH:+:$PYTHONPATH}"
export FASTGRAD_REQUIRE_EXTENSIONS=1
unset FASTGRAD_PURE
export OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 OMP_NUM_THREADS=1
# the reliability tests' repetition counts, lowered for a ~50x slower interpreter
export FASTGRAD_FUZZ_EXAMPLES="${FASTGRAD_FUZZ_EXAMPLES:-100}"
export FASTGRAD_LEAK_CALLS="${FASTGRAD_LEAK_CALLS:-200}"
export FASTGRAD_THREAD_GRADS="${FASTGRAD_THREAD_GRADS:-50}"
export PYTHONDONTWRITEBYTECODE=1

(cd "$copy" && "$PYTHON" - "$copy" <<'EOF') || die "the debug copy is not the one imported"
import sys, fastgrad, fastgrad._core as core
root = sys.argv[1]
assert fastgrad.COMPILED, "fastgrad did not select the compiled engine"
assert core.__file__.startswith(root), "imported " + core.__file__ + ", not the debug copy"
assert fastgrad.__file__.startswith(root), "imported " + fastgrad.__file__
print("memcheck: using", core.__file__)
EOF

# ---- 3. pytest under valgrind ------------------------------------------------------------
supp=()
for f in /usr/lib/valgrind/python3.supp /usr/lib/valgrind/python.supp \
         /usr/share/doc/python3*/valgrind-python.supp; do
    [[ -f "$f" ]] && supp+=("--suppressions=$f")
done
vg_opts=(--tool=memcheck --error-limit=no --num-callers=40 --show-mismatched-frees=yes
         --child-silent-after-fork=yes --fair-sched=yes
         --xml=yes --xml-file="$out/memcheck.%p.xml" --log-file="$out/memcheck.%p.log" "${supp[@]}")
if [[ "${MEMCHECK_LEAKS:-0}" == 1 ]]; then
    vg_opts+=(--leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite)
else
    vg_opts+=(--leak-check=no --show-leak-kinds=none --errors-for-leak-kinds=none)
fi
[[ "${MEMCHECK_TRACK_ORIGINS:-0}" == 1 ]] && vg_opts+=(--track-origins=yes)

echo "memcheck: valgrind on: pytest ${pytest_args[*]}"
rm -f "$out"/memcheck.*.xml "$out"/memcheck.*.log
echo "memcheck: logs: $out/memcheck.<pid>.xml (one per process), $out/pytest.log"
start=$SECONDS
(cd "$copy" && PYTHONMALLOC=malloc valgrind "${vg_opts[@]}" \
    "$python_exe" -X faulthandler -m pytest -q -p no:cacheprovider "${pytest_args[@]}" \
    >"$out/pytest.log" 2>&1)
test_status=$?
elapsed=$((SECONDS - start))
tail -5 "$out/pytest.log"
echo "memcheck: pytest under valgrind exited with status $test_status after ${elapsed} s"

# ---- 4. the report -----------------------------------------------------------------------
"$PYTHON" - "$copy/src/fastgrad" "$out"/memcheck.*.xml <<'EOF'
import os
import sys
import xml.etree.ElementTree as ET
from collections import Counter

package_dir, xml_paths = os.path.realpath(sys.argv[1]), sys.argv[2:]
strict = os.environ.get("MEMCHECK_STRICT", "0") == "1"


def load(path):
    """The <error> elements of one valgrind XML file; a crashed process leaves a truncated
    file, of which the complete errors are read."""
    text = open(path, errors="replace").read()
    try:
        return ET.fromstring(text).findall("error"), True
    except ET.ParseError:
        cut = text.rfind("</error>")
        if cut < 0:
            return [], False
        return ET.fromstring(text[:cut + len("</error>")] + "</valgrindoutput>").findall("error"), False


errors, occurrences = [], {}
for path in xml_paths:
    if not os.path.exists(path):
        continue
    found, complete = load(path)
    errors.extend(found)
    text = open(path, errors="replace").read()
    try:   # how often each distinct error happened (valgrind reports each stack once)
        for pair in ET.fromstring(text).iter("pair"):
            occurrences[(path, pair.findtext("unique"))] = int(pair.findtext("count"))
    except ET.ParseError:
        pass
    for err in found:
        err.set("source", path)
    if not complete:
        print("memcheck: {} is truncated (a crashed or killed process?)".format(path))
if not xml_paths or not any(os.path.exists(p) for p in xml_paths):
    print("memcheck: no valgrind XML report found")
    sys.exit(2)
print("memcheck: {} valgrind process report(s)".format(len(xml_paths)))

INTERPRETER = ("libpython", "/python3", "/python", "libc.so", "libc-", "ld-linux", "libm.so",
               "vgpreload", "libpthread")


def frames(stack):
    for f in stack.findall("frame"):
        yield {k: (f.findtext(k) or "") for k in ("obj", "fn", "dir", "file", "line", "ip")}


def in_core(fr):
    """A frame of one of fastgrad's compiled modules (_core, and any other it builds)."""
    if fr["obj"].endswith(".so") and os.path.realpath(fr["obj"]).startswith(package_dir + os.sep):
        return True
    return fr["dir"].startswith(package_dir) and fr["file"].endswith((".c", ".pyx"))


def attributed(stack):
    """True if the error happened in _core, or in the interpreter / libc called from _core
    with no interpreted Python code in between."""
    for fr in frames(stack):
        if in_core(fr):
            return True
        if fr["fn"].startswith("_PyEval_EvalFrame"):
            return False
        if not any(part in fr["obj"] for part in INTERPRETER):
            return False   # some other library (numpy, BLAS...) owns this error
    return False


def describe(err):
    what = err.findtext("what") or err.findtext("xwhat/text") or err.findtext("kind")
    lines = ["{}: {}".format(err.findtext("kind"), what)]
    for fr in list(frames(err.find("stack")))[:12]:
        where = "{}:{}".format(fr["file"], fr["line"]) if fr["file"] else os.path.basename(fr["obj"])
        lines.append("    {} ({})".format(fr["fn"] or fr["ip"], where))
    return "\n".join(lines)


ours, others = [], Counter()
core_anywhere = 0
for err in errors:
    kind = err.findtext("kind")
    stack = err.find("stack")
    if stack is None:
        continue
    if kind.startswith("Leak_"):
        if kind == "Leak_DefinitelyLost" and any(in_core(fr) for fr in frames(stack)):
            ours.append(err)
        continue
    if attributed(stack):
        ours.append(err)
    else:
        others[kind] += 1
        if any(in_core(fr) for fr in frames(stack)):
            core_anywhere += 1

leaks = [e for e in ours if e.findtext("kind").startswith("Leak_")]
ours = [e for e in ours if not e.findtext("kind").startswith("Leak_")]
print("memcheck: {} error reports in total (after suppressions)".format(len(errors)))
print("memcheck: {} attributed to fastgrad's compiled code ({} occurrences)".format(
    len(ours), sum(occurrences.get((e.get("source"), e.findtext("unique")), 1) for e in ours)))
for err in ours[:20]:
    print(describe(err))
if others:
    print("memcheck: not attributed to fastgrad (other libraries / interpreter): {}".format(
        dict(others)))
    print("memcheck:   of which {} have _core deeper in the stack (called back through "
          "Python code)".format(core_anywhere))
if leaks:
    print("memcheck: {} definitely-lost leak reports with _core on the allocation stack "
          "(informational):".format(len(leaks)))
    for err in leaks[:10]:
        print(describe(err))
status = 1 if ours or (strict and others) else 0
print("memcheck: RESULT: {}".format("FAIL" if status else
                                    "OK, zero memcheck errors in fastgrad's compiled code"))
sys.exit(status)
EOF
report_status=$?

fg_exit_status memcheck "$report_status" "$test_status" "${MEMCHECK_STRICT_TESTS:-0}" valgrind
}

main "$@"
exit $?
