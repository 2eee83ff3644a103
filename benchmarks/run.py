"""PERF.md benchmark method: one process per implementation, rounds alternated, medians and ratios.

``python benchmarks/run.py [options]`` is the same command as ``python benchmarks/report.py
[options]`` (see report.py and README.md for the options and the report); this module is the
measuring machinery both use.

How one case (a workload, an asv scenario or a size of the scaling chain) is measured:
- Each implementation gets its own long-lived worker process (``run.py --worker IMPL CASE NPZ``)
  that imports only that implementation (never two autodiff libraries in one process: each one's
  garbage makes the other's collector slower), builds the inputs, computes the gradient once (saved
  for the correctness check) and warms up until 0.1 s of calls have run, counting that first call
  (so a slow case is not called again just to warm up).  Workers are started one after another,
  so none of them competes for the CPU with another's warm-up.
- The parent then asks the workers for rounds in turn, A B C D A B C D ...  While one worker runs
  a round the others sit blocked on their stdin, so rounds never overlap.  A round is repeated
  gradient calls for at least ``min_time`` seconds (at least one call); its time is total / calls.
  Keeping one process per implementation (rather than one per round) avoids paying autograd's
  3 s W5 warm-up again in every round, while alternating still spreads machine noise evenly.
- BLAS is pinned to one thread in every worker (environment, plus threadpoolctl when installed);
  the cyclic garbage collector stays on, as users run it (it is emptied before each round so rounds
  start alike).
- Peak memory (unless skipped for the case): the tracemalloc peak of one gradient call after the
  rounds (NumPy reports its buffers to tracemalloc), minus what was traced before the call.
- Correctness: each worker saves the gradient of its first call to a .npz; the parent (which
  imports no autodiff library) compares it with autograd's, produced by the autograd worker or by a
  separate reference process when autograd is not being timed.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ALL_IMPLS = ("fastgrad-compiled", "fastgrad-pure", "autograd", "hand")  # the alternation order
BLAS_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
}
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
    t_first = time.perf_counter()
    g = call()
    _impls.save_gradient(grad_path, g)
    del g
    t_first = time.perf_counter() - t_first
    reply(ready=True, info=info, first_call=t_first)

    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        if cmd == "warmup":
            # Caches, lazily built tables, first touch of memory: calls until 0.1 s of them have
            # run, the first call (above) included.
            t0 = time.perf_counter() - t_first
            n = 0
            while time.perf_counter() - t0 < 0.1:
                call()
                n += 1
            reply(warm=True, calls=n)
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

    extra_env = {}  # STEADY_MALLOC_ENV with --steady-malloc

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


def measure_case(wid, impls, rounds, min_time, tmpdir, memory=True, log=None):
    """{impl: {"times": [...], "calls": [...], "peak": bytes or None, "grad": path, "info": {...},
    "first_call": s} or {"error": str}} for one case.  A worker that fails is dropped; the others
    go on.  ``memory=False`` skips the tracemalloc call (for cases where it would take minutes)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
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
            workers[impl] = Worker(impl, wid, tmpdir)
            ready = ask(impl)
            warm = ready and ask(impl, cmd="warmup")
            if warm:
                results[impl] = {
                    "times": [],
                    "calls": [],
                    "grad": workers[impl].grad_path,
                    "info": ready["info"],
                    "first_call": ready["first_call"],
                    "warmup_calls": warm["calls"],
                    "peak": None,
                }
                log(f"  {wid} {impl}: ready, first call {ready['first_call']:.3g} s")
            elif impl in results:
                log(f"  {wid} {impl}: {results[impl]['error']}")
        for _ in range(rounds):
            for impl in list(workers):
                rep = ask(impl, cmd="round", min_time=min_time)
                if rep:
                    results[impl]["times"].append(rep["per_call"])
                    results[impl]["calls"].append(rep["calls"])
        if memory:
            for impl in list(workers):
                rep = ask(impl, cmd="memory")
                if rep:
                    results[impl]["peak"] = rep["peak"]
    finally:
        for w in workers.values():
            w.close()
    return results


def measure_workload(wid, impls, rounds, min_time, tmpdir):
    """measure_case with the peak-memory call (the original name, kept for callers)."""
    return measure_case(wid, impls, rounds, min_time, tmpdir)


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
    for res in results.values():
        if "grad" in res:
            res["rel_err"] = None if ref is None else max_rel_err(load_gradient(res["grad"]), ref)


# ------------------------------------------------------------------------------------------ CLI


def main(argv=None):
    """``python benchmarks/run.py ...`` is ``python benchmarks/report.py ...``: one command line,
    one report (the measuring machinery lives here, the report and chart in report.py)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker(*argv[1:4])
    sys.path.insert(0, HERE)
    import report

    return report.main(argv)


if __name__ == "__main__":
    sys.exit(main())
