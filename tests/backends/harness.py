"""Running one rule case on one backend, and saying what happened.

For a case ``fun(np, *args)`` the NumPy run is the reference.  On a backend, with the
arguments (and, where the backend refuses NumPy operands, the case's own constants) moved
there, and while counting the work the program forces (Dask graph executions, host
transfers of the CuPy stand-in), it builds:

* the value;
* for every differentiable argument: the VJP of a fixed random cotangent and the JVP of
  a fixed random tangent (the same directions as the reference, moved to the backend);
* second order for the first argument: the VJP of ``x -> vjp_x(u)`` (reverse over reverse).

Then, outside the counted block: nothing may have been computed or transferred; every
float result must live on the backend (a NumPy array there is a silent conversion); every
result must equal the reference to 1e-10 relative (max |a - e| / max |e| per leaf).

The outcome is ``correct``, or a failure with a category (see ``CATEGORIES``) found from
the exception (its message and where in fastgrad it was raised) or from the check that
failed.
"""

import re
import traceback
import warnings

import numpy as onp

import fastgrad
import fastgrad.numpy as fnp
from fastgrad._backends import BackendError
from array_backends import NUMPY, leaves, put_tree
from cases import rebind_constants

RTOL = 1e-10

# category -> (kind, what it means).  kind: refused = a clear error naming the function
# (acceptable for issue #17), wrong = a silent wrong answer (a wrong value, a value on
# another backend, work forced while building), broken = any other exception, case = the
# case itself is not portable (it mixes a NumPy array into device arrays in its own code).
CATEGORIES = {
    "backend-lacks": ("refused", "the backend has no implementation of a function (its own clear error)"),
    "fastgrad-refuses": ("refused", "fastgrad's error naming the function and the backend (fastgrad._backends)"),
    "scatter-add": ("broken", "np.add.at (ufunc.at) in a rule: neither Dask nor CuPy has it"),
    "mut-add": ("broken", "in-place x += y of a backend cotangent into a NumPy array (ArrayVSpace._mut_add)"),
    "default-kwarg": (
        "broken",
        "a default argument passed explicitly (order=, subok=, out=, ...) that the backend rejects",
    ),
    "to-numpy": ("broken", "a rule converts a value to NumPy (np.asarray / float / .tolist) and the backend refuses"),
    "numpy-operand": ("broken", "fastgrad mixes a NumPy array it made (zeros, ones, masks) into backend arrays"),
    "computes": (
        "wrong",
        "building the value or a derivative made Dask compute (a conversion or a Python branch on data)",
    ),
    "host-sync": (
        "wrong",
        "building the value or a derivative copied device data to the host (a Python branch on data)",
    ),
    "wrong-backend": ("wrong", "a result is not on the backend (a NumPy value came back)"),
    "wrong-value": ("wrong", "a result differs from NumPy's by more than 1e-10 relative"),
    "case-not-portable": ("case", "the case's own code mixes NumPy arrays into device arrays (not fastgrad's doing)"),
    "other": ("broken", "another exception"),
}


class Outcome:
    def __init__(self, category=None, message=""):
        self.category, self.message = category, message

    @property
    def correct(self):
        return self.category is None

    @property
    def kind(self):
        return "correct" if self.category is None else CATEGORIES[self.category][0]

    def __repr__(self):
        return "Outcome(%s%s)" % (self.category or "correct", ": " + self.message if self.message else "")


def _bind(case, backend):
    fun = case.fun
    if backend.moves_constants:
        fun = rebind_constants(fun, backend.put)

    def f(*args):
        return fun(fnp, *args)

    f.__name__ = case.id
    return f


def _randn_like(value, rs):
    if isinstance(value, (list, tuple)):
        return (
            type(value)(_randn_like(v, rs) for v in value)
            if not hasattr(value, "_fields")
            else tuple(_randn_like(v, rs) for v in value)
        )
    a = onp.asarray(value)
    if a.dtype.kind not in "fc":
        return None
    r = rs.randn(*a.shape)
    if a.dtype.kind == "c":
        r = r + 1j * rs.randn(*a.shape)
    return onp.asarray(r, dtype=a.dtype)


def _fix_none(value):
    """Cotangents for non-float outputs (an integer rank, a sign): zeros of their shape."""
    return value


def _build(case, backend, directions):
    """Everything the checks compare, as built on ``backend`` (not yet computed)."""
    f = _bind(case, backend)
    args = put_tree(backend, case.args)
    out = {"value": f(*args)}
    for i in case.argnums:
        u = put_tree(backend, directions["u"])
        vjp, _ = fastgrad.make_vjp(f, i)(*args)
        out["vjp%d" % i] = vjp(u)
        if directions.get("d%d" % i) is not None:
            d = put_tree(backend, directions["d%d" % i])
            out["jvp%d" % i] = fastgrad.make_jvp(f, i)(*args)(d)[1]
    if directions.get("w") is not None:
        i = case.argnums[0]
        u = put_tree(backend, directions["u"])

        def vjp_of_f(*a):
            return fastgrad.make_vjp(f, i)(*a)[0](u)

        w = put_tree(backend, directions["w"])
        vjp2, _ = fastgrad.make_vjp(vjp_of_f, i)(*args)
        out["vjp2"] = vjp2(w)
    return out


_REFERENCES = {}
OUTCOMES = {}  # (backend name, case id) -> Outcome, for the end-of-run summary


def reference(case):
    """The NumPy results and the fixed directions of ``case`` (cached)."""
    try:
        return _REFERENCES[case.id]
    except KeyError:
        pass
    rs = onp.random.RandomState(17)
    f = _bind(case, NUMPY)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = f(*case.args)
        directions = {"u": _randn_like(value, rs)}
        for i in case.argnums:
            d = _randn_like(case.args[i], rs)
            try:  # a case without a JVP rule is checked in reverse mode only
                fastgrad.make_jvp(f, i)(*case.args)(d)
                directions["d%d" % i] = d
            except Exception:
                pass
        w = _randn_like(case.args[case.argnums[0]], rs)
        try:
            directions["w"] = w
            results = _build(case, NUMPY, directions)
        except Exception:  # no second order for this case
            del directions["w"]
            results = _build(case, NUMPY, directions)
    _REFERENCES[case.id] = (results, directions)
    return results, directions


def _magnitude(e):
    e = onp.asarray(e)
    if not e.size or e.dtype.kind not in "fciub":
        return 0.0
    m = float(onp.max(onp.abs(e)))
    return m if onp.isfinite(m) else 0.0


# A result whose exact value is 0 (a second derivative of a linear function, say) comes out
# of NumPy's reference as round-off of the case's other quantities (1e-17 where they are of
# order 1): a backend's result agrees with it when both are round-off, at most this fraction
# of the largest magnitude among the case's results.  Any other result is compared relative
# to its own reference, as before.
ROUND_OFF = 1e-12


def _is_round_off(a, e, bound):
    """``a`` and ``e`` of one shape, finite, nonempty and both at most ``bound`` in size."""
    a, e = onp.asarray(a), onp.asarray(e)
    if a.shape != e.shape or not e.size or a.dtype.kind not in "fciub" or e.dtype.kind not in "fciub":
        return False
    both = (a, e)
    return all(bool(onp.all(onp.isfinite(v))) and float(onp.max(onp.abs(v))) <= bound for v in both)


def _max_rel_err(a, e):
    a = onp.asarray(a)
    e = onp.asarray(e)
    if a.shape != e.shape:
        return onp.inf
    if not e.size:
        return 0.0
    scale = float(onp.max(onp.abs(e)))
    err = float(onp.max(onp.abs(a.astype(complex) - e.astype(complex))))
    if not onp.isfinite(scale):
        return 0.0 if onp.array_equal(a, e, equal_nan=True) else onp.inf
    return err / scale if scale else err


def run(case, backend):
    """The outcome of ``case`` on ``backend``."""
    expected, directions = reference(case)
    counter = failure = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with backend.counting() as counter:
                built = _build(case, backend, directions)
    except Exception as e:
        failure = e
    if counter is not None and counter.count:
        # work forced while building is wrong even when the case then fails: a refusal must
        # come before any compute or transfer
        category = "computes" if backend.name.startswith("dask") else "host-sync"
        sites = sorted({_site(stack) for stack in counter.stacks})
        then = "" if failure is None else ", then %s: %s" % (type(failure).__name__, _short(failure, 80))
        return Outcome(category, "%d while building, from %s%s" % (counter.count, ", ".join(sites), then))
    if failure is not None:
        return classify_exception(failure)
    for key, value in built.items():
        for leaf, ref in zip(leaves(value), leaves(expected[key])):
            if onp.asarray(ref).dtype.kind in "fc" and not backend.owns(leaf):
                return Outcome("wrong-backend", "%s is a %s" % (key, type(leaf).__name__))
    flat = [(key, leaf) for key in built for leaf in leaves(built[key])]
    try:
        if hasattr(backend, "take_all"):
            values = backend.take_all([leaf for _, leaf in flat])
        else:
            values = [backend.take(leaf) for _, leaf in flat]
    except Exception as e:
        return Outcome("other", "computing the result failed: %s: %s" % (type(e).__name__, _short(e)))
    round_off = ROUND_OFF * max(_magnitude(e) for key in expected for e in leaves(expected[key]))
    for key in built:
        got_leaves = [v for (k, _), v in zip(flat, values) if k == key]
        ref_leaves = leaves(expected[key])
        if len(got_leaves) != len(ref_leaves):
            return Outcome("wrong-value", "%s has %d leaves, NumPy's %d" % (key, len(got_leaves), len(ref_leaves)))
        for a, e in zip(got_leaves, ref_leaves):
            if _is_round_off(a, e, round_off):
                continue  # an exact 0 both ways, up to the reference's round-off
            err = _max_rel_err(a, e)
            if not err <= RTOL:
                return Outcome("wrong-value", "%s: relative error %.3g" % (key, err))
    return Outcome()


def _short(e, n=160):
    s = str(e).replace("\n", " ")
    return s if len(s) <= n else s[: n - 3] + "..."


def _fastgrad_frames(tb):
    """(file, line, function) of the frames inside src/fastgrad, innermost last."""
    return [
        (fr.filename, fr.lineno, fr.name)
        for fr in traceback.extract_tb(tb)
        if "/fastgrad/" in fr.filename and "/tests/" not in fr.filename
    ]


def _site(stack):
    """The innermost line of src/fastgrad in a stack (who asked the backend for data)."""
    frames = [fr for fr in stack if "/fastgrad/" in fr.filename and "/tests/" not in fr.filename]
    if not frames:
        return "the case's own code"
    fr = frames[-1]
    return "%s:%d %s" % (fr.filename.split("/fastgrad/", 1)[1], fr.lineno, fr.name)


def _where(tb):
    frames = _fastgrad_frames(tb)
    if not frames:
        return ""
    f, line, name = frames[-1]
    return " [%s:%d %s]" % (f.split("/fastgrad/", 1)[1], line, name)


def classify_exception(e):
    tb = e.__traceback__
    msg = str(e)
    frames = traceback.extract_tb(tb)
    names = {fr.name for fr in frames}
    where = _where(tb)
    text = "%s: %s%s" % (type(e).__name__, _short(msg), where)
    # raised under the case's own code (a test module), not under fastgrad's?
    ours = [fr for fr in frames if "/tests/backends/" not in fr.filename]
    ours = [fr for fr in ours if "/fastgrad/" in fr.filename or "/tests/" in fr.filename]
    in_case = bool(ours) and "/tests/" in ours[-1].filename
    if isinstance(e, BackendError):
        return Outcome("fastgrad-refuses", text)
    if "'at'" in msg or ".at(" in msg or "add.at" in msg:
        return Outcome("scatter-add", text)
    if "_mut_add" in names:
        return Outcome("mut-add", text)
    if "tolist" in names or "tolist" in msg:
        return Outcome("to-numpy", text)
    if "Implicit conversion to a NumPy array" in msg:
        return Outcome("case-not-portable" if in_case else "to-numpy", text)
    if "Unsupported type <class 'numpy.ndarray'>" in msg:
        return Outcome("case-not-portable" if in_case else "numpy-operand", text)
    if (
        "unexpected keyword argument" in msg
        or "does not take the following keyword arguments" in msg
        or "positional arguments but" in msg
    ):
        return Outcome("default-kwarg", text)
    if "no implementation found for" in msg or isinstance(e, NotImplementedError):
        return Outcome("backend-lacks", text)
    raised_in_dask = bool(frames) and "/dask/" in frames[-1].filename
    if raised_in_dask and isinstance(e, ValueError) and _DASK_LIMITS.search(msg):
        return Outcome("backend-lacks", text)
    if raised_in_dask and not any("/fastgrad/" in fr.filename for fr in frames):
        # Dask failing on the case's own code, with no fastgrad call in between (its fancy
        # indexing by a 2-d list index, say): Dask's limit, whatever the exception's class
        return Outcome("backend-lacks", text)
    return Outcome("other", text)


# Dask's own refusals of what it cannot do (chunked FFT axes, batched or non-square
# blocked linear algebra): clear errors that name the operation
_DASK_LIMITS = re.compile(r"chunk|Dimension must be|Array must be \dD|Input must have the following properties")
