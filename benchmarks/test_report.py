"""The report's logic on made-up results: modes, case selection, #16's checks, rerendering.

    pytest benchmarks/test_report.py

No timing and no autodiff library: the numbers below are invented so each decision is known.
"""

import json

import pytest

import _tables
import report
import run


def res(*times, peak=None, err=0.0):
    return {
        "times": list(times),
        "calls": [1] * len(times),
        "peak": peak,
        "info": {},
        "first_call": 1.0,
        "rel_err": err,
    }


def test_rotation_starts_each_round_one_case_later():
    cases = ["W1", "W2", "W3"]
    assert [run.rotation(cases, r) for r in range(4)] == [
        ["W1", "W2", "W3"],
        ["W2", "W3", "W1"],
        ["W3", "W1", "W2"],
        ["W1", "W2", "W3"],
    ]


def test_select_cases_groups_and_mixed():
    cids, with_mixed = report.select_cases("W1,asv,mixed", quick=False)
    assert cids == ["W1", "asv-short", "asv-long", "asv-fan"] and with_mixed
    cids, with_mixed = report.select_cases("scaling", quick=True)
    assert cids == ["chain-1e4", "chain-1e5"] and not with_mixed
    assert report.select_cases("all", quick=False)[1]
    with pytest.raises(ValueError):
        report.select_cases("W10", quick=False)


def test_case_impls_peers_only_where_implemented():
    impls = ["fastgrad-compiled", "autograd", "hand", "torch"]
    assert report.case_impls("chain-1e4", impls) == ["fastgrad-compiled", "autograd"]
    assert report.case_impls("W9-recompute", impls) == ["fastgrad-compiled", "autograd", "hand"]
    assert report.case_impls("W8", impls) == impls


def _check(cs, prefix):
    (hit,) = [c for c in cs if c[0].startswith(prefix)]
    return hit[2]


def test_issue16_checks_decide_met_and_missed():
    results = {
        "W1": {"fastgrad-compiled": res(2.9), "hand": res(1.0), "torch": res(10.0)},
        "W4": {"fastgrad-compiled": res(1.2), "hand": res(1.0), "torch": res(0.5)},
        "asv-short": {"fastgrad-compiled": res(2.0), "hand": res(0.1), "torch": res(3.0), "mygrad": res(1.5)},
    }
    mixed = {
        "fastgrad-compiled": {
            "before": [1.0, 1.0, 1.0],
            "after": [1.1, 1.2, 1.1],
            "rss_1": 100 * 2**20,
            "rss_n": 111 * 2**20,
            "big_calls": 100,
        }
    }
    cs = _tables.issue16_checks(results, mixed)
    assert _check(cs, "mixed: `x**2`") is True  # median 1.1 <= 1.15
    assert _check(cs, "mixed: RSS") is False  # 11 MiB > 10 MiB
    assert _check(cs, "W1: fastgrad-compiled / hand") is True
    assert _check(cs, "W4: fastgrad-compiled / hand") is False  # 1.2 > 1.10
    assert _check(cs, "asv-short: fastgrad-compiled faster than PyTorch") is True
    assert _check(cs, "asv-short: fastgrad-compiled faster than MyGrad") is False
    assert _check(cs, "W1: fastgrad-compiled faster than PyTorch") is True
    # W4 is compute-bound: held to hand, not to PyTorch
    assert not [c for c in cs if c[0].startswith("W4: fastgrad-compiled faster")]
    # a peer that did not run: not measured, neither met nor missed
    del results["asv-short"]["mygrad"]
    assert _check(_tables.issue16_checks(results, mixed), "asv-short: fastgrad-compiled faster than MyGrad") is None


def test_compare_marks_only_slower_medians():
    now = {"one-process": {"W1": {"fastgrad-compiled": res(1.0)}, "W2": {"fastgrad-compiled": res(1.2)}}}
    then = {"one-process": {"W1": {"fastgrad-compiled": res(1.0)}, "W2": {"fastgrad-compiled": res(1.0)}}}
    rows = _tables.compare_rows(now, then)
    assert [(cid, round(n / t, 2)) for _, cid, _, t, n in rows] == [("W1", 1.0), ("W2", 1.2)]
    assert "1 of 2 medians not slower" in _tables.compare_table(now, then, "x")


def test_rerender_reads_a_json_from_before_the_one_process_mode(tmp_path, capsys):
    old = {"results": {"W1": {"fastgrad-compiled": res(1e-3), "autograd": res(3e-2), "hand": res(1e-4)}}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    out = tmp_path / "old.md"
    assert report.rerender(str(path), str(out), None) == 0
    text = out.read_text()
    assert "## Summary (isolated mode)" in text and "| W1 scalar chain |" in text and "30x" in text
