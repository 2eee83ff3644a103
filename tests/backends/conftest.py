"""The backend tests: fastgrad's rule cases rerun on Dask and on a CuPy stand-in.

Nothing is registered with fastgrad: Dask (and CuPy) arrays are recognised by
fastgrad._backends once their library is imported.  The CuPy stand-in is a test module, so
it is made known to that registry as a library with CuPy's API (``stand_in.py``), as CuPy is.

At the end of a run, a table per backend: how many cases are correct, refused with a
clear error, wrong, broken (another exception), or not portable as written, and the
failures by category (harness.CATEGORIES).
"""

import collections
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (HERE, HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import stand_in  # noqa: E402

stand_in.make_known()


def pytest_terminal_summary(terminalreporter):
    import harness

    if not harness.OUTCOMES:
        return
    per_backend = collections.defaultdict(collections.Counter)
    per_category = collections.defaultdict(collections.Counter)
    for (backend, _), outcome in harness.OUTCOMES.items():
        per_backend[backend][outcome.kind] += 1
        if outcome.category:
            per_category[backend][outcome.category] += 1
    tr = terminalreporter
    tr.section("fastgrad rule cases per backend")
    kinds = ["correct", "refused", "wrong", "broken", "case"]
    tr.write_line("%-13s %6s " % ("backend", "cases") + " ".join("%8s" % k for k in kinds))
    for backend, counts in per_backend.items():
        total = sum(counts.values())
        tr.write_line("%-13s %6d " % (backend, total) + " ".join("%8d" % counts[k] for k in kinds))
    for backend, counts in per_category.items():
        tr.write_line("  %s: %s" % (backend, ", ".join("%s %d" % kv for kv in counts.most_common())))
