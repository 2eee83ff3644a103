"""Downstream fits side by side: autograd 1.9.1 vs fastgrad bound as autograd (issue #20).

    python benchmarks/downstream/run.py                      # the table (about 10 minutes)
    python benchmarks/downstream/run.py --workloads weibull,pymanopt-grassmann-tr
    python benchmarks/downstream/run.py --rounds 7 --min-time 1.0
    python benchmarks/downstream/run.py --quick              # smoke run: writes downstream_quick.*

Run it in a venv with the pinned libraries and fastgrad installed (``setup_venv.sh``).  Method
(../shared PERF.md): each implementation in its own worker process (worker.py), both started and
warmed up (one fit each after the first) before any timing; then rounds alternate autograd,
fastgrad, autograd, ...; a round is whole fits repeated for at least ``--min-time`` seconds (at
least one fit), its time total / fits.  BLAS pinned to one thread, the garbage collector on.
Fitted values are compared (workloads.TOL).  A workload that fails under an implementation is
reported with its error, never dropped.  Writes benchmarks/results/downstream.md and .json.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "results")
sys.path.insert(0, HERE)
import workloads  # noqa: E402  (imports numpy only; the libraries load in the workers)

IMPLS = ("autograd", "fastgrad")
BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}


class WorkerDied(RuntimeError):
    pass


class Worker:
    def __init__(self, impl, workload, tmpdir):
        self.impl = impl
        self.summary_path = os.path.join(tmpdir, f"{workload}-{impl}.npz")
        self.log_path = os.path.join(tmpdir, f"{workload}-{impl}.log")
        self.log = open(self.log_path, "w")
        env = dict(os.environ, **BLAS_ENV, MPLBACKEND="Agg")
        env.pop("FASTGRAD_PURE", None)
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "worker.py"), impl, workload, self.summary_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
        )

    def ask(self, **msg):
        if msg:
            try:
                self.proc.stdin.write(json.dumps(msg) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.log.flush()
            with open(self.log_path) as f:
                tail = f.read().strip().splitlines()[-3:] or ["(no output)"]
            raise WorkerDied(f"worker died (exit {self.proc.returncode}): " + " / ".join(tail))
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerDied(reply["error"] + "  [at " + " <- ".join(reversed(reply.get("traceback", []))) + "]")
        return reply

    def close(self):
        try:
            if self.proc.poll() is None:
                self.ask(cmd="quit")
        except WorkerDied:
            pass
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.proc.wait()
        self.log.close()


def agreement(path_a, path_b):
    """Worst |a - b| / max(1, |a|) over each summary entry (iterations compared for equality)."""
    import numpy as np

    a, b = np.load(path_a), np.load(path_b)
    out = {}
    for key in a.files:
        if key not in b.files or a[key].shape != b[key].shape:
            out[key] = None
            continue
        x, y = a[key].astype(float), b[key].astype(float)
        both_nan = np.isnan(x) & np.isnan(y)
        diff = np.where(both_nan, 0.0, np.abs(x - y) / np.maximum(1.0, np.abs(x)))
        out[key] = float(np.max(diff)) if diff.size else 0.0
    return out


def measure(workload, rounds, min_time, tmpdir, log):
    res = {impl: {"times": [], "fits": []} for impl in IMPLS}
    workers = {}
    for impl in IMPLS:  # started one after the other, so no warm-up competes with another's
        try:
            w = Worker(impl, workload.name, tmpdir)
            workers[impl] = w
            ready = w.ask()
            w.ask(cmd="warmup")
            res[impl].update(
                first_fit=ready["first_fit"],
                versions=ready["versions"],
                blas_threads=ready["blas_threads"],
                gc=ready["gc"],
                summary=w.summary_path,
            )
            log(f"  {impl}: first fit {ready['first_fit']:.3g} s")
        except WorkerDied as e:
            res[impl]["error"] = str(e)
            log(f"  {impl}: FAILED {e}")
            workers.pop(impl).close()
    for r in range(rounds):
        for impl in IMPLS:
            if impl not in workers:
                continue
            try:
                reply = workers[impl].ask(cmd="round", min_time=min_time)
                res[impl]["times"].append(reply["per_fit"])
                res[impl]["fits"].append(reply["fits"])
            except WorkerDied as e:
                res[impl]["error"] = f"in round {r + 1}: {e}"
                workers.pop(impl).close()
    for w in workers.values():
        w.close()
    if all("summary" in res[i] and "error" not in res[i] for i in IMPLS):
        res["agreement"] = agreement(res["autograd"]["summary"], res["fastgrad"]["summary"])
    for impl in IMPLS:
        if res[impl]["times"]:
            t = res[impl]["times"]
            res[impl].update(median=statistics.median(t), min=min(t), max=max(t))
    if all("median" in res[i] and "error" not in res[i] for i in IMPLS):
        res["ratio"] = res["autograd"]["median"] / res["fastgrad"]["median"]
    return res


# ---------------------------------------------------------------------------------------- report


def fmt_time(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def fmt_range(r):
    if "median" not in r:
        return "—"
    return f"{fmt_time(r['median'])} ({fmt_time(r['min'])}–{fmt_time(r['max'])})"


AGREEMENT_GROUPS = (("fitted", "fitted values"), ("derivative", "derivatives"), ("point", "final point"))


def _group(key):
    if key.startswith(("grad", "hvp")):
        return "derivative"
    if key.startswith(("point", "projector", "matrix")):
        return "point"
    return "fitted"


def agreement_text(res):
    """'yes' when every summary entry is within its tolerance, with the worst relative
    difference of each group (fitted values, derivatives at the start, final point)."""
    ag = res.get("agreement")
    if ag is None:
        return "—"
    if any(v is None for v in ag.values()):
        return "**differ** (missing entries or shapes)"
    checked = {k: v for k, v in ag.items() if k != "iterations"}
    ok = all(v <= workloads.tolerance(k) for k, v in checked.items())
    parts = []
    for group, label in AGREEMENT_GROUPS:
        values = [v for k, v in checked.items() if _group(k) == group]
        if values:
            parts.append(f"{label} {max(values):.1e}")
    text = ("yes" if ok else "**NO**") + ": " + ", ".join(parts)
    if ag.get("iterations") not in (None, 0.0):
        text += "; iteration counts differ"
    return text


def acceptance(results):
    """Issue #20's acceptance: no workload but the control slower than autograd, every one
    >= 1.5x, the median over the workloads >= 2.5x.  A failing workload fails each line."""
    ratios, lines = [], []
    failing = [
        w.name for w in workloads.WORKLOADS if w.name in results and w.uses_gradient and "ratio" not in results[w.name]
    ]
    for w in workloads.WORKLOADS:
        if w.name in results and w.uses_gradient and "ratio" in results[w.name]:
            ratios.append((results[w.name]["ratio"], w.name))
    if not ratios and not failing:
        return []
    slower = [n for r, n in ratios if r < 1.0]
    under = [f"{n} ({r:.2f}x)" for r, n in sorted(ratios) if r < 1.5]
    med = statistics.median([r for r, _ in ratios]) if ratios else float("nan")
    fail_note = f"; failing: {', '.join(failing)}" if failing else ""
    lines.append(
        f"- none slower than autograd (control excluded): {'✓' if not slower and not failing else '✗ ' + ', '.join(slower + failing)}"
    )
    lines.append(
        f"- every workload >= 1.5x: {'✓' if not under and not failing else '✗ ' + ', '.join(under) + fail_note}"
    )
    lines.append(
        f"- median over the {len(ratios)} workloads that ran >= 2.5x: {med:.2f}x {'✓' if med >= 2.5 and not failing else '✗'}"
        + (f" (the {len(failing)} failing ones not counted)" if failing else "")
    )
    return lines


def write_report(results, meta, md_path, json_path):
    with open(json_path, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    lines = [
        "# Downstream fits: autograd 1.9.1 vs fastgrad bound as autograd",
        "",
        f"`{meta['command']}` — {meta['date']}, took {meta['duration_min']:.1f} min.",
        "",
        f"- **Provisional**: {meta['provisional']}",
        f"- Method: each implementation in its own worker process (`benchmarks/downstream/worker.py`; fastgrad via "
        f"`fastgrad.install_as_autograd()` before the library is imported, the binding asserted), both warmed up, then "
        f"{meta['rounds']} rounds alternating autograd, fastgrad, ...; a round is whole fits (a new fitter each time) repeated "
        f"for >= {meta['min_time']} s, at least one; time per fit = round total / fits; median (min–max over the rounds); "
        "ratio = autograd median / fastgrad median. BLAS on one thread, garbage collector on.",
        f"- Fitted values: each implementation's first fit summarised (lifelines: params_, log-likelihood, standard errors; "
        f"pymanopt: final cost and the point as a projector or matrix; autograd-gamma: the gradients); agreement is the worst "
        f"|a - b| / max(1, |a|) per group; tolerances: fitted values {workloads.TOL:g}, derivatives (at a fixed start point; autograd-gamma: its gradients) "
        f"{workloads.TOLERANCES['grad']:g}, a manifold optimizer's final point {workloads.TOLERANCES['point']:g} (it is only "
        "determined to within the optimizer's stopping tolerance: last-bit differences in a gradient make the iterates drift "
        "apart until the stop).",
        f"- Machine: {meta['machine']}; {meta['versions']}.",
        f"- Load average (1/5/15 min) at start {meta['load_start']}, at end {meta['load_end']}.",
        "",
        "| workload | autograd | fastgrad | autograd / fastgrad | fitted values agree (worst rel. diff) | fits per round (autograd / fastgrad) |",
        "|---|---|---|---|---|---|",
    ]
    for w in workloads.WORKLOADS:
        if w.name not in results:
            continue
        res = results[w.name]
        errors = [f"{impl}: {res[impl]['error']}" for impl in IMPLS if "error" in res[impl]]
        if errors:
            ratio = "**fails** under " + ", ".join(i for i in IMPLS if "error" in res[i])
        else:
            ratio = f"{res['ratio']:.2f}x"
        fits = " / ".join(str(statistics.median(res[i]["fits"])) if res[i]["fits"] else "—" for i in IMPLS)
        lines.append(
            f"| {w.label} (`{w.name}`) | {fmt_range(res['autograd'])} | {fmt_range(res['fastgrad'])} | {ratio} | {agreement_text(res)} | {fits} |"
        )
    lines += ["", "Errors:" if any("error" in results[n][i] for n in results for i in IMPLS) else ""]
    for w in workloads.WORKLOADS:
        for impl in IMPLS:
            if w.name in results and "error" in results[w.name][impl]:
                lines.append(f"- `{w.name}` under {impl}: `{results[w.name][impl]['error']}`")
    acc = acceptance(results)
    if acc:
        lines += ["", "Issue #20's acceptance (on this run):", ""] + acc
    lines.append("")
    with open(md_path, "w") as f:
        f.write("\n".join(lines))
    return "\n".join(lines)


def loadavg():
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="all", help="comma-separated names (see workloads.py), or all")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--min-time", type=float, default=0.5)
    p.add_argument("--quick", action="store_true", help="3 rounds of >= 0.1 s; writes downstream_quick.*")
    p.add_argument("--out", default=None, help="output path without extension (default results/downstream)")
    p.add_argument(
        "--provisional",
        default="measured while other jobs ran on this 2-core machine; rerun on a quiet machine before quoting",
    )
    args = p.parse_args(argv)
    if args.quick:
        args.rounds, args.min_time = 3, 0.1
    names = [w.name for w in workloads.WORKLOADS] if args.workloads == "all" else args.workloads.split(",")
    unknown = [n for n in names if n not in workloads.BY_NAME]
    if unknown:
        p.error(f"unknown workloads {unknown}; known: {[w.name for w in workloads.WORKLOADS]}")
    out = args.out or os.path.join(RESULTS, "downstream_quick" if args.quick else "downstream")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    import numpy

    meta = {
        "command": "python benchmarks/downstream/run.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "rounds": args.rounds,
        "min_time": args.min_time,
        "provisional": args.provisional,
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "load_start": loadavg(),
    }
    t0 = time.time()
    results = {}
    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmpdir:
        for name in names:
            log(f"{name}:")
            results[name] = measure(workloads.BY_NAME[name], args.rounds, args.min_time, tmpdir, log)
            r = results[name]
            log(f"  ratio {r['ratio']:.2f}x" if "ratio" in r else "  no ratio")
            for impl in IMPLS:
                r[impl].pop("summary", None)
    v = next((results[n][i]["versions"] for n in names for i in IMPLS[::-1] if "versions" in results[n][i]), {})
    va = next((results[n]["autograd"]["versions"] for n in names if "versions" in results[n]["autograd"]), {})
    meta["versions"] = (
        ", ".join(f"{k} {v[k]}" for k in v)
        + (f", autograd {va['autograd']}" if "autograd" in va else "")
        + f" (numpy {numpy.__version__} in the parent)"
    )
    meta["load_end"] = loadavg()
    meta["duration_min"] = (time.time() - t0) / 60
    print(write_report(results, meta, out + ".md", out + ".json"))


if __name__ == "__main__":
    main()
