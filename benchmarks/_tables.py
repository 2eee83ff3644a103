"""The benchmark report's tables and checks, from measured results (no measuring here).

``results`` below is {case id: {implementation: result}} of one mode (run.py describes a result);
the report passes the one-process mode's results as its main results and the isolated mode's as
the second column.
"""

import statistics

import asv_scenarios
import peers
import workloads
from _format import (
    TOLERANCE,
    fmt_bytes,
    fmt_err,
    fmt_ns,
    fmt_time,
    fmt_x,
    mark,
    median,
    ratio,
    time_cell,
)

CORE_IMPLS = ("fastgrad-compiled", "fastgrad-pure", "autograd", "hand")
SCALING_IMPLS = ("fastgrad-compiled", "autograd")
NO_MEMORY = set(asv_scenarios.SCALING)  # tracemalloc on 10^6 nodes would take minutes

TITLES = {
    "W1": "W1 scalar chain",
    "W2": "W2 small-array chain",
    "W3": "W3 MLP",
    "W4": "W4 big arrays",
    "W5": "W5 deep graph",
    "W6": "W6 fan-in",
    "W7": "W7 logistic regression",
    "W8": "W8 indexing",
    "W9": "W9 saved state",
    "W9-recompute": "W9 in `fastgrad.recompute()`",
    **asv_scenarios.TITLES,
}
SHORT_TITLES = {
    **{w: TITLES[w] for w in tuple(workloads.WORKLOADS) + tuple(workloads.VARIANTS)},
    "asv-short": "asv short x**2",
    "asv-long": "asv long 50 sin",
    "asv-fan": "asv fan-out/in 10^4",
    "chain-1e4": "chain 10^4",
    "chain-1e5": "chain 10^5",
    "chain-1e6": "chain 10^6",
    "W9-recompute": "W9 in recompute()",
}
IMPL_TITLES = {
    "fastgrad-compiled": "fastgrad compiled",
    "fastgrad-pure": "fastgrad pure",
    "autograd": "autograd",
    "hand": "hand",
    **peers.TITLES,
}

# PERF.md's targets for fastgrad-compiled: (kind, bound).  "speedup": autograd median / fastgrad
# median >= bound; "over_hand": fastgrad median / hand median <= bound; "memory": fastgrad peak /
# autograd peak <= bound.
TARGETS = {
    "W1": [("speedup", 25)],
    "W2": [("speedup", 8)],
    "W3": [("speedup", 4)],
    "W4": [("over_hand", 1.10)],
    "W5": [("speedup", 30), ("memory", 0.25)],
    "W6": [("speedup", 10)],
    "W7": [("over_hand", 1.10)],
    "W8": [("speedup", 10)],
    "W9": [("memory", 0.6)],
    "W9-recompute": [("memory", 0.6)],
    "asv-short": [("speedup", 8)],
    "asv-long": [("speedup", 15)],
    "asv-fan": [("speedup", 30)],
}
SCALING_BOUND = 1.5  # fastgrad-compiled: ns/primitive at 10^6 <= 1.5 x that at 10^4
SCALING_AUTOGRAD = 2.0  # autograd's ratio as the issue quotes it

# Issue #16's acceptance (fastgrad-compiled, one-process mode).
OVER_HAND_16 = {"W1": 3.0, "W6": 3.0, "W8": 3.0, "W5": 4.0, "asv-long": 4.0, "W4": 1.10, "W7": 1.10}
FASTER_THAN_16 = {"asv-short": ("torch", "mygrad")}  # the one-primitive gradient
COMPUTE_BOUND_16 = ("W4", "W7")  # every other workload: faster than PyTorch eager
MIXED_RATIO_16 = 1.15  # the small gradient after a 10^6-element gradient / before it
MIXED_RSS_16 = 10 * 2**20  # RSS after N big gradient calls - after the first


# ------------------------------------------------------------------------------------ numbers


def speedup(case_res, impl, base="autograd"):
    """base median / impl median: how many times faster ``impl`` is than ``base``."""
    return ratio(median(case_res.get(base)), median(case_res.get(impl)))


def over_hand(case_res, impl):
    return ratio(median(case_res.get(impl)), median(case_res.get("hand")))


def memory_ratio(case_res, impl):
    p = (case_res.get(impl) or {}).get("peak")
    a = (case_res.get("autograd") or {}).get("peak")
    return p / a if p is not None and a else None


def target_value(case_res, kind, impl="fastgrad-compiled"):
    return {"speedup": speedup, "over_hand": over_hand, "memory": memory_ratio}[kind](case_res, impl)


def target_met(kind, value, bound):
    if value is None:
        return None
    return value >= bound if kind == "speedup" else value <= bound


def per_primitive(res, cid):
    """(median, min, max) seconds per primitive of a scaling-chain result."""
    n = asv_scenarios.PRIMITIVES[cid]
    t = res["times"]
    return statistics.median(t) / n, min(t) / n, max(t) / n


def scaling_ratio(results, impl):
    """ns/primitive at 10^6 over ns/primitive at 10^4 (medians), or None."""
    try:
        big = per_primitive(results["chain-1e6"][impl], "chain-1e6")[0]
        small = per_primitive(results["chain-1e4"][impl], "chain-1e4")[0]
    except (KeyError, TypeError):
        return None
    return big / small


def _table(head, rows):
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


# ------------------------------------------------------------------- PERF.md's tables


def target_cell(cid, case_res):
    parts = []
    for kind, bound in TARGETS.get(cid, []):
        v = target_value(case_res, kind)
        label = {
            "speedup": f"≥ {bound:g}x faster",
            "over_hand": f"≤ {bound:.2f}x hand",
            "memory": f"memory ≤ {bound:g}x",
        }[kind]
        if v is None:
            parts.append(label)
        else:
            parts.append(f"{label}: {fmt_x(v)} {mark(target_met(kind, v, bound))}")
    return "; ".join(parts) or "—"


def worst_err(case_res, impls=CORE_IMPLS):
    errs = [
        r["rel_err"] for i, r in case_res.items() if i in impls and i != "autograd" and r.get("rel_err") is not None
    ]
    if errs:
        return fmt_err(max(errs))
    return "n/a (no autograd)" if any("grad" in r for r in case_res.values()) else "—"


def summary_table(results, isolated=None):
    """PERF.md's summary: times, speed-ups, targets, memory, errors; with ``isolated``, a column
    of fastgrad-compiled's isolated-mode times next to the main ones."""
    isolated = isolated or {}
    head = ["case", "hand", "fastgrad compiled"]
    if isolated:
        head.append("fastgrad compiled, isolated")
    head += [
        "fastgrad pure",
        "autograd",
        "speed-up compiled",
        "speed-up pure",
        "compiled / hand",
        "PERF.md target (compiled)",
        "peak memory compiled vs autograd",
        "max rel err",
    ]
    rows = []
    for cid, res in results.items():
        if not any(i in res for i in CORE_IMPLS):
            continue
        cp, ap = (res.get(i, {}).get("peak") for i in ("fastgrad-compiled", "autograd"))
        mem = "—"
        if cp is not None or ap is not None:
            r = memory_ratio(res, "fastgrad-compiled")
            mem = f"{fmt_bytes(cp)} vs {fmt_bytes(ap)}" + (f" ({r:.2g}x)" if r else "")
        row = [TITLES.get(cid, cid), time_cell(res.get("hand")), time_cell(res.get("fastgrad-compiled"))]
        if isolated:
            row.append(time_cell(isolated.get(cid, {}).get("fastgrad-compiled")))
        row += [time_cell(res.get(i)) for i in ("fastgrad-pure", "autograd")]
        row += [
            fmt_x(speedup(res, "fastgrad-compiled")),
            fmt_x(speedup(res, "fastgrad-pure")),
            fmt_x(over_hand(res, "fastgrad-compiled")),
            target_cell(cid, res),
            mem,
            worst_err(res),
        ]
        rows.append(row)
    return _table(head, rows)


def scaling_table(results):
    sizes = [c for c in asv_scenarios.SCALING if c in results]
    if not sizes:
        return None
    impls = [i for i in SCALING_IMPLS if any(i in results[c] for c in sizes)]
    head = ["primitives"] + [f"{i}: ns per primitive (min–max)" for i in impls]
    both = set(impls) == set(SCALING_IMPLS)
    if both:
        head.append("speed-up compiled")
    rows = []
    for c in sizes:
        row = [f"10^{len(str(asv_scenarios.PRIMITIVES[c])) - 1}"]
        for i in impls:
            res = results[c].get(i)
            if res and res.get("times"):
                m, lo, hi = (fmt_ns(v) for v in per_primitive(res, c))
                row.append(f"{m} ({lo}–{hi})")
            else:
                row.append("error" if res and "error" in res else "—")
        if both:
            row.append(fmt_x(speedup(results[c], "fastgrad-compiled")))
        rows.append(row)
    row = ["**10^6 / 10^4**"]
    for i in impls:
        r = scaling_ratio(results, i)
        bound = f"target ≤ {SCALING_BOUND}x" if i == "fastgrad-compiled" else f"issue quotes {SCALING_AUTOGRAD}x"
        row.append("—" if r is None else f"**{r:.2f}x** ({bound})")
    if both:
        row.append("")
    rows.append(row)
    return _table(head, rows)


def memory_table(results):
    cases = [c for c in ("W5", "W9", "W9-recompute") if c in results]
    if not cases:
        return None
    head = ["case", "fastgrad compiled", "fastgrad pure", "autograd", "compiled / autograd", "pure / autograd"]
    head.append("target (compiled)")
    rows = []
    for c in cases:
        res = results[c]
        bound = dict(TARGETS[c])["memory"]
        rc, rp = memory_ratio(res, "fastgrad-compiled"), memory_ratio(res, "fastgrad-pure")
        peaks = [fmt_bytes(res.get(i, {}).get("peak")) for i in ("fastgrad-compiled", "fastgrad-pure", "autograd")]
        ok = mark(target_met("memory", rc, bound))
        rows.append([TITLES[c], *peaks, fmt_x(rc), fmt_x(rp), f"≤ {bound:g}x {ok}"])
    return _table(head, rows)


def checks(results):
    """[(description, value text, ok or None)] for every PERF.md check that could be made."""
    out = []
    for cid, res in results.items():
        for kind, bound in TARGETS.get(cid, []):
            v = target_value(res, kind)
            if v is not None:
                what = {
                    "speedup": f"autograd / fastgrad-compiled ≥ {bound:g}",
                    "over_hand": f"fastgrad-compiled / hand ≤ {bound:.2f}",
                    "memory": f"peak fastgrad-compiled / autograd ≤ {bound:g}",
                }[kind]
                out.append((f"{cid}: {what}", f"{v:.3g}", target_met(kind, v, bound)))
        # (a variant trades time for memory on purpose: its target is the memory alone)
        if cid not in asv_scenarios.SCALING and cid not in workloads.VARIANTS:
            v = speedup(res, "fastgrad-pure")
            if v is not None:
                out.append((f"{cid}: fastgrad-pure not slower than autograd", f"{v:.3g}x", v >= 1.0))
        for impl, r in res.items():
            if impl in CORE_IMPLS and "error" in r:
                out.append((f"{cid}: {impl} ran", "error", False))
        errs = {
            i: r["rel_err"]
            for i, r in res.items()
            if i in CORE_IMPLS and i != "autograd" and r.get("rel_err") is not None
        }
        if errs:
            worst = max(errs.values())
            out.append(
                (
                    f"{cid}: gradients of {', '.join(errs)} vs autograd's, rel err ≤ 1e-10",
                    f"worst {worst:.1e}",
                    worst <= TOLERANCE,
                )
            )
    r = scaling_ratio(results, "fastgrad-compiled")
    if r is not None:
        out.append(
            (
                f"scaling: fastgrad-compiled ns/primitive at 10^6 ≤ {SCALING_BOUND} x at 10^4",
                f"{r:.2f}x",
                r <= SCALING_BOUND,
            )
        )
    return out


def checks_section(cs, wording=mark):
    failed = [c for c in cs if c[2] is False]
    unknown = [c for c in cs if c[2] is None]
    head = f"{len(cs) - len(failed) - len(unknown)} of {len(cs)} checks pass"
    head += f"; {len(unknown)} not measured" if unknown else ""
    head += "." if not failed else f"; missed: {', '.join(c[0] for c in failed)}."
    return head + "\n\n" + _table(["check", "value", ""], [[d, v, wording(ok)] for d, v, ok in cs])


# --------------------------------------------------------------- the two modes side by side


def modes_table(main, isolated):
    """Per case and core implementation: one-process median / isolated median (their ratio)."""
    impls = [i for i in CORE_IMPLS if any(i in main.get(c, {}) or i in isolated.get(c, {}) for c in main)]
    rows = []
    for cid in main:
        if cid not in isolated:
            continue
        row = [TITLES.get(cid, cid)]
        for i in impls:
            a, b = median(main[cid].get(i)), median(isolated[cid].get(i))
            if a is None and b is None:
                row.append("—")
            elif a is None or b is None:
                row.append(f"{fmt_time(a) if a else '—'} / {fmt_time(b) if b else '—'}")
            else:
                row.append(f"{fmt_time(a)} / {fmt_time(b)} ({a / b:.2f}x)")
        rows.append(row)
    if not rows:
        return None
    return _table(["case"] + [f"{IMPL_TITLES[i]}: one process / isolated" for i in impls], rows)


# ---------------------------------------------------------------------------- other systems


def present_peers(results):
    return [p for p in peers.PEERS if any(p in res for res in results.values())]


def peers_table(results):
    """fastgrad against hand, autograd and every peer that ran: medians and ratios."""
    ps = present_peers(results)
    if not ps:
        return None
    head = ["case", "hand", "fastgrad compiled", "autograd"] + [IMPL_TITLES[p] for p in ps]
    head += ["fastgrad / hand"] + [f"{IMPL_TITLES[p]} / fastgrad" for p in ps]
    head.append("peers' max rel err")
    rows = []
    for cid, res in results.items():
        if not any(p in res for p in ps):
            continue
        row = [TITLES.get(cid, cid)] + [time_cell(res.get(i)) for i in ("hand", "fastgrad-compiled", "autograd")]
        row += [time_cell(res.get(p)) for p in ps]
        row.append(fmt_x(over_hand(res, "fastgrad-compiled")))
        row += [fmt_x(speedup(res, "fastgrad-compiled", base=p)) for p in ps]
        row.append(worst_err(res, impls=ps))
        rows.append(row)
    return _table(head, rows)


def jit_table(results):
    """JAX jit: the first call (tracing and compiling, then one run) apart from the median."""
    rows = []
    for cid, res in results.items():
        r = res.get("jax-jit")
        if r and r.get("times"):
            m = median(r)
            rows.append([TITLES.get(cid, cid), fmt_time(r["first_call"]), fmt_time(m), f"{r['first_call'] / m:,.0f}x"])
    if not rows:
        return None
    return _table(["case", "first call (trace, compile, run)", "median call", "first / median"], rows)


# --------------------------------------------------------------------------- issue #16


def mixed_table(mixed):
    if not mixed:
        return None
    head = [
        "implementation",
        "small before",
        "small after one W4 gradient",
        "after / before",
        "small after N W4 gradients",
        "RSS before W4",
        "RSS after 1st W4",
        "RSS after Nth W4",
        "1st − before",
        "Nth − 1st",
        "rel err (small, W4)",
    ]
    rows = []
    for impl, r in mixed.items():
        if "error" in r:
            rows.append([IMPL_TITLES.get(impl, impl), "error", r["error"][:120]] + [""] * (len(head) - 3))
            continue
        b, a = statistics.median(r["before"]), statistics.median(r["after"])
        n = r.get("big_calls")
        rss = [r.get(k) for k in ("rss_before", "rss_1", "rss_n")]
        errs = r.get("rel_err", {})
        rows.append(
            [
                IMPL_TITLES.get(impl, impl),
                time_cell({"times": r["before"]}),
                time_cell({"times": r["after"]}),
                f"{a / b:.2f}x",
                f"{fmt_time(r['after_n'])} (N = {n})" if "after_n" in r else "—",
                *(fmt_bytes(x) for x in rss),
                fmt_bytes(rss[1] - rss[0]) if None not in rss[:2] else "—",
                fmt_bytes(rss[2] - rss[1]) if None not in rss[1:] else "—",
                ", ".join(fmt_err(errs.get(c)) for c in ("mixed-small", "W4")),
            ]
        )
    return _table(head, rows)


def issue16_checks(results, mixed):
    """[(description, value text, ok or None)] for issue #16's acceptance, fastgrad-compiled."""
    out = []
    m = (mixed or {}).get("fastgrad-compiled")
    if m and "error" not in m:
        v = statistics.median(m["after"]) / statistics.median(m["before"])
        out.append(
            (
                f"mixed: `x**2` after a 10^6-element gradient / before ≤ {MIXED_RATIO_16}",
                f"{v:.2f}x",
                v <= MIXED_RATIO_16,
            )
        )
        if m.get("rss_n") is not None and m.get("rss_1") is not None:
            d = m["rss_n"] - m["rss_1"]
            out.append(
                (
                    f"mixed: RSS after {m['big_calls']} W4 gradients − after the first ≤ {fmt_bytes(MIXED_RSS_16)}",
                    fmt_bytes(d),
                    d <= MIXED_RSS_16,
                )
            )
    else:
        out.append((f"mixed: `x**2` after a 10^6-element gradient / before ≤ {MIXED_RATIO_16}", "—", None))
    for cid, bound in OVER_HAND_16.items():
        if cid in results:
            v = over_hand(results[cid], "fastgrad-compiled")
            out.append(
                (
                    f"{cid}: fastgrad-compiled / hand ≤ {bound:g}",
                    "—" if v is None else f"{v:.3g}x",
                    None if v is None else v <= bound,
                )
            )
    for cid, ps in FASTER_THAN_16.items():
        for p in ps:
            if cid in results:
                v = speedup(results[cid], "fastgrad-compiled", base=p)
                out.append(
                    (
                        f"{cid}: fastgrad-compiled faster than {IMPL_TITLES[p]} ({IMPL_TITLES[p]} / fastgrad > 1)",
                        "—" if v is None else f"{v:.3g}x",
                        None if v is None else v > 1.0,
                    )
                )
    for cid, res in results.items():
        if cid in peers.CASES and cid not in COMPUTE_BOUND_16 and cid not in FASTER_THAN_16:
            v = speedup(res, "fastgrad-compiled", base="torch")
            out.append(
                (
                    f"{cid}: fastgrad-compiled faster than PyTorch eager",
                    "—" if v is None else f"{v:.3g}x",
                    None if v is None else v > 1.0,
                )
            )
    return out


# -------------------------------------------------------------------------------- details


def details(modes, rss=None):
    """Every result of every mode: rounds, calls, first call, median, min, max, peak, error."""
    head = ["mode", "case", "implementation", "rounds", "calls/round", "first call", "median", "min", "max"]
    head += ["peak (tracemalloc)", "rel err vs autograd", "note"]
    rows = []
    for mode, results in modes.items():
        for cid, res in results.items():
            for impl, r in res.items():
                if "error" in r:
                    rows.append([mode, cid, impl] + [""] * 8 + [r["error"][:200]])
                    continue
                if not r["times"]:
                    continue
                err = (
                    "—" if r.get("rel_err") is None else "(reference)" if impl == "autograd" else f"{r['rel_err']:.1e}"
                )
                note = ", ".join(f"{k}={v}" for k, v in r["info"].items())
                if cid in NO_MEMORY:
                    note += ", peak not measured"
                elif impl in peers.UNTRACED:
                    note += ", peak not measured (not NumPy's memory)"
                t = r["times"]
                rows.append(
                    [
                        mode,
                        cid,
                        impl,
                        str(len(t)),
                        f"{min(r['calls'])}–{max(r['calls'])}",
                        fmt_time(r["first_call"]),
                        fmt_time(median(r)),
                        fmt_time(min(t)),
                        fmt_time(max(t)),
                        fmt_bytes(r["peak"]),
                        err,
                        note,
                    ]
                )
    text = _table(head, rows)
    if rss:
        text += "\n\nResident set size of each one-process worker at the end: " + ", ".join(
            f"{i} {fmt_bytes(b)}" for i, b in rss.items()
        )
    return text


# ---------------------------------------------------------------------- against an earlier run

COMPARE_IMPLS = ("fastgrad-compiled", "fastgrad-pure")
NOT_SLOWER = 1.05  # now / then above this counts as slower (5%: the spread of medians on a quiet machine)


def compare_rows(modes, old_modes):
    """[(mode, case, impl, then, now)] for every median present in both runs, mode by mode."""
    rows = []
    for mode, results in modes.items():
        old = old_modes.get(mode)
        if not old:
            continue
        for cid, res in results.items():
            for impl in COMPARE_IMPLS:
                then, now = median(old.get(cid, {}).get(impl)), median(res.get(impl))
                if then and now:
                    rows.append((mode, cid, impl, then, now))
    return rows


def compare_table(modes, old_modes, old_label):
    rows = compare_rows(modes, old_modes)
    if not rows:
        return None
    body = [
        [mode, TITLES.get(cid, cid), IMPL_TITLES[impl], fmt_time(then), fmt_time(now), f"{now / then:.2f}x"]
        + [mark(now / then <= NOT_SLOWER)]
        for mode, cid, impl, then, now in rows
    ]
    slower = [r for r in rows if r[4] / r[3] > NOT_SLOWER]
    head = (
        f"Against {old_label}: {len(rows) - len(slower)} of {len(rows)} medians not slower (now / then ≤ {NOT_SLOWER})."
    )
    return head + "\n\n" + _table(["mode", "case", "implementation", "then", "now", "now / then", ""], body)
