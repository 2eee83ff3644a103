"""pytest-benchmark: the flatten round trip (flatten then unflatten) of a 6-leaf dict,
fastgrad.misc.flatten against autograd.misc.flatten.

    pytest benchmarks/test_bench_flatten.py --benchmark-group-by=group -s

Both benchmarks check that the round trip gives back the input.  ``test_flatten_ratio``
times the two alternately (best of several rounds, same process) and prints
autograd's time / fastgrad's time; the target is at least 5x.
"""

import time

import numpy as onp
import pytest

from fastgrad.misc.flatten import flatten as fg_flatten

try:
    from autograd.misc.flatten import flatten as ag_flatten
except ImportError:  # autograd absent: only fastgrad's benchmark runs
    ag_flatten = None

TARGET_RATIO = 5.0


def six_leaf_dict():
    rs = onp.random.RandomState(0)
    return {
        "W1": rs.randn(10, 20),
        "b1": rs.randn(20),
        "W2": rs.randn(20, 5),
        "b2": rs.randn(5),
        "scale": 0.5,
        "log_noise": onp.float64(-1.0),
    }


def round_trip(flatten, value):
    vec, unflatten = flatten(value)
    return unflatten(vec)


def _check(value, back):
    assert set(back) == set(value)
    for k in value:
        onp.testing.assert_array_equal(back[k], value[k])


IMPLS = {"fastgrad": fg_flatten, "autograd": ag_flatten}


@pytest.mark.parametrize("impl", ["fastgrad", "autograd"])
def test_flatten_round_trip(benchmark, impl):
    flatten = IMPLS[impl]
    if flatten is None:
        pytest.skip("autograd is not installed")
    benchmark.group = "flatten round trip (6-leaf dict)"
    value = six_leaf_dict()
    _check(value, benchmark(round_trip, flatten, value))


def _best_time(flatten, value, number=200, rounds=7):
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(number):
            round_trip(flatten, value)
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def test_flatten_ratio():
    if ag_flatten is None:
        pytest.skip("autograd is not installed")
    value = six_leaf_dict()
    _check(value, round_trip(fg_flatten, value))
    _check(value, round_trip(ag_flatten, value))
    ours, theirs = [], []
    for _ in range(3):  # alternate, so that both see the same machine state
        ours.append(_best_time(fg_flatten, value))
        theirs.append(_best_time(ag_flatten, value))
    t_fg, t_ag = min(ours), min(theirs)
    ratio = t_ag / t_fg
    print(
        "\nflatten round trip, 6-leaf dict: fastgrad {:.1f} us, autograd {:.1f} us, "
        "ratio {:.1f}x (target >= {:.0f}x)".format(t_fg * 1e6, t_ag * 1e6, ratio, TARGET_RATIO)
    )
    assert ratio >= TARGET_RATIO
