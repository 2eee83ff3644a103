"""pytest-benchmark: one group per PERF.md workload and asv scenario, implementations side by side.

    pytest benchmarks/ --benchmark-group-by=group --benchmark-columns=median,min,max,rounds
    FASTGRAD_PURE=1 pytest benchmarks/ ...      # the pure-Python engine instead of the compiled one

In each group: "fastgrad-compiled" or "fastgrad-pure" (the engine this process loaded), "autograd"
(skipped when not installed), "hand" (hand.py) and "numpy-forward", the plain NumPy forward alone,
as a control.  Every gradient benchmark asserts its result equals autograd's (relative error
<= 1e-10) and stores the error in extra_info.  All libraries share this one process, so the
numbers are for quick side-by-side looks; benchmarks/report.py is the PERF.md measurement (it
also runs the scaling chain, 10^6 primitives, which is too slow to belong here).
"""

import time

import numpy as onp
import pytest

import asv_scenarios
import workloads
from _impls import TOLERANCE, gradient_call, max_rel_err

try:
    import autograd  # noqa: F401  (only to know whether it is there)

    HAVE_AUTOGRAD = True
except ImportError:
    HAVE_AUTOGRAD = False

try:
    import fastgrad

    FASTGRAD = "fastgrad-compiled" if fastgrad.COMPILED else "fastgrad-pure"
    FASTGRAD_ERROR = None
except Exception as e:  # not built / not importable yet: its benchmarks skip, the others run
    FASTGRAD, FASTGRAD_ERROR = "fastgrad", f"fastgrad not importable: {e!r}"

IMPLS = ("numpy-forward", "hand", FASTGRAD, "autograd")
SLOW = 0.05  # s per call; slower cases run a few rounds, not pytest-benchmark's calibration

_references = {}


def reference(wid):
    """autograd's gradient (computed once per session); hand's when autograd is absent, since
    hand.py is itself checked against autograd wherever autograd is installed."""
    if wid not in _references:
        impl = "autograd" if HAVE_AUTOGRAD else "hand"
        _references[wid] = (gradient_call(impl, wid)[0](), impl)
    return _references[wid]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("wid", workloads.WORKLOADS + asv_scenarios.ASV)
def test_workload(benchmark, wid, impl):
    if impl == "autograd" and not HAVE_AUTOGRAD:
        pytest.skip("autograd not installed")
    if impl == FASTGRAD and FASTGRAD_ERROR:
        pytest.skip(FASTGRAD_ERROR)
    benchmark.group = wid
    benchmark.extra_info["impl"] = impl
    call, info = gradient_call(impl, wid)
    benchmark.extra_info.update(info)

    t0 = time.perf_counter()
    call()  # warm-up, and the time that decides how to run this case
    once = time.perf_counter() - t0
    if once > SLOW:
        rounds = max(3, min(10, int(1.0 / once)))
        result = benchmark.pedantic(call, rounds=rounds, iterations=1, warmup_rounds=0)
    else:
        result = benchmark(call)

    if impl == "numpy-forward":
        benchmark.extra_info["control"] = "forward only, no gradient"
        assert onp.all(onp.isfinite(result))
        return
    ref, ref_impl = reference(wid)
    err = max_rel_err(result, ref)
    benchmark.extra_info["rel_err"] = err
    benchmark.extra_info["reference"] = ref_impl
    assert err <= TOLERANCE, f"{impl} {wid}: gradient differs from {ref_impl}'s by {err:.2e}"
