"""Every rule case of fastgrad's tables on every backend: value, VJPs, JVPs, second order.

A case is correct on a backend when building its value and derivatives there forces no
work (no Dask compute, no host transfer), every float result lives on the backend, and
every result equals NumPy's to 1e-10 relative (harness.py).  The cases that fail today are
listed, with their reason, in known_failures.txt; they are strict expected failures.
"""

import pytest

import array_backends as backends
import cases
import harness
import selection

ALL_CASES = cases.all_cases()
KNOWN = selection.known_failures()


def _params():
    out = []
    for backend in backends.BACKENDS:
        for case in selection.cases_for(backend.name, ALL_CASES):
            known = KNOWN.get((backend.name, case.id))
            marks = [pytest.mark.xfail(strict=True, reason="%s: %s" % known)] if known else []
            out.append(pytest.param(backend, case, id="%s-%s" % (backend.name, case.id), marks=marks))
    return out


@pytest.mark.parametrize("backend,case", _params())
def test_rule_case(backend, case):
    outcome = harness.run(case, backend)
    harness.OUTCOMES[(backend.name, case.id)] = outcome
    assert outcome.correct, "%s on %s: %s (%s)" % (case.id, backend.name, outcome.category, outcome.message)


def test_known_failures_name_real_cases():
    """Every line of known_failures.txt names a backend, a case and a category that exist."""
    ids = {c.id for c in ALL_CASES} | cases.NEED_NEWER_NUMPY
    for (backend, case_id), (category, _) in KNOWN.items():
        assert backend in backends.BY_NAME, backend
        assert case_id in ids, case_id
        assert category in harness.CATEGORIES, category
