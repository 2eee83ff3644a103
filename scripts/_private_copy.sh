# Sourced by asan.sh and memcheck.sh (not run on its own): what both memory checkers do the
# same way around their own build and run: a temporary work directory with its logs, a
# private copy of the working tree without build products (so the shared editable install
# is never touched and every compiled module is rebuilt), and the exit status.
# Each function takes the checker's name ("asan", "memcheck") first, for its messages.

# fg_make_workdir NAME OUT_DIR KEEP: sets $work (a new temporary directory, no symbolic
# links) and $out (OUT_DIR, or $work/out); on exit, $work is removed unless KEEP is 1, and
# logs that lived in it are moved to a directory of their own first.
fg_make_workdir() {
    fg_name=$1 fg_keep=$3
    work="$(mktemp -d "${TMPDIR:-/tmp}/fastgrad-$fg_name.XXXXXX")" \
        || { echo "$fg_name: cannot make a temporary directory" >&2; exit 2; }
    work="$(cd "$work" && pwd -P)"
    out="${2:-$work/out}"
    mkdir -p "$out"
    out="$(cd "$out" && pwd -P)"
    trap fg_cleanup EXIT
}

fg_cleanup() {
    if [[ "$fg_keep" == 1 ]]; then
        echo "$fg_name: kept $work"
        return
    fi
    if [[ "$out" == "$work/out" ]]; then
        local saved
        saved="$(mktemp -d "${TMPDIR:-/tmp}/fastgrad-$fg_name-logs.XXXXXX")"
        cp -a "$out/." "$saved/" && echo "$fg_name: logs in $saved"
    fi
    rm -rf "$work"
}

# fg_copy_tree REPO COPY ITEM...: the ITEMs of REPO (those that exist) copied into COPY,
# without caches, compiled extensions, or the C files Cython generated (a .c next to the
# .pyx or .py it came from).
fg_copy_tree() {
    local repo=$1 copy=$2 item c_file stem
    shift 2
    mkdir -p "$copy"
    for item in "$@"; do
        [[ -e "$repo/$item" ]] && cp -a "$repo/$item" "$copy/"
    done
    find "$copy" \( -name "__pycache__" -o -name "*.egg-info" -o -name ".pytest_cache" \
        -o -name ".hypothesis" -o -name ".benchmarks" \) -prune -exec rm -rf {} + 2>/dev/null
    find "$copy/src" \( -name "*.so" -o -name "*.html" \) -delete
    while IFS= read -r c_file; do
        stem="${c_file%.c}"
        [[ -e "$stem.pyx" || -e "$stem.py" ]] && rm -f "$c_file"
    done < <(find "$copy/src" -name "*.c")
    rm -rf "$copy/build"
}

# fg_exit_status NAME REPORT_STATUS TEST_STATUS STRICT_TESTS UNDER: exits with the report's
# status if it failed; 2 if pytest did not complete; 1 for test failures only when
# STRICT_TESTS is 1 (the checker looks for memory errors; the normal run, for wrong answers).
fg_exit_status() {
    local name=$1 report_status=$2 test_status=$3 strict_tests=$4 under=$5
    if [[ $report_status -ne 0 ]]; then
        exit "$report_status"
    fi
    if [[ $test_status -ge 2 ]]; then
        echo "$name: pytest did not complete normally (status $test_status): see $out/pytest.log" >&2
        exit 2
    fi
    if [[ $test_status -eq 1 ]]; then
        echo "$name: some tests failed under $under (see $out/pytest.log)"
        [[ "$strict_tests" == 1 ]] && exit 1
    fi
    exit 0
}
