"""Rewrite known_failures.txt from a run of every case on every backend.

    python tests/backends/record_known_failures.py

Run it after a change in src/fastgrad makes cases pass (or, never silently, fail): review
the diff of known_failures.txt, it is the list of what is still to do.
"""

import collections
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import array_backends as backends  # noqa: E402
import cases  # noqa: E402
import harness  # noqa: E402
import selection  # noqa: E402
import stand_in  # noqa: E402

HEADER = """\
# Rule cases that fail today on a backend, with the reason's category (harness.CATEGORIES).
# Written by record_known_failures.py from a full run; the tests treat each line as a strict
# expected failure (a case that starts to pass fails the run until its line goes).
# backend<TAB>case id<TAB>category<TAB>what happened
"""


def main():
    stand_in.make_known()
    all_cases = cases.all_cases()
    lines = []
    summary = collections.defaultdict(collections.Counter)
    for backend in backends.BACKENDS:
        for case in all_cases:
            outcome = harness.run(case, backend)
            summary[backend.name][outcome.kind] += 1
            if not outcome.correct:
                message = outcome.message.replace("\t", " ").replace("\n", " ")
                lines.append("\t".join([backend.name, case.id, outcome.category, message]))
        print(backend.name, dict(summary[backend.name]), flush=True)
    selection.KNOWN_FAILURES.write_text(HEADER + "\n".join(lines) + "\n")
    print("wrote", len(lines), "lines to", selection.KNOWN_FAILURES)


if __name__ == "__main__":
    main()
