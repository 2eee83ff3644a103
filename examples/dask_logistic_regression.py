"""Logistic regression over a dataset larger than any worker's memory, on a Dask cluster.

The very same fastgrad.numpy loss as on NumPy arrays, differentiated by fastgrad.grad, but
the data is a chunked Dask array: fastgrad builds the gradient as one lazy Dask graph (no
fastgrad object in it, so the workers need no fastgrad), and the cluster computes it chunk
by chunk.  The program starts its own LocalCluster (two worker processes on loopback with a
memory limit each), generates a dataset at least twice one worker's limit chunk by chunk on
the workers, fits by gradient descent, checks its first gradient against the same gradient
written by hand in Dask, prints progress and saves a plot of the loss.

fastgrad recognises Dask arrays by itself once Dask is imported: nothing is registered.

    pip install ".[examples,dask]"
    python examples/dask_logistic_regression.py [--iters 15] [--rows 5500000] [--plot out.png]
"""

import argparse
import math
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as onp

import dask
import dask.array as da

import fastgrad
import fastgrad.numpy as np

NUM_ITERS = 15
N_ROWS, N_FEATURES, CHUNK_ROWS = 5_500_000, 20, 250_000
WORKER_MEMORY = "400MiB"
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "dask_logistic_regression.png")


# gallery-start
def loss(w, X, y):
    """Mean logistic loss of the logits X @ w for labels y in {0, 1}."""
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def hand_written_gradient(w, X, y):
    """The same gradient written by hand in Dask: X^T (sigmoid(X w) - y) / n."""
    p = 1.0 / (1.0 + da.exp(-(X @ w)))
    return X.T @ (p - y) / X.shape[0]


# gallery-end


def make_data(n_rows, n_features, chunk_rows, seed=0):
    """A lazy dataset: features and labels are generated chunk by chunk where they are used."""
    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n_rows, n_features), chunks=(chunk_rows, n_features))
    w_true = onp.linspace(-2.0, 2.0, n_features)
    y = (rs.random_sample(n_rows, chunks=chunk_rows) < 1.0 / (1.0 + da.exp(-(X @ w_true)))).astype(float)
    return X, y


def _bytes(size):
    return dask.utils.parse_bytes(size) if isinstance(size, str) else int(size)


def main(
    num_iters=NUM_ITERS,
    n_rows=N_ROWS,
    n_features=N_FEATURES,
    chunk_rows=CHUNK_ROWS,
    worker_memory=WORKER_MEMORY,
    n_workers=2,
    step_size=2.0,
    plot_path=DEFAULT_PLOT,
    verbose=True,
    callback=None,
    local_cluster=True,
):
    """Fit; ``callback(i, loss)`` is called after each step's loss is computed.

    ``local_cluster=False`` computes in this process (Dask's threads) instead of a cluster."""
    data_bytes = n_rows * (n_features + 1) * 8
    client = cluster = None
    if local_cluster:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=worker_memory,
            host="127.0.0.1",
            dashboard_address=None,
        )
        client = Client(cluster)
    try:
        if verbose:
            where = "%d workers of %s each" % (n_workers, worker_memory) if local_cluster else "this process"
            ratio = data_bytes / _bytes(worker_memory)
            print(
                f"dataset {n_rows} x {n_features}: {data_bytes / 2**30:.2f} GiB ({ratio:.1f}x one worker's limit) on {where}"
            )
        X, y = make_data(n_rows, n_features, chunk_rows)
        # gallery-start
        loss_and_grad = fastgrad.value_and_grad(loss)
        # gallery-end
        w = onp.zeros(n_features)
        losses, check = [], None
        start = time.perf_counter()
        for i in range(num_iters):
            dw = da.from_array(w)
            # gallery-start
            value, g = loss_and_grad(dw, X, y)  # lazy: a Dask graph, nothing computed yet
            # gallery-end
            if i == 0:  # the first step also computes the hand-written gradient (same data pass)
                value, g, g_hand = dask.compute(value, g, hand_written_gradient(dw, X, y))
                check = float(onp.max(onp.abs(g - g_hand)) / onp.max(onp.abs(g_hand)))
                if not check <= 1e-10:
                    raise AssertionError(f"fastgrad's gradient differs from the hand-written one: {check:.3g}")
                if verbose:
                    print(f"first gradient equals the hand-written Dask gradient: relative difference {check:.1e}")
            else:
                value, g = dask.compute(value, g)
            losses.append(float(value))
            w = w - step_size * g
            if callback is not None:
                callback(i, losses[-1])
            if verbose:
                print(f"iteration {i:3d}  loss {losses[-1]:.5f}  ({time.perf_counter() - start:.1f} s)")
    finally:
        if client is not None:
            client.close()
            cluster.close()

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(losses, marker="o")
    ax.set_xlabel("iteration")
    ax.set_ylabel("mean logistic loss")
    ax.set_title(f"gradient descent on {n_rows:,} rows (Dask, {math.ceil(n_rows / chunk_rows)} chunks)")
    fig.tight_layout()
    directory = os.path.dirname(os.path.abspath(plot_path))
    os.makedirs(directory, exist_ok=True)
    fig.savefig(plot_path, dpi=100)
    plt.close(fig)
    if verbose:
        print(f"plot saved to {plot_path}")
    return {"losses": losses, "weights": w, "gradient_check": check, "data_bytes": data_bytes}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=NUM_ITERS, help="gradient steps")
    parser.add_argument("--rows", type=int, default=N_ROWS, help="rows of the dataset")
    parser.add_argument("--worker-memory", default=WORKER_MEMORY, help="memory limit of each worker")
    parser.add_argument("--plot", default=DEFAULT_PLOT, help="where to save the PNG")
    args = parser.parse_args()
    main(num_iters=args.iters, n_rows=args.rows, worker_memory=args.worker_memory, plot_path=args.plot)
