"""fastgrad's gradient of a logistic loss on Dask vs the same gradient written by hand.

Not a timed test: a script that prints one table.

* cluster: a LocalCluster of two worker processes (one thread, a memory limit each) on
  loopback; a dataset at least twice one worker's limit, generated chunk by chunk on the
  workers; the gradient by ``fastgrad.grad`` of the fastgrad.numpy loss, and the same
  gradient written by hand in Dask, computed in ``--repeats`` rounds that alternate which
  goes first (best time kept), with each worker's peak resident memory over each run (the
  peak is reset before it: Linux's ``clear_refs``);
* in memory: the same loss on NumPy arrays that fit (``--numpy-rows``), fastgrad vs the
  gradient written by hand in NumPy.

    python benchmarks/dask/run.py [--rows 5500000] [--worker-memory 400MiB] [--repeats 3]

Timings on a shared machine are provisional; the ratio of the two Dask columns is the
number that matters (issue #17 asks for fastgrad within 1.15x of the hand-written graph).
"""

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as onp

import dask
import dask.array as da

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import dask_logistic_regression as example

import fastgrad


def _peak_rss():
    """This process's peak resident set size in bytes since the last ``_reset_peak``."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # (the whole life's peak)


def _reset_peak():
    """Start this process's peak resident set size again from its current size (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _best_time(fun, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        out = fun()
        best = min(best, time.perf_counter() - t)
    return best, out


def cluster_rows(args):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit=args.worker_memory,
        host="127.0.0.1",
        dashboard_address=None,
    )
    client = Client(cluster)
    rows = []
    try:
        X, y = example.make_data(args.rows, args.features, args.chunk_rows)
        w = da.from_array(onp.full(args.features, 0.05))
        builders = {
            "fastgrad.grad on Dask": lambda: fastgrad.grad(example.loss)(w, X, y),
            "hand-written Dask": lambda: example.hand_written_gradient(w, X, y),
        }
        results, best, peak = {}, dict.fromkeys(builders, float("inf")), dict.fromkeys(builders, 0)
        names = list(builders)
        for r in range(args.repeats):
            for name in names if r % 2 == 0 else names[::-1]:  # (neither always runs first)
                client.run(_reset_peak)
                t = time.perf_counter()
                results[name] = client.compute(builders[name](), sync=True)
                best[name] = min(best[name], time.perf_counter() - t)
                peak[name] = max(peak[name], *client.run(_peak_rss).values())
        rows = [(name, best[name], peak[name]) for name in names]
        diff = onp.max(onp.abs(results["fastgrad.grad on Dask"] - results["hand-written Dask"]))
        rel = float(diff / onp.max(onp.abs(results["hand-written Dask"])))
    finally:
        client.close()
        cluster.close()
    return rows, rel


def numpy_rows(args):
    rs = onp.random.RandomState(0)
    X = rs.standard_normal((args.numpy_rows, args.features))
    y = (rs.random_sample(args.numpy_rows) < 0.5).astype(float)
    w = onp.full(args.features, 0.05)

    def hand():
        p = 1.0 / (1.0 + onp.exp(-(X @ w)))
        return X.T @ (p - y) / X.shape[0]

    t_fg, g_fg = _best_time(lambda: fastgrad.grad(example.loss)(w, X, y), args.repeats)
    t_hand, g_hand = _best_time(hand, args.repeats)
    rel = float(onp.max(onp.abs(g_fg - g_hand)) / onp.max(onp.abs(g_hand)))
    return [("fastgrad.grad on NumPy", t_fg), ("hand-written NumPy", t_hand)], rel


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=example.N_ROWS)
    parser.add_argument("--features", type=int, default=example.N_FEATURES)
    parser.add_argument("--chunk-rows", type=int, default=example.CHUNK_ROWS)
    parser.add_argument("--worker-memory", default=example.WORKER_MEMORY)
    parser.add_argument("--numpy-rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    limit = dask.utils.parse_bytes(args.worker_memory)
    data = args.rows * (args.features + 1) * 8
    print(
        f"Dask: {args.rows} x {args.features} ({data / 2**30:.2f} GiB, {data / limit:.1f}x one worker's limit), "
        f"2 workers x {args.worker_memory}, best of {args.repeats}"
    )
    rows, rel = cluster_rows(args)
    base = rows[1][1]
    print(f"{'implementation':28s} {'seconds':>8s} {'ratio':>6s} {'peak worker RSS':>16s}")
    for name, seconds, peak in rows:
        print(
            f"{name:28s} {seconds:8.2f} {seconds / base:6.2f} {peak / 2**20:12.0f} MiB"
            f"{'  (over the limit!)' if peak > limit else ''}"
        )
    print(f"gradients agree to {rel:.1e} (relative)")
    print(f"\nNumPy in memory: {args.numpy_rows} x {args.features}, best of {args.repeats}")
    nrows, nrel = numpy_rows(args)
    for name, seconds in nrows:
        print(f"{name:28s} {seconds:8.3f} {seconds / nrows[1][1]:6.2f}")
    print(f"gradients agree to {nrel:.1e} (relative)")


if __name__ == "__main__":
    main()
