"""PERF.md benchmark method: one process per implementation, rounds alternated, medians and ratios.

``python benchmarks/run.py [options]`` is the same command as ``python benchmarks/report.py
[options]`` (see report.py and README.md for the options and the report); this module is the
measuring machinery both use.  Two modes, both measured by a full report:

- **one process** (``measure_one_process``): each implementation gets one long-lived worker
  process that runs every case one after another, as a user's program runs its gradients; the
  cases come in a rotated order in each round (round r starts at the r-th case), so every case is
  measured after different predecessors.  Whatever one gradient call leaves behind (memory kept,
  caches, garbage) is there for the next case's calls.  The report's tables come from this mode.
- **isolated** (``measure_case``): each case gets fresh worker processes, one per implementation,
  so nothing another case did can affect it.

In both, a worker (``run.py --worker IMPL CASES TAG TMPDIR``) imports only its implementation
(never two autodiff libraries in one process: each one's garbage makes the other's collector
slower), builds the inputs, computes each case's gradient once (saved for the correctness check)
and warms each case up until 0.1 s of its calls have run, counting that first call (so a slow case
is not called again just to warm up).  Workers are started one after another, so none of them
competes for the CPU with another's warm-up.  The parent then asks the workers for rounds in turn,
A B C D A B C D ... (in the one-process mode: for each case of the round, every implementation in
turn).  While one worker runs a round the others sit blocked on their stdin, so rounds never
overlap.  A round is repeated gradient calls of one case for at least ``min_time`` seconds (at
least one call); its time is total / calls.

- BLAS is pinned to one thread in every worker (environment, plus threadpoolctl when installed;
  PyTorch's and XLA's own thread pools too); the cyclic garbage collector stays on, as users run
  it (it is emptied before each round so rounds start alike).
- Peers (other systems, peers/) far slower than fastgrad would take many minutes at 5 rounds: a
  peer's case stops after the round that brings its rounds' total past ``peer_budget`` seconds
  (at least one round), and the details say how many rounds it ran.
- Peak memory (unless skipped for the case, or the implementation allocates outside NumPy): the
  tracemalloc peak of one gradient call after the rounds (NumPy reports its buffers to
  tracemalloc), minus what was traced before the call.  The one-process workers also report their
  resident set size at the end.
- Correctness: each worker saves the gradient of its first call of each case to a .npz; the
  parent (which imports no autodiff library) compares it with autograd's, produced by the autograd
  worker or by a separate reference process when autograd is not being timed.

The mixed case (small gradient, gradients over 10^6 elements, small gradient again, in one
process) has its own worker and loop: mixed.py.
"""

import json
import os
import subprocess
import sys
import time

import peers

HERE = os.path.dirname(os.path.abspath(__file__))
CORE_IMPLS = ("fastgrad-compiled", "fastgrad-pure", "autograd", "hand")
PEER_IMPLS = tuple(peers.PEERS)  # torch, mygrad, jax, jax-jit: optional, skipped when not installed
ALL_IMPLS = CORE_IMPLS + PEER_IMPLS  # the alternation order
BLAS_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1",
    "NUMEXPR_NUM_THREADS": "1",
    # XLA's CPU backend (the JAX peers): one compute thread
    "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
}
# --steady-malloc: glibc otherwise returns freed memory to the OS (heap trimming, and mmap for
# blocks >= 128 KiB), so a call may page-fault its temporaries in anew or not depending on where
# the last free landed; on W4/W7 that swings times by up to 2x between implementations.
STEADY_MALLOC_ENV = {"MALLOC_TRIM_THRESHOLD_": str(2**30), "MALLOC_MMAP_THRESHOLD_": str(2**30)}
PEER_BUDGET = 10.0  # s of rounds per case for a peer (see the module docstring)


def rss_bytes():
    """This process's resident set size now (Linux /proc), or None where unavailable."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


# ----------------------------------------------------------------------------------------- worker


def grad_file(tmpdir, tag, cid, impl):
    return os.path.join(tmpdir, f"{tag}-{cid}-{impl}.npz")


def worker(impl, cases, tag, tmpdir):
    """Serve the parent's commands for the comma-separated ``cases``, one JSON object per line
    on stdin / stdout.  A case that raises is reported as an error; the others go on."""
    # Keep the protocol on a private copy of stdout and send anything else printed (by Python or C
    # code) to stderr, so a stray print cannot corrupt a reply.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(**msg):
        proto.write(json.dumps(msg) + "\n")

    import gc
    import traceback
    import tracemalloc

    import _impls

    blas_threads = _impls.pin_blas_to_one_thread()  # normally already 1, from the environment
    calls, ready = {}, {}
    for cid in cases.split(","):
        try:
            call, info = _impls.gradient_call(impl, cid)
            info["blas_threads"] = blas_threads
            t_first = time.perf_counter()
            g = call()
            t_first = time.perf_counter() - t_first
            _impls.save_gradient(grad_file(tmpdir, tag, cid, impl), g)
            del g
            # Caches, lazily built tables, first touch of memory: calls until 0.1 s of them have
            # run, the first call included.
            t0 = time.perf_counter() - t_first
            n = 0
            while time.perf_counter() - t0 < 0.1:
                call()
                n += 1
        except Exception as e:
            traceback.print_exc()
            ready[cid] = {"error": f"{type(e).__name__}: {e}"}
            continue
        calls[cid] = call
        ready[cid] = {"info": info, "first_call": t_first, "warmup_calls": n}
    reply(ready=True, cases=ready)

    for line in sys.stdin:
        msg = json.loads(line)
        cmd = msg["cmd"]
        try:
            if cmd == "round":
                call, min_time = calls[msg["case"]], msg["min_time"]
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
                call = calls[msg["case"]]
                gc.collect()
                tracemalloc.start()
                base = tracemalloc.get_traced_memory()[0]
                g = call()
                peak = tracemalloc.get_traced_memory()[1] - base
                del g
                tracemalloc.stop()
                reply(peak=peak)
            elif cmd == "rss":
                reply(rss=rss_bytes())
            elif cmd == "quit":
                reply(bye=True)
                return
        except Exception as e:
            traceback.print_exc()
            calls.pop(msg.get("case"), None)
            reply(error=f"{type(e).__name__}: {e}")


def worker_env(impl, extra=None):
    """The environment of a worker for ``impl``: BLAS on one thread, the engine chosen."""
    env = dict(os.environ, **BLAS_ENV, **(extra or {}))
    env.pop("FASTGRAD_PURE", None)
    if impl == "fastgrad-pure":
        env["FASTGRAD_PURE"] = "1"
    return env


class Worker:
    """The parent's handle on one worker process."""

    extra_env = {}  # STEADY_MALLOC_ENV with --steady-malloc

    def __init__(self, impl, cases, tmpdir, tag):
        self.impl, self.cases, self.tag, self.tmpdir = impl, list(cases), tag, tmpdir
        self.log_path = os.path.join(tmpdir, f"{tag}-{impl}-{len(os.listdir(tmpdir))}.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--worker", impl, ",".join(self.cases), tag, tmpdir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=worker_env(impl, self.extra_env),
        )

    def grad_path(self, cid):
        return grad_file(self.tmpdir, self.tag, cid, self.impl)

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
            raise RuntimeError(f"{self.impl} worker died: {last}".replace("|", "/"))
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


class _Session:
    """Workers and the results they produce, for either mode: {cid: {impl: result}} where a result
    is {"times": [...], "calls": [...], "peak": bytes or None, "grad": path, "info": {...},
    "first_call": s, "warmup_calls": n} or {"error": str}."""

    def __init__(self, tmpdir, tag, log):
        self.tmpdir, self.tag, self.log = tmpdir, tag, log
        self.workers, self.results = {}, {}

    def start(self, impl, cases):
        w = self.workers[impl] = Worker(impl, cases, self.tmpdir, self.tag)
        try:
            ready = w.ask()
        except RuntimeError as e:
            self._died(impl, e)
            return
        for cid, r in ready["cases"].items():
            if "error" in r:
                self.results.setdefault(cid, {})[impl] = {"error": r["error"].replace("|", "/")}
                self.log(f"  {cid} {impl}: {r['error']}")
                continue
            self.results.setdefault(cid, {})[impl] = {
                "times": [],
                "calls": [],
                "grad": w.grad_path(cid),
                "info": r["info"],
                "first_call": r["first_call"],
                "warmup_calls": r["warmup_calls"],
                "peak": None,
            }
            self.log(f"  {cid} {impl}: ready, first call {r['first_call']:.3g} s")

    def _died(self, impl, err):
        w = self.workers.pop(impl)
        w.close()
        for cid in w.cases:
            res = self.results.setdefault(cid, {})
            if "error" not in res.get(impl, {}):
                res[impl] = {"error": str(err)}

    def live(self, cid, impl):
        r = self.results.get(cid, {}).get(impl)
        return impl in self.workers and r is not None and "error" not in r

    def ask(self, cid, impl, **msg):
        try:
            rep = self.workers[impl].ask(**msg)
        except RuntimeError as e:
            self._died(impl, e)
            return None
        if "error" in rep:
            self.results[cid][impl] = {"error": rep["error"].replace("|", "/")}
            return None
        return rep

    def round(self, cid, impl, min_time, peer_budget):
        r = self.results[cid][impl]
        if impl in PEER_IMPLS and r["times"] and sum(t * n for t, n in zip(r["times"], r["calls"])) >= peer_budget:
            return  # a slow peer: enough of its rounds for this case (see the module docstring)
        rep = self.ask(cid, impl, cmd="round", case=cid, min_time=min_time)
        if rep:
            r["times"].append(rep["per_call"])
            r["calls"].append(rep["calls"])

    def memory(self, cid, impl):
        if impl in peers.UNTRACED:
            return  # its buffers are not NumPy's: tracemalloc would see next to nothing
        rep = self.ask(cid, impl, cmd="memory", case=cid)
        if rep:
            self.results[cid][impl]["peak"] = rep["peak"]

    def close(self):
        for w in self.workers.values():
            w.close()
        self.workers = {}


def measure_case(wid, impls, rounds, min_time, tmpdir, memory=True, log=None, peer_budget=PEER_BUDGET):
    """Isolated mode: {impl: result} for one case, each implementation in a fresh worker serving
    this case alone.  A worker that fails is dropped; the others go on.  ``memory=False`` skips the
    tracemalloc call (for cases where it would take minutes)."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    s = _Session(tmpdir, "isolated", log)
    try:
        for impl in impls:
            s.start(impl, [wid])
        for _ in range(rounds):
            for impl in impls:
                if s.live(wid, impl):
                    s.round(wid, impl, min_time, peer_budget)
        if memory:
            for impl in impls:
                if s.live(wid, impl):
                    s.memory(wid, impl)
    finally:
        s.close()
    res = s.results.get(wid, {})
    return {i: res[i] for i in impls if i in res}


def rotation(cids, r):
    """The order of round ``r``: the cases rotated left by ``r``."""
    k = r % len(cids) if cids else 0
    return list(cids[k:]) + list(cids[:k])


def measure_one_process(impls_of, rounds, min_time, tmpdir, memory_cases=(), log=None, peer_budget=PEER_BUDGET):
    """One-process mode: ``impls_of`` maps each case id (in report order) to the implementations
    that run it.  One worker per implementation serves all its cases; in round r the cases come in
    ``rotation(cases, r)`` order, each measured for every implementation in turn.  Returns
    ({cid: {impl: result}}, {impl: resident set size of its worker at the end, bytes})."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    cids = list(impls_of)
    order = [i for i in ALL_IMPLS if any(i in v for v in impls_of.values())]
    s = _Session(tmpdir, "one-process", log)
    rss = {}
    try:
        for impl in order:
            cases = [c for c in cids if impl in impls_of[c]]
            log(f"one-process {impl}: {', '.join(cases)}")
            s.start(impl, cases)
        for r in range(rounds):
            log(f"one-process round {r + 1}/{rounds}: {', '.join(rotation(cids, r))}")
            for cid in rotation(cids, r):
                for impl in order:
                    if impl in impls_of[cid] and s.live(cid, impl):
                        s.round(cid, impl, min_time, peer_budget)
        for cid in cids:
            if cid in memory_cases:
                for impl in order:
                    if impl in impls_of[cid] and s.live(cid, impl):
                        s.memory(cid, impl)
        for impl in order:
            if impl in s.workers:
                try:
                    rss[impl] = s.workers[impl].ask(cmd="rss")["rss"]
                except RuntimeError as e:
                    s._died(impl, e)
    finally:
        s.close()
    results = {c: {i: s.results[c][i] for i in order if i in s.results.get(c, {})} for c in cids}
    return results, rss


def measure_workload(wid, impls, rounds, min_time, tmpdir):
    """measure_case with the peak-memory call (the original name, kept for callers)."""
    return measure_case(wid, impls, rounds, min_time, tmpdir)


def reference_gradient(wid, results, tmpdir):
    """Path of autograd's gradient for ``wid``: the timed autograd worker's, else a one-off one."""
    if "grad" in results.get("autograd", {}):
        return results["autograd"]["grad"]
    w = Worker("autograd", [wid], tmpdir, "reference")
    try:
        ready = w.ask()
    except RuntimeError:
        return None  # autograd not installed: nothing to check against
    finally:
        w.close()
    return None if "error" in ready["cases"][wid] else w.grad_path(wid)


def check_errors(wid, results, tmpdir):
    """Set ``rel_err`` (vs autograd's gradient, or None without autograd) on every result."""
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
    sys.path.insert(0, HERE)
    if argv[:1] == ["--worker"]:
        return worker(*argv[1:5])
    if argv[:1] == ["--mixed-worker"]:
        import mixed

        return mixed.worker(*argv[1:])
    import report

    return report.main(argv)


if __name__ == "__main__":
    sys.exit(main())
