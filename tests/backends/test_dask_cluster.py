"""A real cluster: fastgrad's gradient of a logistic loss computed on dask.distributed workers.

The test starts a LocalCluster of two worker processes on loopback (one thread each, a
small memory limit), computes the gradient over a chunked dataset there, compares it with
the same gradient written by hand in Dask to 1e-10, and stops the cluster.  The graph
fastgrad builds holds no fastgrad object: the workers would not need fastgrad installed.
"""

import os

import numpy as onp
import pytest

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import cloudpickle  # noqa: E402

import fastgrad  # noqa: E402
import fastgrad.numpy as np  # noqa: E402
from compute_counter import ComputeCounter  # noqa: E402

N, D, CHUNK = 200_000, 8, 25_000


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def hand_written_gradient(w, X, y):
    p = 1.0 / (1.0 + da.exp(-(X @ w)))
    return X.T @ (p - y) / X.shape[0]


# A small limit per worker; under AddressSanitizer (its runtime preloaded) a worker's own
# baseline is ~300 MiB of shadow memory and allocator state, and the nanny would restart it.
_MEMORY_LIMIT = "1200MiB" if "asan" in os.environ.get("LD_PRELOAD", "") else "400MiB"


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit=_MEMORY_LIMIT,
        host="127.0.0.1",
        dashboard_address=None,
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _dataset():
    rs = da.random.RandomState(0)
    X = rs.standard_normal((N, D), chunks=(CHUNK, D))
    w_true = onp.linspace(-1.0, 1.0, D)
    y = (rs.random_sample(N, chunks=CHUNK) < 1.0 / (1.0 + da.exp(-(X @ w_true)))).astype(float)
    return X, y


def test_gradient_on_the_cluster_equals_the_hand_written_one(client):
    X, y = _dataset()
    w = da.from_array(onp.full(D, 0.1))
    with ComputeCounter() as counter:
        g = fastgrad.grad(logistic_loss)(w, X, y)
    assert counter.count == 0 and isinstance(g, da.Array)
    assert b"fastgrad" not in cloudpickle.dumps(dict(g.__dask_graph__()))
    ours, hand = client.compute([g, hand_written_gradient(w, X, y)], sync=True)
    assert ours.shape == (D,)
    onp.testing.assert_allclose(ours, hand, rtol=1e-10, atol=0)
    assert len(client.scheduler_info()["workers"]) == 2  # it ran on the cluster's workers
