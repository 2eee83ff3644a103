"""Deep graphs, memory, graph lifetime, reentrancy, and never mutating caller arrays.

(SPEC §8: "graph of 10^6 sequential primitives: works, no recursion anywhere, memory
proportional to the graph"; DESIGN.md invariants.)  Memory is measured with tracemalloc,
never with timings.
"""

import gc
import math
import platform
import sys
import weakref

import numpy as onp
import pytest

from conftest import import_target
from gradcheck import assert_tree_allclose, check_grads
from numpy_versions import has_numpy
from run import rss_bytes  # benchmarks/run.py
from traced_peak import peak_traced_bytes

ag = import_target()
anp = import_target("numpy")
extend = import_target("extend")
tracer = import_target("tracer")

FACTOR = 1.0000001


def chain(n):
    def f(x):
        for _ in range(n):
            x = x * FACTOR
        return x

    return f


# ---------------------------------------------------------------------------
# 10^6 primitives


@pytest.mark.slow
def test_million_primitive_chain_on_float():
    n = 10**6
    g = ag.grad(chain(n))(0.5)
    assert math.isclose(float(g), FACTOR**n, rel_tol=1e-9)


@pytest.mark.slow
def test_million_primitive_chain_on_small_array():
    n = 10**6
    x = onp.array([0.5, -1.0])

    def f(x):
        for _ in range(n // 2):
            x = x * FACTOR
        return anp.sum(x)  # n // 2 multiplies + 1 sum, twice over below

    g = ag.grad(lambda x: f(x) + f(x * 2.0))(x)
    assert_tree_allclose(g, onp.full(2, 3.0 * FACTOR ** (n // 2)), rtol=1e-9)


@pytest.mark.slow
def test_million_primitive_graph_dropped_without_backward_pass():
    # freeing a deep graph that was never differentiated must not recurse either
    vjp, ans = ag.make_vjp(chain(10**6))(0.5)
    assert math.isclose(float(ans), 0.5 * FACTOR**10**6, rel_tol=1e-9)
    del vjp


def _peak_bytes_of_grad(n):
    return peak_traced_bytes(ag.grad(chain(n)), 0.5)[0]


@pytest.mark.slow
def test_peak_memory_grows_linearly():
    base = _peak_bytes_of_grad(1_000)
    p1 = _peak_bytes_of_grad(100_000) - base
    p2 = _peak_bytes_of_grad(200_000) - base
    ratio = p2 / p1
    assert 1.6 <= ratio <= 2.4, f"peak memory ratio for 2x graph size: {ratio:.2f} ({p1}, {p2})"
    per_primitive = (p2 - p1) / 100_000
    assert per_primitive < 4096, f"{per_primitive:.0f} bytes per recorded primitive"


# ---------------------------------------------------------------------------
# the graph is freed when grad returns (reference counting alone, no gc.collect)


class _GcDisabled:
    def __enter__(self):
        self.was_enabled = gc.isenabled()
        gc.collect()
        gc.disable()

    def __exit__(self, *exc):
        if self.was_enabled:
            gc.enable()


def _intermediate_refs_fun(refs, np):
    def f(x):
        y = np.sin(x)
        refs.append(weakref.ref(tracer.getval(y)))
        z = np.exp(y) * y
        refs.append(weakref.ref(tracer.getval(z)))
        w = z[[0, 0, 1]] @ z[:3]
        refs.append(weakref.ref(tracer.getval(w)) if isinstance(tracer.getval(w), onp.ndarray) else None)
        return np.sum(w * z[0]) + np.sum(y**2)

    return f


def _assert_all_dead(refs):
    alive = [i for i, r in enumerate(refs) if r is not None and r() is not None]
    assert not alive, f"intermediate values {alive} still alive"


@pytest.mark.parametrize("op", ["grad", "value_and_grad", "make_vjp", "elementwise_grad"])
def test_graph_freed_after_grad_without_gc(op):
    refs = []
    f = _intermediate_refs_fun(refs, anp)
    x = onp.linspace(0.1, 0.9, 4)
    with _GcDisabled():
        if op == "make_vjp":
            vjp, ans = ag.make_vjp(f)(x)
            vjp(1.0)
            del vjp, ans
        elif op == "elementwise_grad":
            ag.elementwise_grad(f)(x)
        else:
            getattr(ag, op)(f)(x)
        assert len(refs) == 3
        _assert_all_dead(refs)


def test_graph_freed_after_second_order_without_gc():
    refs = []
    f = _intermediate_refs_fun(refs, anp)
    x = onp.linspace(0.1, 0.9, 4)
    with _GcDisabled():
        ag.elementwise_grad(ag.grad(f))(x)
        _assert_all_dead(refs)


def test_values_captured_by_user_rule_are_freed_without_gc():
    refs = []

    @extend.primitive
    def scaled(x):
        return x * 3.0

    def maker(ans, x):
        refs.append(weakref.ref(ans))
        refs.append(weakref.ref(x))
        return lambda g: g * 3.0

    extend.defvjp(scaled, maker)

    def f(x):
        return anp.sum(scaled(anp.sin(x)) ** 2)

    x = onp.linspace(0.1, 0.9, 4)
    with _GcDisabled():
        g = ag.grad(f)(x)
        assert len(refs) == 2
        _assert_all_dead(refs)
    assert_tree_allclose(g, 18.0 * onp.sin(x) * onp.cos(x), rtol=1e-13)


class _CountingNode(tracer.Node):
    instances = []

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.parents_kept = parents
        _CountingNode.instances.append(weakref.ref(self))

    def initialize_root(self):
        self.parents_kept = ()
        _CountingNode.instances.append(weakref.ref(self))


def test_node_subclass_graph_freed_without_gc():
    _CountingNode.instances.clear()

    def f(x):
        for _ in range(1000):
            x = anp.sin(x) * 1.01
        return x

    with _GcDisabled():
        end_value, end_node = tracer.trace(_CountingNode.new_root(), f, 0.3)
        assert len(_CountingNode.instances) == 2001
        alive = sum(r() is not None for r in _CountingNode.instances)
        assert alive == 2001  # the end node keeps its ancestors alive
        del end_node
        alive = sum(r() is not None for r in _CountingNode.instances)
        assert alive == 0, f"{alive} nodes alive after the end node was dropped"


# ---------------------------------------------------------------------------
# reentrancy: rules that call grad inside their VJP


@extend.primitive
def cube_sum(x):
    return onp.sum(x**3)


def _cube_sum_maker(ans, x):
    def vjp(g):
        # a whole forward and backward pass inside the outer backward pass
        return g * ag.grad(lambda t: anp.sum(t * t * t))(x)

    return vjp


extend.defvjp(cube_sum, _cube_sum_maker)


@extend.primitive
def nested_rule(x):
    return onp.sin(x)


def _nested_rule_maker(ans, x):
    def vjp(g):
        # this inner grad itself goes through a user primitive whose rule calls grad
        inner = ag.elementwise_grad(lambda t: cube_sum(t) * 0.0 + anp.sin(t))(x)
        return g * inner

    return vjp


extend.defvjp(nested_rule, _nested_rule_maker)


def test_rule_calling_grad_inside_vjp():
    x = onp.array([0.3, -0.7, 1.1])

    def f(x):
        a = anp.sin(x) * 2.0
        return cube_sum(a) + cube_sum(x) + anp.sum(a)

    g = ag.grad(f)(x)
    a = 2 * onp.sin(x)
    expected = 3 * a**2 * 2 * onp.cos(x) + 3 * x**2 + 2 * onp.cos(x)
    assert_tree_allclose(g, expected, rtol=1e-13)


def test_rule_calling_grad_inside_vjp_second_order():
    x = onp.array([0.3, -0.7, 1.1])
    check_grads(lambda x: cube_sum(anp.sin(x)) + cube_sum(x), x, order=2, module=ag)


def test_nested_reentrant_rules():
    x = onp.array([0.3, -0.7, 1.1])
    g = ag.grad(lambda x: anp.sum(nested_rule(x) * nested_rule(x * 2.0)))(x)
    expected = onp.cos(x) * onp.sin(2 * x) + 2 * onp.sin(x) * onp.cos(2 * x)
    assert_tree_allclose(g, expected, rtol=1e-13)


def test_vjp_reused_and_interleaved():
    x = onp.array([0.3, -0.7, 1.1])
    vjp1, _ = ag.make_vjp(lambda x: anp.sin(x) * x)(x)
    vjp2, _ = ag.make_vjp(lambda x: anp.cos(x) + x)(x)
    u = onp.array([1.0, 2.0, 3.0])
    a1 = vjp1(u)
    b1 = vjp2(u)
    a2 = vjp1(u)
    b2 = vjp2(2 * u)
    assert_tree_allclose(a1, a2, rtol=0)
    assert_tree_allclose(a1, u * (onp.cos(x) * x + onp.sin(x)), rtol=1e-14)
    assert_tree_allclose(b2, 2 * b1, rtol=1e-15)


# ---------------------------------------------------------------------------
# caller-owned arrays are never modified

_RS = onp.random.RandomState(3)
C = _RS.randn(4)
IDX = onp.array([0, 0, 2, 3, 3, 3])
MASK = onp.array([True, False, True, True])

CALLER_CASES = {
    "x+x": lambda x: anp.sum(x + x),
    "x*x": lambda x: anp.sum(x * x),
    "x-returned": lambda x: x,
    "x+x-returned": lambda x: x + x,
    "sum-broadcast": lambda x: anp.sum(x) + anp.sum(x * 2.0) + anp.sum(x),
    "sum-axis": lambda x: anp.sum(anp.sum(anp.outer(x, x), axis=0) + anp.sum(x)),
    "mean-broadcast": lambda x: anp.mean(x) + anp.mean(x),
    "captured": lambda x: anp.sum(x * C) + anp.sum(C * x) + anp.dot(C, x),
    "captured-add": lambda x: anp.sum((x + C) * (C + x)),
    "fan-in": lambda x: anp.sum(sum(x * c for c in (C, C * 2.0, C))),
    "index-repeated": lambda x: anp.sum(x[IDX] * x[IDX]),
    "index-mixed": lambda x: x[0] * x[0] + x[1] * x[3] + anp.sum(x[1:]) + anp.sum(x[MASK]),
    "index-then-x": lambda x: anp.sum(x[IDX]) + anp.sum(x),
    "where": lambda x: anp.sum(anp.where(MASK, x, C) + anp.where(MASK, C, x)),
    "concatenate": lambda x: anp.sum(anp.concatenate([x, C, x]) ** 2),
    "stack": lambda x: anp.sum(anp.stack([x, C, x]) ** 2),
    "reshape-view": lambda x: anp.sum(anp.reshape(x, (2, 2)) + anp.reshape(x, (2, 2)).T),
    "scalar-chain": lambda x: x[0] * 2.0 + x[0] + x[0],
}


def _snapshot(*arrays):
    return [(a.dtype, a.shape, a.tobytes()) for a in arrays]


@pytest.mark.parametrize("name", list(CALLER_CASES))
def test_caller_arrays_unchanged(name):
    fun = CALLER_CASES[name]
    x = _RS.randn(4)
    before = _snapshot(x, C, IDX, MASK)
    vjp, ans = ag.make_vjp(fun)(x)
    ans_before = _snapshot(onp.asarray(ans))
    seed = onp.asarray(_RS.randn(*onp.shape(ans)))
    seed_before = _snapshot(seed)
    g1 = vjp(seed)
    g1_copy = onp.array(g1, copy=True)
    g2 = vjp(seed)  # a second backward pass over the same graph
    assert _snapshot(x, C, IDX, MASK) == before, "input or captured array modified"
    assert _snapshot(seed) == seed_before, "the cotangent passed to the vjp was modified"
    assert _snapshot(onp.asarray(ans)) == ans_before, "the returned value was modified"
    assert_tree_allclose(g1, g1_copy, rtol=0)
    assert_tree_allclose(g2, g1_copy, rtol=0)


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
@pytest.mark.parametrize("name", ["x+x", "sum-broadcast", "index-repeated", "fan-in"])
def test_caller_arrays_unchanged_by_grad_and_second_order(name):
    fun = CALLER_CASES[name]
    x = _RS.randn(4)
    before = _snapshot(x, C, IDX, MASK)
    ag.grad(fun)(x)
    ag.elementwise_grad(ag.grad(fun))(x)
    assert _snapshot(x, C, IDX, MASK) == before


def test_scalar_seed_and_readonly_inputs():
    # read-only inputs and seeds must be usable: nothing is written into them
    x = _RS.randn(4)
    x.setflags(write=False)
    seed = onp.ones(4)
    seed.setflags(write=False)
    vjp, ans = ag.make_vjp(lambda x: x + x * C + x)(x)
    g = vjp(seed)
    assert_tree_allclose(g, 2.0 + C, rtol=1e-15)
    g = ag.grad(lambda x: anp.sum(x[IDX]) + anp.sum(x) + anp.sum(x))(x)
    expected = onp.bincount(IDX, minlength=4) + 2.0
    assert_tree_allclose(g, expected, rtol=0)


# ---- the reuse of large array buffers during a gradient call (a C allocator in the compiled
# module, which both engines use when it is built) --------------------------------------


def _buffer_cache_built():
    try:
        from fastgrad._engine import engine
    except ImportError:  # (FG_TEST_TARGET=autograd)
        return False
    return ag.__name__ == "fastgrad" and engine.buffer_cache_state.__module__ != "fastgrad._core_gc"


def _handler_name():
    """The name of NumPy's memory handler in use (numpy._core since NumPy 2, numpy.core before)."""
    if has_numpy((2, 0)):
        from numpy._core.multiarray import get_handler_name
    else:
        from numpy.core.multiarray import get_handler_name
    return get_handler_name()


@pytest.mark.skipif(not _buffer_cache_built(), reason="the buffer cache is C code of fastgrad._core, not built here")
def test_large_buffers_are_reused_during_a_call_and_none_kept_after_it():
    import threading
    from fastgrad._engine import engine

    fastgrad, fnp = ag, anp
    x = onp.linspace(-2.0, 2.0, 300_000)  # 2.4 MB buffers: above the 128 KiB threshold
    seen = []

    at_the_end = []
    from fastgrad.extend import defvjp, primitive

    @primitive
    def first(x):
        return x

    # the rule of the first primitive runs last in the backward pass, when the pass has
    # freed its temporaries
    defvjp(first, lambda ans, x: lambda g: (at_the_end.append(engine.buffer_cache_state()), g)[1])

    def f(x):
        x = first(x)
        y = fnp.exp(fnp.sin(x)) * x**2  # temporaries freed during the backward pass
        seen.append(engine.buffer_cache_state())
        return fnp.sum(y + fnp.log1p(x * x))

    g = fastgrad.grad(f)(x)
    expected = onp.exp(onp.sin(x)) * (onp.cos(x) * x**2 + 2 * x) + 2 * x / (1 + x * x)
    onp.testing.assert_allclose(g, expected, rtol=1e-12)
    installed, users, kept, kept_bytes = seen[0]
    assert installed and users == 1
    assert _handler_name() == "fastgrad_buffer_cache"
    installed, users, kept, kept_bytes = at_the_end[0]
    assert users == 1 and kept >= 1 and kept_bytes == kept * x.nbytes  # kept for reuse
    # nothing is carried to the next call: the kept buffers are freed when it returns, so
    # neither its cost nor the process's memory depends on earlier calls
    assert engine.buffer_cache_state() == (True, 0, 0, 0)
    onp.testing.assert_allclose(fastgrad.grad(f)(x), expected, rtol=1e-12)
    assert engine.buffer_cache_state() == (True, 0, 0, 0)
    # a thread's context starts with NumPy's default handler; its first gradient call
    # switches it, and the results are the same
    names = []

    def other():
        names.append(_handler_name())
        names.append(float(onp.sum(fastgrad.grad(f)(x))))
        names.append(_handler_name())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert names[0] == "default_allocator" and names[2] == "fastgrad_buffer_cache"
    assert names[1] == pytest.approx(float(onp.sum(expected)), rel=1e-12)


def _kernel_has_populate_write():
    release = platform.release().split("-")[0].split(".")
    return tuple(int(p) for p in release[:2] if p.isdigit()) >= (5, 14)


def _malloc_is_a_sanitizers():
    """ASan and valgrind replace malloc: a large block need not come fresh from the kernel."""
    with open("/proc/self/maps") as f:
        maps = f.read()
    return "libasan" in maps or "vgpreload" in maps


@pytest.mark.skipif(not _buffer_cache_built(), reason="the buffer cache is C code of fastgrad._core, not built here")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prefaulting is Linux's madvise(MADV_POPULATE_WRITE)")
@pytest.mark.skipif(sys.platform.startswith("linux") and _malloc_is_a_sanitizers(), reason="malloc is a sanitizer's")
def test_a_fresh_large_buffer_is_faulted_in_at_once_inside_a_call_only():
    # 40 MB: above glibc's largest mmap threshold, so always fresh pages from the kernel
    n = 5_000_000
    growth = {}

    def f(x):
        before = rss_bytes()
        buffer = onp.empty(n)
        growth["inside"] = rss_bytes() - before
        del buffer
        return x * x

    assert ag.grad(f)(3.0) == 6.0
    before = rss_bytes()
    buffer = onp.empty(n)
    growth["outside"] = rss_bytes() - before
    del buffer
    if _kernel_has_populate_write():
        assert growth["inside"] >= 0.95 * n * 8  # resident before the array's first write
    else:
        assert growth["inside"] < 0.5 * n * 8  # the advice is missing: left to page faults
    assert growth["outside"] < 0.5 * n * 8  # NumPy's default allocator: faulted in on use


# ---------------------------------------------------------------------------
# a large graph's Python objects in huge-page regions (_arena_regions.h, compiled module)


def _arena_regions():
    from fastgrad._core import arena_regions_state

    return arena_regions_state()


# (PYTHONMALLOC=malloc, as under ASan and valgrind, puts every object in a malloc block: no
# arenas; the interpreter then counts no blocks of its own)
_no_arenas = pytest.mark.skipif(sys.getallocatedblocks() == 0, reason="Python runs without its arenas (PYTHONMALLOC)")


def _scalar_chain(n, at_the_end=None):
    def f(x):
        for _ in range(n):
            x = x * FACTOR
        if at_the_end is not None:
            at_the_end()
        return x

    return f


@pytest.mark.skipif(not _buffer_cache_built(), reason="the arena allocator is C code of fastgrad._core, not built here")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge-page regions are Linux's madvise(MADV_HUGEPAGE)")
@_no_arenas
def test_a_large_graph_takes_arenas_from_regions_and_keeps_none_after_the_call():
    seen = []
    n = 200_000  # about 35 MB of nodes: dozens of Python arenas
    big = _scalar_chain(n, lambda: seen.append(_arena_regions()))
    assert ag.grad(big)(1.0) == pytest.approx(FACTOR**n, rel=1e-12)
    regions, live = seen[0]
    # while building: regions, each holding arenas, at most 16 (FG_MAX_REGIONS) at once
    assert 5 <= regions <= 16 and live >= regions
    plain = _scalar_chain(n)  # (a call that stores nothing: an object kept pins its arena)
    for _ in range(2):  # (the first calls leave some caches of their own behind)
        ag.grad(plain)(1.0)
    after_first = _arena_regions()
    resident_after_first = rss_bytes()
    for _ in range(5):
        assert ag.grad(plain)(1.0) == pytest.approx(FACTOR**n, rel=1e-12)
    # only regions holding objects that outlived a call remain, and calls do not add to them
    # (give or take the one empty arena CPython may keep for reuse)
    regions, live = _arena_regions()
    assert regions <= after_first[0] + 1 and live <= after_first[1] + 1
    assert regions <= live
    assert rss_bytes() - resident_after_first < 4 * 2**20
    # a small call uses CPython's arenas alone
    seen.clear()
    assert ag.grad(_scalar_chain(1000, lambda: seen.append(_arena_regions())))(1.0) == pytest.approx(FACTOR**1000)
    assert seen == [_arena_regions()]


@pytest.mark.skipif(not _buffer_cache_built(), reason="the arena allocator is C code of fastgrad._core, not built here")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge-page regions are Linux's madvise(MADV_HUGEPAGE)")
@_no_arenas
def test_objects_made_in_a_call_outlive_it_in_their_region_until_freed():
    kept = []

    def stashing(x):
        # about 12 MB of floats (12 arenas): the call's first fresh arena is CPython's, the
        # others come from regions.  (Made first: later in a long forward pass, the regions
        # may all be in use by the graph, the pure engine's more than the compiled one's.)
        kept.append([float(i) + 0.5 for i in range(500_000)])
        for _ in range(20_000):
            x = x * FACTOR
        return x

    ag.grad(_scalar_chain(100_000))(1.0)
    gc.collect()  # (earlier garbage would hold pools in regions, which the stash would fill first)
    # The free pools of the arenas the process already has (after a long test session, many
    # MB of them) would take the stash first: a filler made outside any call takes them.
    filler = [float(i) for i in range(2_000_000)]
    before = _arena_regions()
    ag.grad(stashing)(1.0)
    regions, live = _arena_regions()
    del filler
    assert live >= before[1] + 5  # the stash's arenas outlived the call
    assert sum(kept[0]) == pytest.approx(500_000**2 / 2)
    kept.clear()
    # their arenas are freed with them (but for pools that other objects took meanwhile,
    # as in CPython's own arenas; garbage in reference cycles, the test runner's say, holds
    # its pools until the collector runs), and no region is kept without a live arena
    gc.collect()
    regions_after, live_after = _arena_regions()
    assert live_after <= live - 5
    assert regions_after <= live_after


@pytest.mark.skipif(not _buffer_cache_built(), reason="the arena allocator is C code of fastgrad._core, not built here")
def test_threads_building_large_graphs_at_once_share_the_regions():
    import threading

    n = 100_000
    results, errors = [], []
    start = threading.Barrier(2)

    def work():
        try:
            start.wait(30)
            for _ in range(3):
                results.append(ag.grad(_scalar_chain(n))(1.0))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(results) == 6
    assert all(r == pytest.approx(FACTOR**n, rel=1e-12) for r in results)
    regions, live = _arena_regions()
    assert regions <= live  # no region without a live arena was kept


# ---------------------------------------------------------------------------
# rules that read only an argument's shape and dtype do not keep a large array there
# (autograd's rules close over the metadata only: x = x + 1 over big arrays frees each x)

BIG = (400, 400)  # 1.25 MB of float64, above the engine's stand-in threshold


def _linear_chain(op):
    steps = {
        "add": lambda x: x + 1.0,
        "radd": lambda x: 1.0 + x,
        "subtract": lambda x: x - 0.5,
        "multiply": lambda x: x * 1.5,
        "rmultiply": lambda x: 0.75 * x,
        "divide": lambda x: x / 1.25,
        "remainder": lambda x: anp.remainder(x, 7.0),
        "sum_axis": lambda x: anp.sum(x, axis=0) * 0.001 + x,
        "mean_axis": lambda x: anp.mean(x, axis=1, keepdims=True) + x,
    }
    step = steps[op]

    def f(x):
        for _ in range(40):
            x = step(x)
        return anp.sum(x)

    return f


LINEAR_OPS = ["add", "radd", "subtract", "multiply", "rmultiply", "divide", "remainder", "sum_axis", "mean_axis"]


@pytest.mark.parametrize("op", LINEAR_OPS)
def test_a_chain_of_linear_steps_keeps_no_intermediate_array(op):
    x0 = onp.linspace(0.1, 2.0, BIG[0] * BIG[1]).reshape(BIG)
    f = _linear_chain(op)
    ag.grad(f)(x0)  # (warm-up: the first call loads modules)
    peak, g = peak_traced_bytes(ag.grad(f), x0)
    one = x0.nbytes
    # 40 steps: keeping each step's input would be 40 arrays; a few are alive at any time
    assert peak < 8 * one, f"{op}: peak {peak / one:.1f} arrays of the input's size"
    # f is affine near x0 (remainder's pieces are 7 apart), so a wide step is exact up to
    # round-off: a narrow one would cancel most digits of sums of 160000 terms
    eps = 1e-2
    d = onp.cos(onp.arange(x0.size)).reshape(BIG)
    numeric = (f(x0 + eps * d) - f(x0 - eps * d)) / (2 * eps)
    assert math.isclose(float(onp.sum(g * d)), float(numeric), rel_tol=1e-4)  # (a sum of 160000 terms)


@pytest.mark.parametrize(
    "op", ["add", "subtract", "multiply", "divide", "remainder", pytest.param("fmod", marks=pytest.mark.fastgrad_only)]
)
@pytest.mark.parametrize("dtypes", ["float64", "complex128", "int64+float64"])
def test_rules_given_stand_ins_give_the_same_derivatives(op, dtypes):
    # both arguments large, broadcasting and mixed dtypes: checked against central differences
    # in both modes and to second order (the backward pass's own nodes keep stand-ins too)
    rng = onp.random.RandomState(7)
    first, _, second = dtypes.partition("+")
    second = second or first
    x = (rng.rand(300, 300) + 0.5).astype(first)
    y = (rng.rand(1, 300) + 1.5).astype(second)
    if dtypes == "complex128":
        if op in ("remainder", "fmod"):
            pytest.skip("remainder and fmod are not defined for complex numbers")
        x = x + 0.25j * rng.rand(300, 300)
    fun = getattr(anp, {"divide": "true_divide"}.get(op, op))
    argnums = (1,) if first == "int64" else (0, 1)
    check_grads(lambda *a: fun(*a), x, y, argnums=argnums, modes=("rev", "fwd"), order=2)


@pytest.mark.fastgrad_only  # (the engine's own helpers)
def test_the_stand_in_of_an_argument_has_its_shape_and_dtype_and_no_memory():
    engine = __import__(ag.__name__ + "._engine", fromlist=["engine"]).engine
    for x in (onp.ones((300, 300)), onp.ones((100, 200, 5), dtype=onp.float32), onp.ones(70000, dtype=complex)):
        assert engine._stand_in_ok(x)
        s = engine._shape_stand_in(x)
        assert type(s) is onp.ndarray and s.shape == x.shape and s.dtype == x.dtype
        assert all(stride == 0 for stride in s.strides) and not s.flags.writeable and not onp.any(s)
    assert not engine._stand_in_ok(onp.ones(100))  # small: kept as it is
    assert not engine._stand_in_ok(onp.empty(70000, dtype=object))
    assert not engine._stand_in_ok(onp.empty(70000, dtype="U4"))
    assert not engine._stand_in_ok(onp.ones((300, 300)).view(onp.matrix))


@pytest.mark.fastgrad_only  # (autograd's rule for sum ignores where=)
@pytest.mark.parametrize("positional", [False, True])
def test_a_large_where_mask_of_sum_is_read_however_it_is_passed(positional):
    # sum's rule reads where= (its 7th argument): that array must not become a stand-in
    x0 = onp.linspace(-1.0, 1.0, 300 * 300).reshape(300, 300)
    mask = onp.zeros((300, 300), dtype=bool)
    mask[:, :10] = True

    def f(x):
        y = x * 1.5
        if positional:
            return anp.sum(y, None, None, None, False, 0.0, mask)
        return anp.sum(y, where=mask)

    onp.testing.assert_array_equal(ag.grad(f)(x0), onp.where(mask, 1.5, 0.0))
