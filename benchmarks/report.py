"""Benchmark report: fastgrad (compiled and pure), autograd, hand-written NumPy and optional peers.

    python benchmarks/report.py                    # the full report (see README.md for its length)
    python benchmarks/report.py --quick            # smoke run: results/quick.md, quick.png
    python benchmarks/report.py --cases W1,W5,asv  # a subset (ids or groups W, asv, scaling, mixed)
    python benchmarks/report.py --mode isolated    # one of the two modes only
    python benchmarks/report.py --impls fastgrad-compiled,hand,torch
    python benchmarks/report.py --steady-malloc    # freed memory kept in-process (see README)
    python benchmarks/report.py --rerender benchmarks/results/latest.json   # redraw only

(``python benchmarks/run.py`` takes the same options and does the same thing.)

Cases: PERF.md's workloads W1-W9, W9 again with fastgrad inside ``fastgrad.recompute()``
(``W9-recompute``; the others run W9 itself), autograd's asv scenarios (asv-short, asv-long,
asv-fan), the scaling chain (``x = x * 1.0000001`` 10^4, 10^5 and 10^6 times; fastgrad-compiled
and autograd only, no peak-memory call) and the mixed case (mixed.py: a small gradient before and
after gradients over 10^6 elements, in one process).  Implementations: fastgrad-compiled,
fastgrad-pure, autograd, hand, and the peers of peers/ that are installed (PyTorch eager, MyGrad,
JAX without and with jit).

Two modes (run.py): **one process** (each implementation runs every case one after another in a
single worker, in a rotating order per round, as users run them) gives the report's tables;
**isolated** (each case in fresh workers) is the second column and the modes table.

Writes ``benchmarks/results/latest.md`` (summary table with PERF.md's targets, issue #16's
acceptance with the mixed case, the peers, the two modes side by side, per-primitive scaling, peak
memory, acceptance checks, details), ``latest.json`` (raw numbers) and ``speedup.png`` (speed-up
over autograd per case; skipped, and said so, without matplotlib).
"""

import argparse
import json
import os
import platform
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# None of these imports an autodiff library.
import asv_scenarios  # noqa: E402
import mixed  # noqa: E402
import peers  # noqa: E402
import run  # noqa: E402
import workloads  # noqa: E402
from _format import fmt_time, median, met  # noqa: E402
from _tables import (  # noqa: E402
    NO_MEMORY,
    SCALING_IMPLS,
    SHORT_TITLES,
    TARGETS,
    checks,
    checks_section,
    compare_table,
    details,
    issue16_checks,
    jit_table,
    memory_table,
    mixed_table,
    modes_table,
    peers_table,
    scaling_table,
    speedup,
    summary_table,
)

ALL_IMPLS = run.ALL_IMPLS  # the alternation order
CORE_IMPLS = run.CORE_IMPLS
QUICK_SKIPS = ("chain-1e6",)  # --quick leaves these out unless named
MIXED = "mixed"
GROUPS = {
    "W": tuple(workloads.WORKLOADS) + tuple(workloads.VARIANTS),
    "asv": asv_scenarios.ASV,
    "scaling": asv_scenarios.SCALING,
}
CASES = GROUPS["W"] + GROUPS["asv"] + GROUPS["scaling"]
MODES = ("one-process", "isolated")
QUICK_MIXED_BIG_CALLS = 10


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
        ("torch", "PyTorch eager", "#ff7f0e"),
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
    """(case ids, mixed?) from a comma-separated list of ids and groups (W, asv, scaling, mixed,
    all)."""
    out, with_mixed = [], False
    for item in spec.split(","):
        item = item.strip()
        if item == MIXED:
            with_mixed = True
            continue
        if item == "all":
            ids, with_mixed = [c for c in CASES if not (quick and c in QUICK_SKIPS)], True
        elif item in GROUPS:
            ids = [c for c in GROUPS[item] if not (quick and c in QUICK_SKIPS)]
        elif item in CASES:
            ids = [item]
        else:
            raise ValueError(item)
        out += [c for c in ids if c not in out]
    return [c for c in CASES if c in out], with_mixed


def case_impls(cid, impls):
    """The implementations that run case ``cid``: the scaling chain only fastgrad-compiled and
    autograd, the peers only the cases they implement."""
    if cid in asv_scenarios.SCALING:
        return [i for i in impls if i in SCALING_IMPLS]
    return [i for i in impls if i not in peers.PEERS or cid in peers.CASES]


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


def versions(modes, mixed_res=None):
    v = {}
    sources = [r for results in modes.values() for res in results.values() for r in res.items()]
    sources += list((mixed_res or {}).items())
    for impl, r in sources:
        if "info" in r and "version" in r["info"]:
            v.setdefault(impl.split("-")[0], r["info"]["version"])
    return ", ".join(f"{k} {val}" for k, val in sorted(v.items()))


def chart_path(md_path):
    """results/latest.md -> results/speedup.png, quick.md -> quick.png, X.md -> X.png."""
    d, name = os.path.split(md_path)
    return os.path.join(d, "speedup.png" if name == "latest.md" else os.path.splitext(name)[0] + ".png")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--cases",
        "--workloads",
        dest="cases",
        default="all",
        help="comma-separated case ids (" + ",".join(CASES) + ") or groups (W, asv, scaling, mixed, all)",
    )
    ap.add_argument(
        "--impls",
        default=None,
        help="comma-separated subset of " + ",".join(ALL_IMPLS) + " (default: all, the peers that are installed; "
        "the scaling chain runs only " + ",".join(SCALING_IMPLS) + ")",
    )
    ap.add_argument(
        "--isolated-impls",
        default=",".join(CORE_IMPLS),
        help="the implementations the isolated mode runs, among --impls (default: " + ",".join(CORE_IMPLS) + ")",
    )
    ap.add_argument(
        "--mode",
        choices=("both",) + MODES,
        default="both",
        help="one-process (the report's tables), isolated (fresh workers per case), or both (default)",
    )
    ap.add_argument("--rounds", type=int, default=None, help="rounds per implementation (5)")
    ap.add_argument("--min-time", type=float, default=None, help="seconds of repeated calls per round (0.2)")
    ap.add_argument(
        "--peer-budget",
        type=float,
        default=run.PEER_BUDGET,
        help=f"a peer's case stops after the round that takes its rounds past this many seconds ({run.PEER_BUDGET:g})",
    )
    ap.add_argument(
        "--mixed-big-calls",
        type=int,
        default=None,
        help=f"W4 gradients in the mixed case's first round, for the RSS check ({mixed.BIG_CALLS}; "
        f"{QUICK_MIXED_BIG_CALLS} with --quick)",
    )
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
    ap.add_argument(
        "--compare",
        metavar="JSON",
        help="an earlier run's JSON: add a table of fastgrad's medians then and now, mode by mode "
        "(a JSON from before the one-process mode counts as isolated)",
    )
    ap.add_argument("--no-chart", action="store_true", help="do not draw the PNG chart")
    ap.add_argument(
        "--rerender",
        metavar="JSON",
        help="measure nothing: rewrite the markdown and chart from a saved JSON "
        "(e.g. results/latest.json; written next to it unless --out)",
    )
    return ap, ap.parse_args(argv)


def choose_impls(ap, spec):
    """(implementations to run, {peer: why skipped}) from --impls (None: all, installed peers)."""
    asked = ALL_IMPLS if spec is None else [i.strip() for i in spec.split(",")]
    unknown = set(asked) - set(ALL_IMPLS)
    if unknown:
        ap.error(f"unknown implementation: {', '.join(sorted(unknown))}")
    skipped = {p: peers.missing(p) for p in asked if p in peers.PEERS and peers.missing(p)}
    return [i for i in ALL_IMPLS if i in asked and i not in skipped], skipped


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap, a = parse_args(argv)
    try:
        cids, with_mixed = select_cases(a.cases, a.quick)
    except ValueError as e:
        ap.error(f"unknown case: {e}")
    impls, skipped = choose_impls(ap, a.impls)
    isolated_impls = [i for i in impls if i in a.isolated_impls.split(",")]
    rounds = a.rounds or (3 if a.quick else 5)
    min_time = a.min_time or (0.05 if a.quick else 0.2)
    big_calls = a.mixed_big_calls or (QUICK_MIXED_BIG_CALLS if a.quick else mixed.BIG_CALLS)
    modes = MODES if a.mode == "both" else (a.mode,)
    if a.rerender:
        out = a.out or os.path.splitext(a.rerender)[0] + ".md"
        return rerender(a.rerender, out, None if a.no_chart else chart_path(out), a.compare)
    out = a.out or os.path.join(HERE, "results", "quick.md" if a.quick else "latest.md")
    stem = os.path.splitext(out)[0]

    if a.steady_malloc:
        run.Worker.extra_env = run.STEADY_MALLOC_ENV
    t_start, load_start = time.time(), os.getloadavg()

    def log(msg):
        print(f"[{time.time() - t_start:6.1f} s] {msg}", file=sys.stderr, flush=True)

    for p, why in skipped.items():
        log(f"{p}: skipped ({why})")
    measured, mixed_res, rss, timings = {}, None, {}, {}
    with tempfile.TemporaryDirectory(prefix="fastgrad-bench-") as tmpdir:
        if "one-process" in modes and cids:
            t0 = time.time()
            impls_of = {c: case_impls(c, impls) for c in cids}
            impls_of = {c: v for c, v in impls_of.items() if v}
            results, rss = run.measure_one_process(
                impls_of,
                rounds,
                min_time,
                tmpdir,
                memory_cases=set(cids) - NO_MEMORY,
                log=log,
                peer_budget=a.peer_budget,
            )
            for cid, res in results.items():
                run.check_errors(cid, res, tmpdir)
            measured["one-process"] = results
            timings["one-process"] = time.time() - t0
        if "isolated" in modes and cids:
            t0 = time.time()
            measured["isolated"] = {}
            for cid in cids:
                ci = case_impls(cid, isolated_impls)
                if not ci:
                    continue
                log(f"isolated {cid}: {', '.join(ci)}")
                res = run.measure_case(
                    cid, ci, rounds, min_time, tmpdir, memory=cid not in NO_MEMORY, log=log, peer_budget=a.peer_budget
                )
                run.check_errors(cid, res, tmpdir)
                measured["isolated"][cid] = res
            timings["isolated"] = time.time() - t0
        if with_mixed:
            t0 = time.time()
            log(f"mixed: {', '.join(impls)}")
            mixed_res = mixed.measure_mixed(impls, rounds, min_time, tmpdir, big_calls=big_calls, log=log)
            timings["mixed"] = time.time() - t0
        for results in measured.values():
            for cid, res in results.items():
                for impl, r in res.items():
                    if r.get("times"):
                        log(
                            f"  {cid} {impl}: median {fmt_time(median(r))}, rel err "
                            + ("—" if r.get("rel_err") is None else f"{r['rel_err']:.1e}")
                        )
                    r.pop("grad", None)
    elapsed, load_end = time.time() - t_start, os.getloadavg()

    import numpy

    cmd = " ".join(["python benchmarks/report.py"] + list(argv))
    meta = {
        "command": cmd,
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "rounds": rounds,
        "min_time": min_time,
        "quick": a.quick,
        "steady_malloc": a.steady_malloc,
        "elapsed_s": elapsed,
        "mode_s": timings,
        "loadavg_start": load_start,
        "loadavg_end": load_end,
        "machine": machine_line(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "peers_skipped": skipped,
        "peer_budget": a.peer_budget,
    }
    data = {**meta, "modes": measured, "mixed": mixed_res, "rss": rss}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(stem + ".json", "w") as f:
        json.dump(data, f, indent=1)
    return render(data, out, None if a.no_chart else chart_path(out), a.compare)


def header(data, modes):
    meta = data
    rounds, min_time = meta["rounds"], meta["min_time"]
    kind = "quick smoke run, not a measurement" if meta["quick"] else "PERF.md method"
    malloc = "steady (`--steady-malloc`)" if meta["steady_malloc"] else "default (glibc trims and mmaps freed memory)"
    cpus = meta.get("cpus") or os.cpu_count() or 1
    load_start, load_end = meta["loadavg_start"], meta["loadavg_end"]
    took = f"took {meta['elapsed_s'] / 60:.1f} min"
    if meta.get("mode_s"):
        took += " (" + ", ".join(f"{k} {v / 60:.1f} min" for k, v in meta["mode_s"].items()) + ")"
    main_mode = "one-process" if "one-process" in modes else "isolated"
    skipped = meta.get("peers_skipped") or {}
    lines = [
        f"# fastgrad benchmark report ({kind})",
        "",
        f"`{meta['command']}` — {meta['date']}, {took}.",
        "",
        f"- Method: each implementation in its own worker process, {rounds} alternated "
        f"round{'s' if rounds != 1 else ''} of "
        f">= {min_time} s of repeated gradient calls (at least one call) per implementation and case, "
        "BLAS on one thread, garbage collector on; time per call = round total / calls; "
        "medians (min–max over the rounds), ratios of medians. Peak memory: tracemalloc peak of "
        "one gradient call after the rounds, minus what was traced before it (not measured for "
        "the scaling chain, nor for PyTorch and JAX, whose buffers NumPy does not allocate). Gradients "
        "compared with autograd's (relative error max|g - g_ag| / max|g_ag| per array, must be <= 1e-10).",
        "- Modes: **one process** — each implementation runs every case one after another in one "
        "worker, the cases in a rotated order in each round (as a user's program runs them); "
        "**isolated** — each case in fresh workers. "
        f"Tables below are from the {main_mode} mode"
        + (", the isolated mode as a second column and in its own table." if len(modes) > 1 else "."),
        f"- Peers (other systems, each in its own idiom: benchmarks/peers/): a peer's case stops after the "
        f"round that takes its rounds past {meta.get('peer_budget', run.PEER_BUDGET):g} s (details give the rounds)"
        + ("; not installed, skipped: " + ", ".join(f"{p} ({w})" for p, w in skipped.items()) if skipped else "")
        + ".",
        f"- Machine: {meta['machine']}; Python {meta['python']}, NumPy "
        f"{meta['numpy']}, {versions(data['modes'], data.get('mixed'))}; glibc malloc {malloc}.",
        f"- Load average (1/5/15 min) at start {'/'.join(f'{x:.2f}' for x in load_start)}, at "
        f"end {'/'.join(f'{x:.2f}' for x in load_end)}"
        + (
            " — the machine was busy: trust ratios more than absolute times."
            if max(load_start[0], load_end[0]) > 0.5 * cpus
            else "."
        ),
    ]
    return "\n".join(lines)


def load_modes(json_path):
    """{mode: results} and a label of a saved report JSON (older ones: {"results": isolated})."""
    with open(json_path) as f:
        data = json.load(f)
    label = f"`{os.path.basename(json_path)}` ({data.get('date', 'date not recorded')})"
    return data.get("modes") or {"isolated": data.get("results", {})}, label


def render(data, out, chart, compare=None):
    """Write the markdown report to ``out`` and the chart to ``chart`` (None: no chart); with
    ``compare`` (a saved JSON), a table against that run."""
    modes = data["modes"]
    main_mode = "one-process" if "one-process" in modes else "isolated"
    main_res = modes.get(main_mode, {})
    isolated = modes.get("isolated") if main_mode == "one-process" else None
    mixed_res = data.get("mixed")
    cpus = data.get("cpus") or os.cpu_count() or 1
    subtitle = (
        f"{data['date']}, {cpus} CPUs, {data['rounds']} rounds of >= {data['min_time']} s, medians, {main_mode}"
        + (", QUICK" if data["quick"] else "")
    )
    chart_note = "--no-chart" if chart is None else write_chart(main_res, chart, subtitle)
    parts = [header(data, list(modes)), "## Speed-up over autograd"]
    if chart_note is None:
        parts.append(f"![speed-up over autograd per case]({os.path.basename(chart)})")
    else:
        parts.append(f"(chart skipped: {chart_note})")
    if main_res:
        parts += [f"## Summary ({main_mode} mode)", summary_table(main_res, isolated)]
    c16 = issue16_checks(main_res, mixed_res)
    parts += ["## Issue #16 acceptance (fastgrad compiled" + (f", {main_mode} mode)" if main_res else ")")]
    mt = mixed_table(mixed_res)
    if mt:
        n = next((r.get("big_calls") for r in mixed_res.values() if r.get("big_calls")), None)
        parts += [
            "Mixed case (mixed.py): in a fresh process per round, `grad(lambda a: a**2)(2.0)` timed, one "
            f"W4 gradient (10^6 elements), the small gradient timed again; in the first round {n} W4 "
            "gradients in all, then the small gradient once more, with the resident set size before the "
            "first W4 gradient, after it and after the last.",
            mt,
        ]
    parts.append(checks_section(c16, wording=met))
    pt = peers_table(main_res)
    if pt:
        parts += [f"## Against other systems ({main_mode} mode)", pt]
        jt = jit_table(main_res)
        if jt:
            parts += ["JAX jit: the first call traces and compiles (reported here, never inside the median):", jt]
    if isolated:
        mt2 = modes_table(main_res, isolated)
        if mt2:
            parts += ["## One process vs isolated (medians; ratio > 1: slower in one process)", mt2]
    if compare:
        ct = compare_table(modes, *load_modes(compare))
        parts += ["## Against an earlier run (fastgrad's medians)", ct or "(no case and mode in common)"]
    st = scaling_table(main_res)
    if st:
        parts += ["## Cost per primitive vs graph size (chain `x = x * 1.0000001`, GC on)", st]
    mt = memory_table(main_res)
    if mt:
        parts += ["## Peak memory of one gradient call (tracemalloc)", mt]
    parts += [
        "## Acceptance checks (PERF.md targets, correctness)",
        checks_section(checks(main_res)),
        "## Details",
        details(modes, data.get("rss")),
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


def rerender(json_path, out, chart, compare=None):
    """Rewrite the markdown and the chart from a saved JSON, without measuring again.  A JSON of
    the report before the one-process mode existed ({"results": ...}) is its isolated mode."""
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
        "rounds": "?",
        "min_time": "?",
        "quick": False,
        "steady_malloc": False,
        "elapsed_s": float("nan"),
        "loadavg_start": [float("nan")] * 3,
        "loadavg_end": [float("nan")] * 3,
    }
    meta.update(data)
    if "modes" not in meta:
        meta["modes"] = {"isolated": meta.pop("results", {})}
    return render(meta, out, chart, compare)


if __name__ == "__main__":
    sys.exit(main())
