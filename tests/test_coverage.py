"""Gradient coverage of fastgrad.numpy, .linalg and .fft.

1. Every public callable of the three namespaces is accounted for: a primitive with a VJP
   and a JVP rule, a constant (notrace) primitive, a Python-level function that records
   primitives with rules, an in-place function that refuses traced values, or an entry of
   one of the two reviewed lists below (NOT_DIFFERENTIABLE, KNOWN_GAPS), each with a
   one-line reason.  A function that appears in none of these fails the test: review it,
   then give it rules or add it to a list.
2. Every function of the two lists of SPEC §5 (what autograd differentiates, and "beyond
   autograd") has both a VJP and a JVP for the arguments the specification names.
3. docs/coverage.md is what scripts/gen_coverage.py generates from the live registries.

The lists are read by scripts/gen_coverage.py too (the notes of docs/coverage.md).
"""

import importlib.util
from pathlib import Path

import numpy as onp
import pytest

pytestmark = pytest.mark.fastgrad_only

REPO = Path(__file__).resolve().parent.parent

# ---------------------------------------------------------------------------------------
# Reviewed: not differentiable by nature.  {section: {name: reason}}

NOT_DIFFERENTIABLE = {
    "numpy": {
        "arange": "a range of constants: its length changes discretely with the arguments "
        "(use linspace, which has rules, for a differentiable grid)",
        "empty": "uninitialised array of a given shape: depends on no value",
        "zeros": "constant array of a given shape",
        "ones": "constant array of a given shape",
        "identity": "constant identity matrix of an integer size",
        "eye": "constant matrix of ones on a diagonal (integer arguments)",
        "tri": "constant triangular mask (integer arguments)",
        "bartlett": "window of integer length M: no float argument",
        "blackman": "window of integer length M: no float argument",
        "hamming": "window of integer length M: no float argument",
        "hanning": "window of integer length M: no float argument",
        "fromfunction": "calls the function on integer index grids: no array input",
        "fromiter": "consumes a Python iterator into a new buffer (build traced arrays "
        "with np.array of a list instead)",
        "frompyfunc": "returns a NumPy ufunc object (object dtype), not an array",
        "from_dlpack": "imports another library's buffer (I/O)",
        "asmatrix": "returns np.matrix, a deprecated ndarray subclass that is not traced",
        "bmat": "returns np.matrix, a deprecated ndarray subclass that is not traced",
        "mat": "(NumPy 1) returns np.matrix, a deprecated ndarray subclass that is not traced",
    },
    "linalg": {},
    "fft": {},
}

# ---------------------------------------------------------------------------------------
# Known gaps: should have rules, have none yet.  {section: {name: reason}}

KNOWN_GAPS = {
    "numpy": {
        "meshgrid": "coordinate grids are broadcasts of the inputs (linear); no rule yet",
        "geomspace": "start * (stop/start)**t is smooth in start and stop; no rule yet (logspace has one)",
        "insert": "linear in arr and values (an index scatter); no rule yet",
        "vander": "powers of x: smooth; no rule yet",
        "i0": "smooth (derivative i1); the rule exists only in fastgrad.scipy.special.i0",
        "kaiser": "smooth in beta (through i0); no rule yet",
        "frexp": "the mantissa is x * 2**-e (e piecewise constant); no rule yet",
        "nextafter": "x1 moved by one ulp: derivative 1 w.r.t. x1, 0 w.r.t. x2; no rule yet",
        "sort_complex": "a permutation of the input, like sort; no rule yet",
        "trim_zeros": "a slice of the input; no rule yet",
        "intersect1d": "values are selections of the inputs (as unique's); no rule yet",
        "setdiff1d": "values are selections of the first input (as unique's); no rule yet",
        "setxor1d": "values are selections of the inputs (as unique's); no rule yet",
        "union1d": "unique of the concatenation (unique has a rule); no rule yet",
        "poly": "polynomial coefficients are smooth in the roots (a product); no rule yet",
        "polydiv": "quotient and remainder are smooth in both polynomials; no rule yet",
        "polyfit": "a least-squares solve, smooth in x, y and w; no rule yet",
        "roots": "eigenvalues of the companion matrix (simple roots are smooth); no rule yet",
        "piecewise": "the value is a where() of the functions' values; no rule yet",
        "apply_over_axes": "could trace by calling the function on the traced array, as "
        "apply_along_axis does; not implemented",
        "histogram": "counts are linear in weights (edges smooth in min/max of a); no rule yet",
        "histogram2d": "counts are linear in weights; no rule yet",
        "histogramdd": "counts are linear in weights; no rule yet",
        "histogram_bin_edges": "edges are linear in the data's min and max; no rule yet",
    },
    "linalg": {},
    "fft": {},
}


def _load_generator():
    spec = importlib.util.spec_from_file_location("_fastgrad_gen_coverage", REPO / "scripts" / "gen_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def gen():
    return _load_generator()


@pytest.fixture(scope="module")
def this_module():
    import sys

    return sys.modules[__name__]


def _in_installed_numpy(gen, section, name):
    """False for a NumPy function that the installed NumPy lacks (fastgrad differentiates
    what the installed NumPy has); True for fastgrad's own names and internal primitives."""
    fastgrad_module, numpy_module = [(f, n) for s, f, n in gen.SECTIONS if s == section][0]
    return name in gen._SPECIAL_SPEC_NAMES or hasattr(numpy_module, name) or hasattr(fastgrad_module, name)


def _classified(gen, this_module):
    out = []
    for section, module, _ in gen.SECTIONS:
        for name, obj in gen.public_callables(module):
            kind, _ = gen.classify(section, name, obj, this_module)
            out.append((section, name, obj, kind))
    return out


# ---------------------------------------------------------------------------------------
# 1. every public callable is accounted for


def test_every_public_callable_is_accounted_for(gen, this_module):
    classified = _classified(gen, this_module)
    unknown = ["%s.%s" % (s, n) for s, n, _, k in classified if k == "unknown"]
    partial = ["%s.%s" % (s, n) for s, n, _, k in classified if k == "partial"]
    assert not unknown, (
        "functions with no rule and no review (give them a VJP and a JVP, or register them "
        "non-differentiable, or add them to NOT_DIFFERENTIABLE / KNOWN_GAPS with a reason): " + ", ".join(unknown)
    )
    assert not partial, "primitives with only one of VJP / JVP: " + ", ".join(partial)
    # sanity: the walk really saw the namespaces
    kinds = [k for _, _, _, k in classified]
    assert kinds.count("rules") >= 200 and kinds.count("constant") >= 100


def test_reviewed_lists_are_current(gen, this_module):
    """Entries of the lists must be functions that exist and still lack rules (a function
    that gained rules, or disappeared, is removed from the list)."""
    modules = {s: m for s, m, _ in gen.SECTIONS}
    stale = []
    for lists in (NOT_DIFFERENTIABLE, KNOWN_GAPS):
        for section, entries in lists.items():
            for name, reason in entries.items():
                assert reason.strip(), name
                obj = getattr(modules[section], name, None)
                if obj is None:
                    # present in NumPy only from some version on: tolerated elsewhere
                    if hasattr(dict((s, n) for s, _, n in gen.SECTIONS)[section], name):
                        stale.append("%s.%s (missing from fastgrad)" % (section, name))
                    continue
                if gen.is_notrace(obj) or (obj in gen.primitive_vjps and obj in gen.primitive_jvps):
                    stale.append("%s.%s (now has rules or is constant)" % (section, name))
    both = set(NOT_DIFFERENTIABLE["numpy"]) & set(KNOWN_GAPS["numpy"])
    assert not both, both
    assert not stale, stale


def test_constant_functions_return_plain_values(gen):
    """The constant category is real: a sample of them, called on a box, records nothing."""
    from fastgrad.core import make_vjp
    import fastgrad.numpy as np

    seen = []

    def f(x):
        for fun in (np.sign, np.floor, np.argmax, np.isfinite, np.signbit, np.shape, np.zeros_like, np.heaviside):
            args = (x, 0.5) if fun is np.heaviside else (x,)
            r = fun(*args)
            seen.append(type(r).__module__.split(".")[0])
        return np.sum(x * 2.0)

    vjp, _ = make_vjp(f, onp.array([0.5, -1.5]))
    assert set(seen) <= {"numpy", "builtins"}, seen
    assert onp.allclose(vjp(1.0), [2.0, 2.0])


def test_in_place_functions_refuse_traced_values(gen):
    import fastgrad.numpy as np
    from fastgrad.core import make_vjp
    from fastgrad.numpy import numpy_wrapper

    calls = {
        "copyto": lambda x: np.copyto(onp.zeros(2), x),
        "put": lambda x: np.put(x, [0], [1.0]),
        "putmask": lambda x: np.putmask(x, onp.array([True, False]), 1.0),
        "place": lambda x: np.place(x, onp.array([True, False]), [1.0]),
        "put_along_axis": lambda x: np.put_along_axis(x, onp.array([0]), 1.0, 0),
        "fill_diagonal": lambda x: np.fill_diagonal(np.reshape(x, (1, 2)), 1.0),
    }
    assert set(calls) == set(numpy_wrapper.MUTATING_NAMES)
    for call in calls.values():
        with pytest.raises(TypeError, match="in place"):
            make_vjp(call, onp.array([1.0, 2.0]))


def test_composites_record_primitives_with_rules(gen):
    """Python-level functions (array, concatenate, where...) record only primitives that
    have both rules."""
    for (section, name), prims in gen.COMPOSITE_PRIMITIVES.items():
        module = {s: m for s, m, _ in gen.SECTIONS}[section]
        if not _in_installed_numpy(gen, section, name):
            continue
        assert callable(getattr(module, name)), name
        for attr in prims:
            try:
                prim = gen.internal(attr)
            except AttributeError:
                prim = getattr(module, attr, None) or getattr({s: m for s, m, _ in gen.SECTIONS}["numpy"], attr)
            assert prim in gen.primitive_vjps and prim in gen.primitive_jvps, (name, attr)


def test_internal_primitives_have_both_rules(gen):
    prims = gen.internal_primitives()
    names = {a for a, _, _ in prims}
    assert {
        "getitem",
        "untake",
        "where3",
        "concatenate_args",
        "stack_args",
        "array_from_args",
        "astype_method",
        "multi_dot_args",
        "lstsq_parts",
    } <= names
    missing = [a for a, _, p in prims if p not in gen.primitive_vjps or p not in gen.primitive_jvps]
    assert not missing, missing


# ---------------------------------------------------------------------------------------
# 2. the SPEC §5 lists: zero gaps


@pytest.mark.parametrize("which", ["SPEC_AUTOGRAD", "SPEC_BEYOND"])
def test_spec_lists_have_both_rules(gen, which):
    entries = getattr(gen, which)
    assert len(entries) > 40
    missing = []
    for label, section, name, args in entries:
        if not _in_installed_numpy(gen, section, name):
            continue
        prims = gen.spec_primitives(section, name)
        for p in prims:
            for reg, kind in ((gen.primitive_vjps, "VJP"), (gen.primitive_jvps, "JVP")):
                if not gen.covers(reg, p, args):
                    missing.append("%s %s" % (label, kind))
    assert not missing, missing


def test_covers_reads_argument_tables(gen):
    """The registry reader is not vacuous: it sees missing and zero arguments."""
    import fastgrad.numpy as np
    from fastgrad.numpy import numpy_wrapper

    assert gen.covers(gen.primitive_vjps, np.add, (0, 1))
    assert not gen.covers(gen.primitive_vjps, numpy_wrapper.where3, (0,))  # the condition
    assert gen.covers(gen.primitive_vjps, numpy_wrapper.where3, (1, 2))
    assert not gen.covers(gen.primitive_vjps, np.full, (0,))  # the shape
    assert not gen.covers(gen.primitive_vjps, np.meshgrid, None)
    assert gen.rule_args(gen.primitive_vjps, np.einsum) == "all"


# ---------------------------------------------------------------------------------------
# 3. docs/coverage.md is current


def test_coverage_doc_is_up_to_date(gen, this_module):
    doc = REPO / "docs" / "coverage.md"
    current = doc.read_text(encoding="utf-8")
    marker = "Generated with NumPy %s." % onp.__version__
    if marker not in current:
        pytest.skip("docs/coverage.md was generated with another NumPy version")
    expected = gen.render(this_module)
    assert current == expected, "docs/coverage.md is out of date: run `python scripts/gen_coverage.py`"
    assert "**0 gaps**" in expected
