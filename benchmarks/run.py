"""PERF.md benchmark method: one process per implementation, rounds alternated, medians and ratios.

    python benchmarks/run.py                      # all workloads, all implementations
    python benchmarks/run.py --workloads W1,W5 --impls fastgrad-pure,autograd,hand
    python benchmarks/run.py --quick              # smoke test: 3 short rounds
    python benchmarks/run.py --steady-malloc      # freed memory kept in-process (see README)

How one workload is measured:
- Each implementation gets its own long-lived worker process (``run.py --worker IMPL WID``) that
  imports only that implementation (never two autodiff libraries in one process: each one's garbage
  makes the other's collector slower), builds the inputs, and warms up.  Workers are started one
  after another, so none of them competes for the CPU with another's warm-up.
- The parent then asks the workers for rounds in turn, A B C D A B C D ...  While one worker runs
  a round the others sit blocked on their stdin, so rounds never overlap.  A round is repeated
  gradient calls for at least ``--min-time`` seconds (at least one call); its time is total / calls.
  Keeping one process per implementation (rather than one per round) avoids paying autograd's
  3 s W5 warm-up again in every round, while alternating still spreads machine noise evenly.
- BLAS is pinned to one thread in every worker (environment, plus threadpoolctl when installed);
  the cyclic garbage collector stays on, as users run it (it is emptied before each round so rounds
  start alike).
- Peak memory: the tracemalloc peak of one gradient call after the rounds (NumPy reports its
  buffers to tracemalloc), minus what was traced before the call.
- Correctness: each worker saves the gradient of its first call to a .npz; the parent (which
  imports no autodiff library) compares it with autograd's, produced by the autograd worker or by a
  separate reference process when autograd is not being timed.

The table goes to stdout and to benchmarks/results/latest.md (raw numbers in latest.json).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_IMPLS = ("fastgrad-compiled", "fastgrad-pure", "autograd", "hand")  # the alternation order
BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
            "VECLIB_MAXIMUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1"}
# --steady-malloc: glibc otherwise returns freed memory to the OS (heap trimming, and mmap for
# blocks >= 128 KiB), so a call may page-fault its temporaries in anew or not depending on where
# the last free landed; on W4/W7 that swings times by up to 2x between implementations.
STEADY_MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": str(2**30), "MALLOC_MMAP_THRESHOLD_": str(2**30)}


# ----------------------------------------------------------------------------------------- worker

def worker(impl, wid, grad_path):
    """Serve the parent's commands, one JSON object per line on stdin / stdout."""
    # Keep the protocol on a private copy of stdout and send anything else printed (by Python or C
    # code) to stderr, so a stray print cannot corrupt a reply.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(**msg):
        proto.write(json.dumps(msg) + "\n")

    import gc
    import tracemalloc
    import _impls

    blas_threads = _impls.pin_blas_to_one_thread()  # normally already 1, from the environment
    call, info = _impls.gradient_call(impl, wid)
    info["blas_threads"] = blas_threads
    g = call()
    _impls.save_gradient(grad_path, g)
    del g
    reply(ready=True, info=info)

    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        if cmd == "warmup":
            # Caches, lazily built tables, first touch of memory (one call was made already).
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.1:
                call()
            reply(warm=True)
        elif cmd == "round":
            min_time = msg["min_time"]
            gc.collect()
            n = 0
            t0 = time.perf_counter()
            while True:
                call()
                n += 1
                elapsed = time.perf_counter() - t0
                if elapsed >= min_time:
                    break
            reply(per_call=elapsed / n, calls=n)
        elif cmd == "memory":
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            g = call()
            peak = tracemalloc.get_traced_memory()[1] - base
            del g
            tracemalloc.stop()
            reply(peak=peak)
        elif cmd == "quit":
            reply(bye=True)
            return


class Worker:
    """The parent's handle on one worker process."""

    extra_env = {}   # STEADY_MALLOC_ENV with --steady-malloc

    def __init__(self, impl, wid, tmpdir):
        self.impl, self.wid = impl, wid
        self.grad_path = os.path.join(tmpdir, f"{wid}-{impl}.npz")
        self.log_path = os.path.join(tmpdir, f"{wid}-{impl}.log")
        env = dict(os.environ, **BLAS_ENV, **self.extra_env)
        env.pop("FASTGRAD_PURE", None)
        if impl == "fastgrad-pure":
            env["FASTGRAD_PURE"] = "1"
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", impl, wid, self.grad_path],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)

    def ask(self, **msg):
        if msg:
            try:
                self.proc.stdin.write(json.dumps(msg) + "\n")
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass  # it died: the empty read below reports why
        line = self.proc.stdout.readline()
        if not line:
            self.proc.wait()
            self.log.flush()
            with open(self.log_path) as f:
                last = (f.read().strip().splitlines() or ["(no output)"])[-1]
            raise RuntimeError(f"{self.impl} worker for {self.wid} died: {last}".replace("|", "/"))
        return json.loads(line)

    def close(self):
        try:
            if self.proc.poll() is None:
                self.ask(cmd="quit")
        except RuntimeError:
            pass
        self.proc.stdin.close()
        self.proc.stdout.close()
        self.proc.wait()
        self.log.close()


# ----------------------------------------------------------------------------------------- parent

def measure_workload(wid, impls, rounds, min_time, tmpdir):
    """{impl: {"times": [...], "calls": [...], "peak": bytes, "grad": path, "info": {...}}
    or {"error": str}} for one workload.  A worker that fails is dropped; the others go on."""
    results, workers = {}, {}

    def ask(impl, **msg):
        try:
            return workers[impl].ask(**msg)
        except RuntimeError as e:
            workers.pop(impl).close()
            results[impl] = {"error": str(e)}
            return None

    try:
        for impl in impls:
            print(f"  {wid} {impl}: starting", file=sys.stderr, flush=True)
            workers[impl] = Worker(impl, wid, tmpdir)
            ready = ask(impl)
            if ready and ask(impl, cmd="warmup"):
                results[impl] = {"times": [], "calls": [], "grad": workers[impl].grad_path,
                                 "info": ready["info"]}
        for r in range(rounds):
            for impl in list(workers):
                rep = ask(impl, cmd="round", min_time=min_time)
                if rep:
                    results[impl]["times"].append(rep["per_call"])
                    results[impl]["calls"].append(rep["calls"])
            print(f"  {wid} round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
        for impl in list(workers):
            rep = ask(impl, cmd="memory")
            if rep:
                results[impl]["peak"] = rep["peak"]
    finally:
        for w in workers.values():
            w.close()
    return results


def reference_gradient(wid, results, tmpdir):
    """Path of autograd's gradient for ``wid``: the timed autograd worker's, else a one-off one."""
    if "grad" in results.get("autograd", {}):
        return results["autograd"]["grad"]
    w = Worker("autograd", wid, tmpdir)
    try:
        w.ask()
    except RuntimeError:
        return None  # autograd not installed: nothing to check against
    finally:
        w.close()
    return w.grad_path


def check_errors(wid, results, tmpdir):
    from _impls import load_gradient, max_rel_err
    ref_path = reference_gradient(wid, results, tmpdir)
    ref = load_gradient(ref_path) if ref_path else None
    for impl, res in results.items():
        if "grad" in res:
            res["rel_err"] = None if ref is None else max_rel_err(load_gradient(res["grad"]), ref)


# ---------------------------------------------------------------------------------------- report

def fmt_time(t, unit_of=None):
    """'1.23 ms'; with ``unit_of``, in that value's unit and without the unit's name."""
    ref = t if unit_of is None else unit_of
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if ref >= scale or unit == "ns":
            return f"{t / scale:.3g}" + ("" if unit_of is not None else f" {unit}")


def fmt_bytes(b):
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b} B"


def median(res):
    return statistics.median(res["times"]) if res.get("times") else None


def time_cell(res):
    if res is None:
        return "—"
    if "error" in res:
        return "error"
    t, m = res["times"], statistics.median(res["times"])
    return f"{fmt_time(m)} ({fmt_time(min(t), m)}–{fmt_time(max(t), m)})"


def pair(cells):
    """'compiled / pure' for the two fastgrad engines; one value alone when only one was run."""
    return " / ".join(cells) if cells else "—"


def table(all_results, impls):
    fg = [i for i in ("fastgrad-compiled", "fastgrad-pure") if i in impls]
    which = " / ".join(i.split("-")[1] for i in fg) or "—"
    head = ["workload", "hand", "fastgrad-compiled", "fastgrad-pure", "autograd",
            f"autograd/fastgrad ({which})", f"fastgrad/hand ({which})",
            f"peak memory: fastgrad ({which}) vs autograd", "max rel err"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for wid, res in all_results.items():
        ag, hd = median(res.get("autograd", {})), median(res.get("hand", {}))
        speed, over_hand, peaks = [], [], []
        for i in fg:
            m = median(res.get(i, {}))
            speed.append(f"{ag / m:.3g}x" if ag and m else "—")
            over_hand.append(f"{m / hd:.3g}x" if hd and m else "—")
            p = res.get(i, {}).get("peak")
            peaks.append(fmt_bytes(p) if p is not None else "—")
        ag_peak = res.get("autograd", {}).get("peak")
        mem = pair(peaks) + " vs " + (fmt_bytes(ag_peak) if ag_peak is not None else "—")
        errs = [r["rel_err"] for r in res.values() if r.get("rel_err") is not None]
        if errs:
            worst = max(errs)
            err = f"{worst:.1e}" + ("" if worst <= 1e-10 else " **FAIL**")
        else:
            err = "n/a (no autograd)" if any("grad" in r for r in res.values()) else "—"
        row = [wid] + [time_cell(res.get(i)) for i in ("hand", "fastgrad-compiled",
                                                       "fastgrad-pure", "autograd")]
        row += [pair(speed), pair(over_hand), mem, err]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def details(all_results):
    lines = ["| workload | implementation | rounds | calls/round | median | peak (tracemalloc) "
             "| rel err vs autograd | note |", "|---|---|---|---|---|---|---|---|"]
    for wid, res in all_results.items():
        for impl, r in res.items():
            if "error" in r:
                lines.append(f"| {wid} | {impl} | | | | | | {r['error'][:200]} |")
                continue
            err = "—" if r.get("rel_err") is None else f"{r['rel_err']:.1e}"
            calls = f"{min(r['calls'])}–{max(r['calls'])}"
            note = ", ".join(f"{k}={v}" for k, v in r["info"].items())
            lines.append(f"| {wid} | {impl} | {len(r['times'])} | {calls} | "
                         f"{fmt_time(median(r))} | {fmt_bytes(r['peak'])} | {err} | {note} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="all", help="comma-separated ids, e.g. W1,W5")
    ap.add_argument("--impls", default=",".join(ALL_IMPLS),
                    help="comma-separated subset of " + ",".join(ALL_IMPLS))
    ap.add_argument("--rounds", type=int, default=None, help="rounds per implementation (5)")
    ap.add_argument("--min-time", type=float, default=None,
                    help="seconds of repeated calls per round (0.2)")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: 3 rounds of >= 0.05 s (not a PERF.md measurement)")
    ap.add_argument("--steady-malloc", action="store_true",
                    help="keep freed memory in the process (glibc MALLOC_TRIM_THRESHOLD_ and "
                         "MALLOC_MMAP_THRESHOLD_ = 1 GiB) so page faults do not decide big-array "
                         "timings")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "latest.md"))
    ap.add_argument("--worker", nargs=3, metavar=("IMPL", "WID", "GRAD_NPZ"),
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return worker(*a.worker)

    sys.path.insert(0, HERE)
    import workloads
    wids = list(workloads.WORKLOADS) if a.workloads == "all" else a.workloads.split(",")
    impls = [i for i in ALL_IMPLS if i in a.impls.split(",")]
    unknown = set(a.impls.split(",")) - set(ALL_IMPLS) or set(wids) - set(workloads.WORKLOADS)
    if unknown:
        ap.error(f"unknown: {', '.join(sorted(unknown))}")
    rounds = a.rounds or (3 if a.quick else 5)
    min_time = a.min_time or (0.05 if a.quick else 0.2)

    if a.steady_malloc:
        Worker.extra_env = STEADY_MALLOC_ENV
    all_results = {}
    with tempfile.TemporaryDirectory(prefix="fastgrad-bench-") as tmpdir:
        for wid in wids:
            all_results[wid] = measure_workload(wid, impls, rounds, min_time, tmpdir)
            check_errors(wid, all_results[wid], tmpdir)

    import numpy
    kind = "quick smoke run, not a measurement" if a.quick else "PERF.md method"
    malloc = "steady (--steady-malloc)" if a.steady_malloc else "default"
    header = (f"Benchmarks ({kind}): {rounds} alternated rounds of >= {min_time} s per"
              f" implementation, one process each, BLAS 1 thread, GC on, glibc malloc {malloc}."
              f" Medians (min–max) of per-call time; peak = tracemalloc peak of one gradient"
              f" call."
              f" {time.strftime('%Y-%m-%d %H:%M')}, Python {platform.python_version()},"
              f" NumPy {numpy.__version__}, {platform.machine()}, {os.cpu_count()} CPUs.")
    out = "\n\n".join([header, table(all_results, impls), "Details:", details(all_results)])
    print(out)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write(out + "\n")
    for r in all_results.values():
        for v in r.values():
            v.pop("grad", None)
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(all_results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
