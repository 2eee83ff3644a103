"""Which cases run on which backend in a test run, and the known failures of today.

Every case runs on NumPy, on the CuPy stand-in and on Dask with chunks of 2 (the chunking
that splits every axis); the two other Dask chunkings (one chunk, uneven chunks) each
take every third case, so the suite stays within its time budget.  FG_BACKENDS_FULL=1 runs
every case on every backend (about four minutes).

known_failures.txt lists, one per line and tab-separated, ``backend  case-id  category
message``: the cases that fail today and why (categories: harness.CATEGORIES).  They are
expected failures, strictly: a case that starts passing fails the run until its line is
removed, so the list only shrinks.  ``python tests/backends/record_known_failures.py``
rewrites it from a full run.
"""

import os
from pathlib import Path

KNOWN_FAILURES = Path(__file__).with_name("known_failures.txt")
FULL = os.environ.get("FG_BACKENDS_FULL", "") not in ("", "0")
SAMPLED = {"dask-1chunk": 0, "dask-uneven": 1}  # backend -> offset of its every-third sample


def cases_for(backend_name, cases):
    if FULL or backend_name not in SAMPLED:
        return list(cases)
    return list(cases)[SAMPLED[backend_name] :: 3]


def known_failures():
    """{(backend, case id): (category, message)}"""
    out = {}
    if not KNOWN_FAILURES.exists():
        return out
    for line in KNOWN_FAILURES.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        backend, case_id, category, message = (line.split("\t") + [""])[:4]
        out[(backend, case_id)] = (category, message)
    return out
