"""Benchmark report: every case for fastgrad (compiled and pure), autograd and hand-written NumPy.

    python benchmarks/report.py                    # the full report (5-10 min on 2 cores)
    python benchmarks/report.py --quick            # smoke run: results/quick.md, quick.png
    python benchmarks/report.py --cases W1,W5,asv  # a subset (ids or groups W, asv, scaling)
    python benchmarks/report.py --steady-malloc    # freed memory kept in-process (see README)
    python benchmarks/report.py --rerender benchmarks/results/latest.json   # redraw only

(``python benchmarks/run.py`` takes the same options and does the same thing.)

Cases: PERF.md's workloads W1-W9, W9 again with fastgrad inside ``fastgrad.recompute()``
(``W9-recompute``; the others run W9 itself), autograd's asv scenarios (asv-short, asv-long, asv-fan) and the
scaling chain (``x = x * 1.0000001`` 10^4, 10^5 and 10^6 times; fastgrad-compiled and autograd
only, no peak-memory call).  Each is measured by run.py's machinery: one worker process per
implementation, rounds alternated between them, BLAS on one thread, GC on (see run.py).

Writes ``benchmarks/results/latest.md`` (summary table with PERF.md's targets, per-primitive
scaling, peak memory, acceptance checks, details), ``latest.json`` (raw numbers) and
``speedup.png`` (speed-up over autograd per case; skipped, and said so, without matplotlib).
"""

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import asv_scenarios  # noqa: E402  (no autodiff library is imported by these three)
import run  # noqa: E402
import workloads  # noqa: E402

ALL_IMPLS = run.ALL_IMPLS  # the alternation order
SCALING_IMPLS = ("fastgrad-compiled", "autograd")
NO_MEMORY = set(asv_scenarios.SCALING)  # tracemalloc on 10^6 nodes would take minutes
QUICK_SKIPS = ("chain-1e6",)  # --quick leaves these out unless named
GROUPS = {
    "W": tuple(workloads.WORKLOADS) + tuple(workloads.VARIANTS),
    "asv": asv_scenarios.ASV,
    "scaling": asv_scenarios.SCALING,
}
CASES = GROUPS["W"] + GROUPS["asv"] + GROUPS["scaling"]
TOLERANCE = 1e-10

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
    **{w: TITLES[w] for w in GROUPS["W"]},
    "asv-short": "asv short x**2",
    "asv-long": "asv long 50 sin",
    "asv-fan": "asv fan-out/in 10^4",
    "chain-1e4": "chain 10^4",
    "chain-1e5": "chain 10^5",
    "chain-1e6": "chain 10^6",
    "W9-recompute": "W9 in recompute()",
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


# ------------------------------------------------------------------------------------ numbers


def median(res):
    return statistics.median(res["times"]) if res and res.get("times") else None


def speedup(case_res, impl):
    a, m = median(case_res.get("autograd")), median(case_res.get(impl))
    return a / m if a and m else None


def over_hand(case_res, impl):
    h, m = median(case_res.get("hand")), median(case_res.get(impl))
    return m / h if h and m else None


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


def scaling_ratio(all_results, impl):
    """ns/primitive at 10^6 over ns/primitive at 10^4 (medians), or None."""
    try:
        big = per_primitive(all_results["chain-1e6"][impl], "chain-1e6")[0]
        small = per_primitive(all_results["chain-1e4"][impl], "chain-1e4")[0]
    except (KeyError, TypeError):
        return None
    return big / small


# --------------------------------------------------------------------------------- formatting


def fmt_time(t, unit_of=None):
    """'1.23 ms'; with ``unit_of``, in that value's unit and without the unit's name."""
    ref = t if unit_of is None else unit_of
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if ref >= scale or unit == "ns":
            v = t / scale  # a max of 1650 us next to a median of 988 us stays "1650"
            return (f"{v:.3g}" if v < 1000 else f"{v:.0f}") + ("" if unit_of is not None else f" {unit}")


def fmt_bytes(b):
    if b is None:
        return "—"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b} B"


def fmt_ns(t):
    """Seconds as a count of nanoseconds: '1,234' or '56.7'."""
    ns = t * 1e9
    return f"{ns:,.0f}" if ns >= 100 else f"{ns:.3g}"


def fmt_x(v):
    return "—" if v is None else f"{v:.3g}x"


def time_cell(res):
    if res is None:
        return "—"
    if "error" in res:
        return "error"
    if not res["times"]:
        return "—"
    t, m = res["times"], statistics.median(res["times"])
    return f"{fmt_time(m)} ({fmt_time(min(t), m)}–{fmt_time(max(t), m)})"


def mark(ok):
    return "?" if ok is None else ("✓" if ok else "✗ **missed**")


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


def worst_err(case_res):
    errs = [r["rel_err"] for i, r in case_res.items() if i != "autograd" and r.get("rel_err") is not None]
    if errs:
        w = max(errs)
        return f"{w:.1e}" + ("" if w <= TOLERANCE else " **FAIL**")
    return "n/a (no autograd)" if any("grad" in r for r in case_res.values()) else "—"


def summary_table(all_results):
    head = [
        "case",
        "hand",
        "fastgrad compiled",
        "fastgrad pure",
        "autograd",
        "speed-up compiled",
        "speed-up pure",
        "compiled / hand",
        "PERF.md target (compiled)",
        "peak memory compiled vs autograd",
        "max rel err",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for cid, res in all_results.items():
        cp, ap = (res.get(i, {}).get("peak") for i in ("fastgrad-compiled", "autograd"))
        mem = "—"
        if cp is not None or ap is not None:
            r = memory_ratio(res, "fastgrad-compiled")
            mem = f"{fmt_bytes(cp)} vs {fmt_bytes(ap)}" + (f" ({r:.2g}x)" if r else "")
        row = [TITLES.get(cid, cid)]
        row += [time_cell(res.get(i)) for i in ("hand", "fastgrad-compiled", "fastgrad-pure", "autograd")]
        row += [
            fmt_x(speedup(res, "fastgrad-compiled")),
            fmt_x(speedup(res, "fastgrad-pure")),
            fmt_x(over_hand(res, "fastgrad-compiled")),
            target_cell(cid, res),
            mem,
            worst_err(res),
        ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def scaling_table(all_results):
    sizes = [c for c in asv_scenarios.SCALING if c in all_results]
    if not sizes:
        return None
    impls = [i for i in SCALING_IMPLS if any(i in all_results[c] for c in sizes)]
    head = ["primitives"] + [f"{i}: ns per primitive (min–max)" for i in impls]
    if set(impls) == set(SCALING_IMPLS):
        head.append("speed-up compiled")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in sizes:
        row = [f"10^{len(str(asv_scenarios.PRIMITIVES[c])) - 1}"]
        for i in impls:
            res = all_results[c].get(i)
            if res and res.get("times"):
                m, lo, hi = (fmt_ns(v) for v in per_primitive(res, c))
                row.append(f"{m} ({lo}–{hi})")
            else:
                row.append("error" if res and "error" in res else "—")
        if len(head) > len(impls) + 1:
            row.append(fmt_x(speedup(all_results[c], "fastgrad-compiled")))
        lines.append("| " + " | ".join(row) + " |")
    row = ["**10^6 / 10^4**"]
    for i in impls:
        r = scaling_ratio(all_results, i)
        bound = f"target ≤ {SCALING_BOUND}x" if i == "fastgrad-compiled" else f"issue quotes {SCALING_AUTOGRAD}x"
        row.append("—" if r is None else f"**{r:.2f}x** ({bound})")
    if len(head) > len(impls) + 1:
        row.append("")
    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def memory_table(all_results):
    cases = [c for c in ("W5", "W9", "W9-recompute") if c in all_results]
    if not cases:
        return None
    lines = [
        "| case | fastgrad compiled | fastgrad pure | autograd | compiled / autograd "
        "| pure / autograd | target (compiled) |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in cases:
        res = all_results[c]
        bound = dict(TARGETS[c])["memory"]
        rc, rp = memory_ratio(res, "fastgrad-compiled"), memory_ratio(res, "fastgrad-pure")
        peaks = [fmt_bytes(res.get(i, {}).get("peak")) for i in ("fastgrad-compiled", "fastgrad-pure", "autograd")]
        ok = mark(target_met("memory", rc, bound))
        lines.append(f"| {TITLES[c]} | " + " | ".join(peaks) + f" | {fmt_x(rc)} | {fmt_x(rp)} | ≤ {bound:g}x {ok} |")
    return "\n".join(lines)


def checks(all_results):
    """[(description, value text, ok or None)] for every acceptance check that could be made."""
    out = []
    for cid, res in all_results.items():
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
            if "error" in r:
                out.append((f"{cid}: {impl} ran", "error", False))
        errs = {i: r["rel_err"] for i, r in res.items() if i != "autograd" and r.get("rel_err") is not None}
        if errs:
            worst = max(errs.values())
            out.append(
                (
                    f"{cid}: gradients of {', '.join(errs)} vs autograd's, rel err ≤ 1e-10",
                    f"worst {worst:.1e}",
                    worst <= TOLERANCE,
                )
            )
    r = scaling_ratio(all_results, "fastgrad-compiled")
    if r is not None:
        out.append(
            (
                f"scaling: fastgrad-compiled ns/primitive at 10^6 ≤ {SCALING_BOUND} x at 10^4",
                f"{r:.2f}x",
                r <= SCALING_BOUND,
            )
        )
    return out


def checks_section(all_results):
    cs = checks(all_results)
    failed = [c for c in cs if c[2] is False]
    head = f"{len(cs) - len(failed)} of {len(cs)} checks pass" + (
        "." if not failed else f"; missed: {', '.join(c[0] for c in failed)}."
    )
    lines = ["| check | value | |", "|---|---|---|"]
    lines += [f"| {d} | {v} | {mark(ok)} |" for d, v, ok in cs]
    return head + "\n\n" + "\n".join(lines)


def details(all_results):
    lines = [
        "| case | implementation | rounds | calls/round | first call | median | min | max "
        "| peak (tracemalloc) | rel err vs autograd | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cid, res in all_results.items():
        for impl, r in res.items():
            if "error" in r:
                lines.append(f"| {cid} | {impl} | | | | | | | | | {r['error'][:200]} |")
                continue
            if not r["times"]:
                continue
            err = "—" if r.get("rel_err") is None else "(reference)" if impl == "autograd" else f"{r['rel_err']:.1e}"
            calls = f"{min(r['calls'])}–{max(r['calls'])}"
            note = ", ".join(f"{k}={v}" for k, v in r["info"].items())
            if cid in NO_MEMORY:
                note += ", peak not measured"
            lines.append(
                f"| {cid} | {impl} | {len(r['times'])} | {calls} | "
                f"{fmt_time(r['first_call'])} | {fmt_time(median(r))} | "
                f"{fmt_time(min(r['times']))} | {fmt_time(max(r['times']))} | "
                f"{fmt_bytes(r['peak'])} | {err} | {note} |"
            )
    return "\n".join(lines)


# -------------------------------------------------------------------------------------- chart


def write_chart(all_results, path, subtitle):
    """Horizontal bars: speed-up over autograd per case, log scale.  Returns None when written,
    else the reason it was skipped."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"matplotlib is not installed ({e})"
    series = [
        ("fastgrad-compiled", "fastgrad compiled", "#1f77b4"),
        ("fastgrad-pure", "fastgrad pure", "#9ecae1"),
        ("hand", "hand-written NumPy (floor)", "#bbbbbb"),
    ]
    cases = [c for c, res in all_results.items() if any(speedup(res, i) for i, _, _ in series)]
    if not cases:
        return "no case has both autograd and another implementation"
    present = [s for s in series if any(speedup(all_results[c], s[0]) for c in cases)]
    n, k = len(cases), len(present)
    height = 0.8 / k
    fig, ax = plt.subplots(figsize=(9, 0.22 * n * max(2, k) + 1.6))
    values = []
    for j, (impl, label, color) in enumerate(present):
        ys = [i + (j - (k - 1) / 2) * height for i in range(n)]
        vs = [speedup(all_results[c], impl) for c in cases]
        values += [v for v in vs if v]
        # bars start at 1x (autograd), so a slowdown points left
        ax.barh(
            [y for y, v in zip(ys, vs) if v],
            [v - 1.0 for v in vs if v],
            height=height,
            color=color,
            label=label,
            left=1.0,
        )
        for y, v in zip(ys, vs):
            if v:  # the label just past the bar's end, on whichever side of 1x it ends
                ax.text(
                    v * 1.04 if v >= 1 else v / 1.04,
                    y,
                    f"{v:.3g}x",
                    va="center",
                    ha="left" if v >= 1 else "right",
                    fontsize=7,
                )
    # PERF.md speed-up targets for the compiled engine
    top = -(k - 1) / 2 * height  # the compiled bar's offset in its group
    tx = [(i + top, bound) for i, c in enumerate(cases) for kind, bound in TARGETS.get(c, []) if kind == "speedup"]
    if tx:
        ax.scatter(
            [b for _, b in tx],
            [y for y, _ in tx],
            marker="|",
            s=120,
            color="#d62728",
            zorder=3,
            label="PERF.md target (compiled)",
        )
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    lo = min(values + [1.0])
    ax.set_xlim(lo / (1.6 if lo >= 1 else 2.5), max(values + [1.0]) * 2.5)
    ax.set_yticks(range(n))
    ax.set_yticklabels([SHORT_TITLES.get(c, c) for c in cases])
    ax.invert_yaxis()
    ax.set_xlabel("speed-up over autograd 1.9.1 (autograd median / median, log scale; 1x = autograd)")
    ax.set_title("Gradient speed-up over autograd per case\n" + subtitle, fontsize=9)
    ax.legend(loc="lower right", fontsize=7)
    ax.grid(axis="x", which="both", alpha=0.25)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return None


# ---------------------------------------------------------------------------------------- main


def select_cases(spec, quick):
    """Case ids from a comma-separated list of ids and groups (W, asv, scaling, all)."""
    out = []
    for item in spec.split(","):
        item = item.strip()
        if item == "all":
            ids = [c for c in CASES if not (quick and c in QUICK_SKIPS)]
        elif item in GROUPS:
            ids = [c for c in GROUPS[item] if not (quick and c in QUICK_SKIPS)]
        elif item in CASES:
            ids = [item]
        else:
            raise ValueError(item)
        out += [c for c in ids if c not in out]
    return [c for c in CASES if c in out]


def machine_line():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}"


def versions(all_results):
    v = {}
    for res in all_results.values():
        for impl, r in res.items():
            if "info" in r and "version" in r["info"]:
                v.setdefault(impl.split("-")[0], r["info"]["version"])
    return ", ".join(f"{k} {val}" for k, val in sorted(v.items()))


def chart_path(md_path):
    """results/latest.md -> results/speedup.png, quick.md -> quick.png, X.md -> X.png."""
    d, name = os.path.split(md_path)
    return os.path.join(d, "speedup.png" if name == "latest.md" else os.path.splitext(name)[0] + ".png")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cases",
        "--workloads",
        dest="cases",
        default="all",
        help="comma-separated case ids (" + ",".join(CASES) + ") or groups (W, asv, scaling, all)",
    )
    ap.add_argument(
        "--impls",
        default=",".join(ALL_IMPLS),
        help="comma-separated subset of "
        + ",".join(ALL_IMPLS)
        + " (the scaling chain runs only "
        + ",".join(SCALING_IMPLS)
        + ")",
    )
    ap.add_argument("--rounds", type=int, default=None, help="rounds per implementation (5)")
    ap.add_argument("--min-time", type=float, default=None, help="seconds of repeated calls per round (0.2)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: 3 rounds of >= 0.05 s, chain-1e6 left out unless named, "
        "written to results/quick.* (not a PERF.md measurement)",
    )
    ap.add_argument(
        "--steady-malloc",
        action="store_true",
        help="keep freed memory in the process (glibc MALLOC_TRIM_THRESHOLD_ and "
        "MALLOC_MMAP_THRESHOLD_ = 1 GiB) so page faults do not decide big-array "
        "timings",
    )
    ap.add_argument(
        "--out",
        default=None,
        help="markdown path (results/latest.md; results/quick.md with --quick); the JSON and the chart go next to it",
    )
    ap.add_argument("--no-chart", action="store_true", help="do not draw the PNG chart")
    ap.add_argument(
        "--rerender",
        metavar="JSON",
        help="measure nothing: rewrite the markdown and chart from a saved JSON "
        "(e.g. results/latest.json; written next to it unless --out)",
    )
    a = ap.parse_args(argv)

    try:
        cids = select_cases(a.cases, a.quick)
    except ValueError as e:
        ap.error(f"unknown case: {e}")
    impls = [i for i in ALL_IMPLS if i in a.impls.split(",")]
    unknown = set(a.impls.split(",")) - set(ALL_IMPLS)
    if unknown:
        ap.error(f"unknown implementation: {', '.join(sorted(unknown))}")
    rounds = a.rounds or (3 if a.quick else 5)
    min_time = a.min_time or (0.05 if a.quick else 0.2)
    if a.rerender:
        out = a.out or os.path.splitext(a.rerender)[0] + ".md"
        return rerender(a.rerender, out, None if a.no_chart else chart_path(out))
    out = a.out or os.path.join(HERE, "results", "quick.md" if a.quick else "latest.md")
    stem = os.path.splitext(out)[0]
    chart = chart_path(out)

    if a.steady_malloc:
        run.Worker.extra_env = run.STEADY_MALLOC_ENV
    t_start, load_start = time.time(), os.getloadavg()

    def log(msg):
        print(f"[{time.time() - t_start:6.1f} s] {msg}", file=sys.stderr, flush=True)

    all_results = {}
    with tempfile.TemporaryDirectory(prefix="fastgrad-bench-") as tmpdir:
        for cid in cids:
            case_impls = [i for i in impls if cid not in asv_scenarios.SCALING or i in SCALING_IMPLS]
            if not case_impls:
                continue
            log(f"{cid}: {', '.join(case_impls)}")
            all_results[cid] = run.measure_case(
                cid, case_impls, rounds, min_time, tmpdir, memory=cid not in NO_MEMORY, log=log
            )
            run.check_errors(cid, all_results[cid], tmpdir)
            for impl, r in all_results[cid].items():
                if r.get("times"):
                    log(
                        f"  {cid} {impl}: median {fmt_time(median(r))}, rel err "
                        + ("—" if r.get("rel_err") is None else f"{r['rel_err']:.1e}")
                    )
    elapsed, load_end = time.time() - t_start, os.getloadavg()

    import numpy

    cmd = " ".join(["python benchmarks/report.py"] + list(sys.argv[1:] if argv is None else argv))
    meta = {
        "command": cmd,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "rounds": rounds,
        "min_time": min_time,
        "quick": a.quick,
        "steady_malloc": a.steady_malloc,
        "elapsed_s": elapsed,
        "loadavg_start": load_start,
        "loadavg_end": load_end,
        "machine": machine_line(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
    }
    for res in all_results.values():
        for r in res.values():
            r.pop("grad", None)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(stem + ".json", "w") as f:
        json.dump({**meta, "results": all_results}, f, indent=1)
    return render(all_results, meta, out, None if a.no_chart else chart)


def render(all_results, meta, out, chart):
    """Write the markdown report to ``out`` and the chart to ``chart`` (None: no chart)."""
    rounds, min_time = meta["rounds"], meta["min_time"]
    kind = "quick smoke run, not a measurement" if meta["quick"] else "PERF.md method"
    malloc = "steady (`--steady-malloc`)" if meta["steady_malloc"] else "default (glibc trims and mmaps freed memory)"
    cpus = meta.get("cpus") or os.cpu_count() or 1
    load_start, load_end = meta["loadavg_start"], meta["loadavg_end"]
    subtitle = f"{meta['date']}, {cpus} CPUs, {rounds} rounds of >= {min_time} s, medians" + (
        ", QUICK" if meta["quick"] else ""
    )
    chart_note = "--no-chart" if chart is None else write_chart(all_results, chart, subtitle)
    header = "\n".join(
        [
            f"# fastgrad benchmark report ({kind})",
            "",
            f"`{meta['command']}` — {meta['date']}, took {meta['elapsed_s'] / 60:.1f} min.",
            "",
            f"- Method: each implementation in its own worker process, {rounds} alternated "
            f"round{'s' if rounds != 1 else ''} of "
            f">= {min_time} s of repeated gradient calls (at least one call) per implementation, "
            "BLAS on one thread, garbage collector on; time per call = round total / calls; "
            "medians (min–max over the rounds), ratios of medians. Peak memory: tracemalloc peak of "
            "one gradient call after the rounds, minus what was traced before it (not measured for "
            "the scaling chain). Gradients compared with autograd's (relative error "
            "max|g - g_ag| / max|g_ag| per array, must be <= 1e-10).",
            f"- Machine: {meta['machine']}; Python {meta['python']}, NumPy "
            f"{meta['numpy']}, {versions(all_results)}; glibc malloc {malloc}.",
            f"- Load average (1/5/15 min) at start {'/'.join(f'{x:.2f}' for x in load_start)}, at "
            f"end {'/'.join(f'{x:.2f}' for x in load_end)}"
            + (
                " — the machine was busy: trust ratios more than absolute times."
                if max(load_start[0], load_end[0]) > 0.5 * cpus
                else "."
            ),
        ]
    )
    parts = [header, "## Speed-up over autograd"]
    if chart_note is None:
        parts.append(f"![speed-up over autograd per case]({os.path.basename(chart)})")
    else:
        parts.append(f"(chart skipped: {chart_note})")
    parts += ["## Summary", summary_table(all_results)]
    st = scaling_table(all_results)
    if st:
        parts += ["## Cost per primitive vs graph size (chain `x = x * 1.0000001`, GC on)", st]
    mt = memory_table(all_results)
    if mt:
        parts += ["## Peak memory of one gradient call (tracemalloc)", mt]
    parts += [
        "## Acceptance checks (PERF.md targets, correctness)",
        checks_section(all_results),
        "## Details",
        details(all_results),
    ]
    text = "\n\n".join(parts) + "\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        f.write(text)
    print(
        f"wrote {out}"
        + ("" if chart_note else f" and {chart}")
        + (f" (chart skipped: {chart_note})" if chart_note else ""),
        file=sys.stderr,
    )
    return 0


def rerender(json_path, out, chart):
    """Rewrite the markdown and the chart from a saved JSON, without measuring again."""
    with open(json_path) as f:
        data = json.load(f)
    import numpy

    meta = {
        "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(os.path.getmtime(json_path))),
        "machine": machine_line(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "command": "python benchmarks/report.py (options not recorded)",
        "quick": False,
        "steady_malloc": False,
        "elapsed_s": float("nan"),
        "loadavg_start": [float("nan")] * 3,
        "loadavg_end": [float("nan")] * 3,
    }
    meta.update({k: v for k, v in data.items() if k != "results"})
    return render(data["results"], meta, out, chart)


if __name__ == "__main__":
    sys.exit(main())
