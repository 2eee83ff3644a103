"""The mixed case: a small gradient, gradients over 10^6 elements, the small gradient again.

In one fresh process per implementation and round (as a user's program would run them):

1. the small gradient, ``grad(lambda a: a**2)(2.0)`` (case ``mixed-small``), warmed up, then
   timed: repeated calls for at least ``min_time`` seconds ("before");
2. one gradient of W4 (10^6 float64 elements), then the small gradient timed again ("after");
3. in the first round only, ``big_calls - 1`` more W4 gradients, then the small gradient once more
   ("after N"), with the resident set size read before the first W4 call, after it and after the
   last one.

Reported: the after / before ratio of the small gradient's medians (a cost one gradient call
leaves to the next ones shows here), and RSS after N big calls minus RSS after the first (memory
that piles up across calls).  Each round is a new process: "before" never follows a big call.
Gradients are checked against autograd's like every case (the first round saves them).

``python benchmarks/run.py --mixed-worker IMPL MIN_TIME BIG_CALLS TMPDIR`` is one round's worker
(it prints one JSON line); ``measure_mixed`` runs the rounds, alternating implementations.
"""

import json
import os
import subprocess
import sys
import time

import run

SMALL, BIG = "mixed-small", "W4"
BIG_CALLS = 100


def _timed(call, min_time):
    """Seconds per call of ``call`` repeated for at least ``min_time`` s (at least once)."""
    n = 0
    t0 = time.perf_counter()
    while True:
        call()
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            return elapsed / n, n


def worker(impl, min_time, big_calls, tmpdir):
    min_time, big_calls = float(min_time), int(big_calls)
    proto = os.fdopen(os.dup(1), "w", buffering=1)  # the reply; anything else printed -> stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import gc

    import _impls

    _impls.pin_blas_to_one_thread()
    small, _ = _impls.gradient_call(impl, SMALL)
    big, info = _impls.gradient_call(impl, BIG)
    out = {"info": info}
    g = small()
    if big_calls > 1:
        _impls.save_gradient(run.grad_file(tmpdir, "mixed", SMALL, impl), g)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.1:  # warm-up
        small()
    gc.collect()
    out["before"], out["before_calls"] = _timed(small, min_time)
    out["rss_before"] = run.rss_bytes()
    t0 = time.perf_counter()
    g = big()
    out["big_first_call"] = time.perf_counter() - t0
    if big_calls > 1:
        _impls.save_gradient(run.grad_file(tmpdir, "mixed", BIG, impl), g)
    del g
    out["rss_1"] = run.rss_bytes()
    out["after"], out["after_calls"] = _timed(small, min_time)
    if big_calls > 1:
        t0 = time.perf_counter()
        for _ in range(big_calls - 1):
            big()
        out["big_per_call"] = (time.perf_counter() - t0) / (big_calls - 1)
        out["rss_n"] = run.rss_bytes()
        out["big_calls"] = big_calls
        out["after_n"], out["after_n_calls"] = _timed(small, min_time)
    proto.write(json.dumps(out) + "\n")
    return 0


def _one_round(impl, min_time, big_calls, tmpdir):
    proc = subprocess.run(
        [
            sys.executable,
            os.path.join(run.HERE, "run.py"),
            "--mixed-worker",
            impl,
            str(min_time),
            str(big_calls),
            tmpdir,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run.worker_env(impl, run.Worker.extra_env),
    )
    if proc.returncode or not proc.stdout.strip():
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"{impl} mixed worker died: {last}".replace("|", "/")}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_mixed(impls, rounds, min_time, tmpdir, big_calls=BIG_CALLS, log=None):
    """{impl: {"before": [s per call, one per round], "after": [...], "after_n": s, "rss_before",
    "rss_1", "rss_n": bytes, "big_calls": N, "rel_err": {case: err}, "info": {...}} or {"error"}}."""
    log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    results = {}
    for r in range(rounds):
        for impl in impls:
            if "error" in results.get(impl, {}):
                continue
            rep = _one_round(impl, min_time, big_calls if r == 0 else 1, tmpdir)
            if "error" in rep:
                results[impl] = rep
                log(f"  mixed {impl}: {rep['error']}")
                continue
            res = results.setdefault(impl, {"before": [], "after": [], "info": rep["info"]})
            res["before"].append(rep["before"])
            res["after"].append(rep["after"])
            for k in ("after_n", "rss_before", "rss_1", "rss_n", "big_calls", "big_per_call", "big_first_call"):
                if k in rep:
                    res[k] = rep[k]
            log(
                f"  mixed {impl} round {r + 1}: small {rep['before'] * 1e6:.3g} us before, "
                f"{rep['after'] * 1e6:.3g} us after one W4 gradient"
            )
    _check(results, tmpdir)
    return results


def _check(results, tmpdir):
    from _impls import load_gradient, max_rel_err

    for cid in (SMALL, BIG):
        ref = run.grad_file(tmpdir, "mixed", cid, "autograd")
        if not os.path.exists(ref):
            ref = run.reference_gradient(cid, {}, tmpdir)
        ref = load_gradient(ref) if ref else None
        for impl, res in results.items():
            path = run.grad_file(tmpdir, "mixed", cid, impl)
            if "error" not in res and os.path.exists(path):
                err = None if ref is None else max_rel_err(load_gradient(path), ref)
                res.setdefault("rel_err", {})[cid] = err
