#!/usr/bin/env python
"""Generate docs/coverage.md: the gradient coverage of fastgrad.numpy, .linalg and .fft.

Everything in the page is read from the live registries, not written by hand:

* ``fastgrad.core.primitive_vjps`` / ``primitive_jvps``: which primitives have reverse /
  forward rules, and for which arguments (the rule tables are keyed by argument number);
* the primitives built with ``notrace_primitive`` (constant results, no node recorded) and
  ``register_notrace`` registrations;
* the reviewed lists of ``tests/test_coverage.py``: functions that are not differentiable
  by nature, known gaps, and the Python-level functions that record other primitives.

Usage::

    python scripts/gen_coverage.py           # rewrite docs/coverage.md
    python scripts/gen_coverage.py --check   # exit 1 if docs/coverage.md is out of date

``tests/test_coverage.py`` regenerates the page in memory and compares it with the file.
"""

import argparse
import os
import importlib.util
import inspect
import sys
import types
from pathlib import Path

import numpy as onp

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "coverage.md"
LISTS_FILE = REPO / "tests" / "test_coverage.py"

import fastgrad.numpy as fnp  # noqa: E402
from fastgrad import builtins as _fg_builtins  # noqa: E402
from fastgrad._engine import engine  # noqa: E402
from fastgrad.core import primitive_jvps, primitive_vjps  # noqa: E402
from fastgrad.numpy import _fft_rules, _linalg_rules, numpy_wrapper  # noqa: E402

ZERO, MAKER, DIRECT, SAME = engine.ZERO, engine.MAKER, engine.DIRECT, engine.SAME
Primitive, NotracePrimitive = engine.Primitive, engine.NotracePrimitive

SECTIONS = (("numpy", fnp, onp), ("linalg", fnp.linalg, onp.linalg), ("fft", fnp.fft, onp.fft))
MODULE_NAMES = {"numpy": "fastgrad.numpy", "linalg": "fastgrad.numpy.linalg", "fft": "fastgrad.numpy.fft"}


# ---------------------------------------------------------------------------------------
# The two lists of SPEC §5: what autograd 1.9.1 differentiates, and "beyond autograd".
# Each entry: (label, section, public name or None, required argument numbers or None).
# ``name`` is resolved in the section's fastgrad module; Python-level functions that
# record another primitive are resolved through COMPOSITE_PRIMITIVES below.  ``args`` are
# the arguments that must have rules (None: argument 0, or every argument for rules that
# take all arguments at once).


def _entries(section, names, args=None):
    return [(n, section, n, args) for n in names.split()]


SPEC_AUTOGRAD = (
    # unary math
    _entries(
        "numpy",
        "abs absolute arccos arccosh arcsin arcsinh arctan arctanh cos cosh "
        "deg2rad degrees exp exp2 expm1 fabs log log10 log1p log2 negative "
        "rad2deg radians reciprocal sin sinc sinh sqrt square tan tanh nan_to_num",
    )
    # complex parts
    + _entries("numpy", "real imag conj conjugate angle real_if_close")
    # binary, with broadcasting
    + _entries(
        "numpy",
        "add subtract multiply divide true_divide mod remainder power maximum "
        "minimum fmax fmin logaddexp logaddexp2 arctan2 hypot",
        (0, 1),
    )
    # reductions
    + _entries("numpy", "sum prod mean var std max min amax amin cumsum")
    + [("clip", "numpy", "clip", (0,)), ("where (x, y)", "numpy", "where", (1, 2))]
    # products
    + _entries("numpy", "dot matmul inner outer tensordot kron cross", (0, 1))
    + [("einsum", "numpy", "einsum", None)]
    # shapes
    + _entries(
        "numpy",
        "reshape ravel expand_dims squeeze transpose swapaxes moveaxis "
        "rollaxis atleast_1d atleast_2d atleast_3d broadcast_to",
    )
    # join / split
    + _entries("numpy", "concatenate stack hstack vstack row_stack column_stack dstack append", None)
    + _entries("numpy", "split array_split hsplit vsplit dsplit repeat tile pad")
    # reordering
    + _entries("numpy", "flipud fliplr rot90 roll sort partition")
    + _entries("numpy", "diag diagonal trace tril triu diff gradient")
    + [
        ("full (fill_value)", "numpy", "full", (1,)),
        ("linspace (start, stop)", "numpy", "linspace", (0, 1)),
        ("astype", "numpy", "astype", (0,)),
        ("ndarray.astype (method)", "numpy", "<astype method>", (0,)),
        ("array (from traced elements)", "numpy", "array", None),
        ("select (choicelist, default)", "numpy", "select", (1, 2)),
        ("indexing box[idx]", "numpy", "<getitem>", (0,)),
        ("indexing, second order (untake)", "numpy", "<untake>", (0,)),
    ]
    # linalg
    + _entries("linalg", "det slogdet inv pinv norm eigh eig cholesky svd")
    + [("solve", "linalg", "solve", (0, 1))]
    # fft
    + _entries("fft", "fft ifft fft2 ifft2 fftn ifftn rfft irfft rfft2 irfft2 rfftn irfftn fftshift ifftshift")
)

SPEC_BEYOND = (
    _entries(
        "numpy",
        "cumprod ptp flip average median percentile quantile nansum nanmean "
        "nanmax nanmin nanprod nanstd nanvar nancumsum cbrt positive "
        "matrix_transpose trapezoid unstack cumulative_sum cumulative_prod",
    )
    + [
        ("take (a)", "numpy", "take", (0,)),
        ("take_along_axis (arr)", "numpy", "take_along_axis", (0,)),
        ("compress (a)", "numpy", "compress", (1,)),
        ("choose (choices)", "numpy", "choose", (1,)),
        ("interp (x, fp)", "numpy", "interp", (0, 2)),
    ]
    + _entries("numpy", "float_power fmod vdot vecdot matvec vecmat convolve correlate", (0, 1))
    + [("copysign (x1; x2: zero, piecewise constant)", "numpy", "copysign", (0,))]
    + _entries("numpy", "concat asarray", None)
    + _entries("linalg", "qr eigvalsh eigvals matrix_power vector_norm matrix_norm svdvals")
    + [("lstsq", "linalg", "lstsq", (0, 1)), ("multi_dot", "linalg", "multi_dot", None)]
    + _entries("fft", "hfft ihfft")
)


# Python-level functions of the namespaces (not primitives) -> the primitives they record
# on traced input (attribute names in numpy_wrapper / _linalg_rules).
COMPOSITE_PRIMITIVES = {
    ("numpy", "array"): ["array_from_args", "astype_method", "copy", "reshape"],
    ("numpy", "asarray"): ["array_from_args", "astype_method"],
    ("numpy", "concatenate"): ["concatenate_args", "ravel", "astype_method"],
    ("numpy", "concat"): ["concatenate_args", "ravel", "astype_method"],
    ("numpy", "stack"): ["stack_args", "astype_method"],
    ("numpy", "hstack"): ["concatenate_args", "reshape"],
    ("numpy", "vstack"): ["concatenate_args", "reshape"],
    ("numpy", "dstack"): ["concatenate_args", "reshape"],
    ("numpy", "row_stack"): ["concatenate_args", "reshape"],
    ("numpy", "column_stack"): ["concatenate_args", "reshape"],
    ("numpy", "append"): ["concatenate_args", "ravel"],
    ("numpy", "block"): ["concatenate_args", "reshape"],
    ("numpy", "select"): ["where3"],
    ("numpy", "where"): ["where3"],
    ("numpy", "apply_along_axis"): ["moveaxis", "getitem", "stack_args", "reshape", "transpose"],
    ("numpy", "make_diagonal"): ["diag_embed"],
    ("linalg", "multi_dot"): ["multi_dot_args"],
    ("linalg", "lstsq"): ["lstsq_parts"],
    ("linalg", "T"): ["swapaxes"],
}

# SPEC names that are not attributes of the public modules
_SPECIAL_SPEC_NAMES = {"<getitem>": "getitem", "<untake>": "untake", "<astype method>": "astype_method"}


def internal(attr):
    """An internal primitive by its attribute name in numpy_wrapper or _linalg_rules."""
    for mod in (numpy_wrapper, _linalg_rules, _fft_rules):
        obj = getattr(mod, attr, None)
        if obj is not None:
            return obj
    raise AttributeError(attr)


def spec_primitives(section, name):
    """The primitive objects that carry the rules of a SPEC entry."""
    if name in _SPECIAL_SPEC_NAMES:
        return [internal(_SPECIAL_SPEC_NAMES[name])]
    if (section, name) in COMPOSITE_PRIMITIVES:
        first = COMPOSITE_PRIMITIVES[(section, name)][0]
        return [internal(first)]
    module = dict((s, m) for s, m, _ in SECTIONS)[section]
    return [getattr(module, name)]


# ---------------------------------------------------------------------------------------
# Reading the registries


def is_primitive(obj):
    return isinstance(obj, Primitive) and not isinstance(obj, NotracePrimitive)


def is_notrace(obj):
    if isinstance(obj, NotracePrimitive):
        return True
    return any(obj in prims for prims in engine.notrace_primitives.values())


def rule_args(registry, prim):
    """How ``registry`` covers ``prim``'s arguments: None (no rule), "all" (a rule that
    takes every argument), "all (linear)" (the function applied to the tangent, for every
    argument), or (argnums with a rule, argnums registered as zero)."""
    rule = registry.get(prim)
    if rule is None:
        return None
    entries = getattr(rule, "entries", None)
    if entries is None:
        return "all"
    if getattr(rule, "default", None) is not None:
        return "all (linear)"
    ruled = tuple(sorted(i for i, (kind, _) in entries.items() if kind != ZERO))
    zero = tuple(sorted(i for i, (kind, _) in entries.items() if kind == ZERO))
    return ruled, zero


def covers(registry, prim, args):
    """True if ``prim`` has a rule in ``registry`` for every argument number in ``args``
    (None: argument 0, or a rule over all arguments)."""
    status = rule_args(registry, prim)
    if status is None:
        return False
    if isinstance(status, str):
        return True
    ruled, _ = status
    return set(args if args is not None else (0,)) <= set(ruled) and bool(ruled)


def _param_names(section, name, prim):
    """Argument names of a primitive, from NumPy's own signature where there is one."""
    np_mod = dict((s, n) for s, _, n in SECTIONS).get(section)
    candidates = [getattr(np_mod, name, None) if np_mod is not None else None, getattr(prim, "fun", None)]
    for obj in candidates:
        if obj is None:
            continue
        if isinstance(obj, onp.ufunc):
            return ["x"] if obj.nin == 1 else ["x%d" % (i + 1) for i in range(obj.nin)]
        try:
            params = list(inspect.signature(obj).parameters.values())
        except (TypeError, ValueError):
            continue
        names = []
        for p in params:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                names.append(p.name)
            elif p.kind == p.VAR_POSITIONAL:
                names.append("*" + p.name)
                break
            else:
                break
        if names and names != ["a", "*args"]:
            return names
    return []


def _arg_label(names, i):
    if i < len(names) and not names[i].startswith("*"):
        return names[i]
    if names and names[-1].startswith("*"):
        return "%s[%d]" % (names[-1][1:], i - len(names) + 1)
    return "arg %d" % i


def describe_args(registry, section, name, prim):
    status = rule_args(registry, prim)
    if status is None:
        return "—"
    if isinstance(status, str):
        return status
    ruled, zero = status
    names = _param_names(section, name, prim)
    text = ", ".join(_arg_label(names, i) for i in ruled) or "none"
    if zero:
        text += " (zero: %s)" % ", ".join(_arg_label(names, i) for i in zero)
    return text


# ---------------------------------------------------------------------------------------
# The reviewed lists of tests/test_coverage.py


def load_lists():
    spec = importlib.util.spec_from_file_location("_fastgrad_coverage_lists", LISTS_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def public_callables(module):
    """(name, object) of the public callables of a fastgrad.numpy module, classes apart."""
    names = getattr(module, "__all__", None) or dir(module)
    for name in sorted(set(names)):
        if name.startswith("_"):
            continue
        obj = getattr(module, name, None)
        if obj is None or isinstance(obj, types.ModuleType) or not callable(obj):
            continue
        yield name, obj


def classify(section, name, obj, lists):
    """(kind, detail) of one public callable:
    'rules'      primitive with a VJP and a JVP rule;
    'partial'    primitive with only one of them (must be a known gap);
    'constant'   notrace primitive / register_notrace: plain results, no node;
    'composite'  Python function that records other primitives (COMPOSITE_PRIMITIVES);
    'in-place'   writes into an argument: refuses traced values;
    'class'      a class / scalar type (NumPy's own; integer types accept boxes);
    'nature'     reviewed: not differentiable by nature;
    'gap'        reviewed: known gap;
    'unknown'    none of the above (tests/test_coverage.py fails)."""
    nature = lists.NOT_DIFFERENTIABLE.get(section, {})
    gaps = lists.KNOWN_GAPS.get(section, {})
    if isinstance(obj, type):
        return "class", ""
    if is_notrace(obj):
        return "constant", ""
    if is_primitive(obj):
        v, j = obj in primitive_vjps, obj in primitive_jvps
        if v and j:
            return "rules", ""
        if name in gaps:
            return "gap", gaps[name]
        if name in nature:
            return "nature", nature[name]
        return ("partial" if (v or j) else "unknown"), ""
    if (section, name) in COMPOSITE_PRIMITIVES:
        return "composite", ", ".join(COMPOSITE_PRIMITIVES[(section, name)])
    if section == "numpy" and name in numpy_wrapper.MUTATING_NAMES:
        return "in-place", ""
    if name in nature:
        return "nature", nature[name]
    if name in gaps:
        return "gap", gaps[name]
    return "unknown", ""


def internal_primitives():
    """(attribute name, module name, primitive) of the primitives of fastgrad.numpy that have
    no public name (indexing, where with three arguments, the operator primitives...)."""
    public = set()
    for _, module, _ in SECTIONS:
        for name in dir(module):
            public.add(id(getattr(module, name)))
    borrowed = {id(getattr(_fg_builtins, n)) for n in dir(_fg_builtins)}
    seen, out = set(), []
    for mod in (numpy_wrapper, _linalg_rules, _fft_rules):
        for attr in sorted(dir(mod)):
            obj = getattr(mod, attr)
            if not is_primitive(obj) or id(obj) in public or id(obj) in seen or id(obj) in borrowed:
                continue
            if (
                getattr(obj, "__module__", None) not in (None, mod.__name__)
                and not attr.endswith("_op")
                and attr != "getitem"
            ):
                continue
            seen.add(id(obj))
            out.append((attr.lstrip("_"), mod.__name__, obj))
    return out


# ---------------------------------------------------------------------------------------
# Rendering

SUMMARY_TEXT = {
    "rules": "with VJP + JVP rules",
    "partial": "with only one of VJP / JVP",
    "constant": "constant (no node)",
    "composite": "traced through other primitives",
    "in-place": "in place (refuse traced values)",
    "nature": "not differentiable by nature",
    "gap": "known gaps",
    "unknown": "unreviewed",
}

STATUS_TEXT = {
    "rules": "VJP + JVP",
    "partial": "partial",
    "constant": "constant",
    "composite": "traced via",
    "in-place": "in place",
    "nature": "not differentiable",
    "gap": "**gap**",
    "unknown": "**unreviewed**",
}


def _md(text):
    return str(text).replace("|", "\\|")


def _spec_labels():
    tags = {}
    for which, entries in (("autograd", SPEC_AUTOGRAD), ("beyond autograd", SPEC_BEYOND)):
        for _, section, name, _ in entries:
            tags.setdefault((section, name), which)
    return tags


def section_rows(section, module, lists):
    """Rows of one namespace, aliases (one object, several names) merged."""
    groups = {}
    order = []
    for name, obj in public_callables(module):
        key = id(obj)
        if key not in groups:
            groups[key] = (obj, [])
            order.append(key)
        groups[key][1].append(name)
    rows = []
    for key in order:
        obj, names = groups[key]
        own = getattr(obj, "__name__", None)
        main = own if own in names else names[0]
        aliases = [n for n in names if n != main]
        kinds = {n: classify(section, n, obj, lists) for n in names}
        kind, detail = kinds[main]
        rows.append((main, aliases, obj, kind, detail))
    rows.sort(key=lambda r: r[0].lower())
    return rows


def spec_status(entries):
    rows, gaps = [], 0
    for label, section, name, args in entries:
        try:
            prims = spec_primitives(section, name)
        except AttributeError:
            prims = []
        v = bool(prims) and all(covers(primitive_vjps, p, args) for p in prims)
        j = bool(prims) and all(covers(primitive_jvps, p, args) for p in prims)
        if not (v and j):
            gaps += 1
        where = MODULE_NAMES[section]
        via = ", ".join(getattr(p, "__name__", "?") for p in prims) if prims else "missing"
        rows.append((label, where, via, "yes" if v else "**no**", "yes" if j else "**no**"))
    return rows, gaps


def render(lists=None):
    """The text of docs/coverage.md."""
    if lists is None:
        lists = load_lists()
    tags = _spec_labels()
    out = []
    w = out.append
    w("# fastgrad.numpy: coverage")
    w("")
    w("<!-- Generated by scripts/gen_coverage.py from fastgrad's rule registries; do not edit. -->")
    w("")
    w(
        "Generated with NumPy %s. Every public function of `fastgrad.numpy`, "
        "`fastgrad.numpy.linalg` and `fastgrad.numpy.fft` is listed with its status, read "
        "from the live registries (`fastgrad.core.primitive_vjps` / `primitive_jvps` and the "
        "constant primitives); the SciPy side is in [the SciPy coverage tables]"
        "(coverage_scipy.md)." % onp.__version__
    )
    w("")
    w("Status:")
    w("")
    w(
        "* **VJP + JVP**: a primitive with reverse and forward rules. The *VJP args* / *JVP args* "
        "columns name the arguments that have a rule (`all`: one rule for every argument, as for "
        "`einsum`; `all (linear)`: linear in each argument, the forward rule applies the function "
        "to the tangent); `zero: ...` are arguments registered with a zero "
        "derivative (an index, a condition). Any other argument raises `NotImplementedError` "
        "naming the function and the argument when differentiated."
    )
    w(
        "* **constant**: the result does not depend differentiably on the inputs (comparisons, "
        "rounding, arg-indices, shapes, `*_like`...): boxes are unwrapped, nothing is recorded, "
        "the result is a plain value."
    )
    w(
        "* **traced via**: a Python-level function that records the primitives it names "
        "(building arrays from lists of traced values, `where`, ...)."
    )
    w("* **in place**: writes into an argument; raises `TypeError` on a traced value.")
    w("* **not differentiable**: reviewed as not differentiable by nature (the reason is given).")
    w(
        "* **gap**: should have rules but has none yet (the reason is given); differentiating it "
        "raises `NotImplementedError`."
    )
    w("")
    w(
        "Checks: `tests/test_coverage.py` fails if a function appears that is in none of these "
        "categories, or if this page is out of date; `tests/test_adjoint_property.py` checks "
        "`<u, J v> == <J^T u, v>` between the forward and the reverse rule of each primitive on "
        "random shapes, dtypes and broadcasts."
    )
    w("")

    # SPEC lists
    w("## SPEC §5 lists")
    w("")
    total_gaps = 0
    blocks = []
    for title, entries in (
        ("Functions autograd 1.9.1 differentiates", SPEC_AUTOGRAD),
        ("Beyond autograd", SPEC_BEYOND),
    ):
        rows, gaps = spec_status(entries)
        total_gaps += gaps
        blocks.append((title, rows, gaps))
    w(
        "Every function of the two lists of the specification, with the primitive that "
        "carries its rules. **%d gaps** in %d entries." % (total_gaps, sum(len(b[1]) for b in blocks))
    )
    w("")
    for title, rows, gaps in blocks:
        w("### %s" % title)
        w("")
        w("%d functions, %d with both a VJP and a JVP, %d gaps." % (len(rows), len(rows) - gaps, gaps))
        w("")
        w("| function | module | primitive | VJP | JVP |")
        w("|---|---|---|---|---|")
        for label, where, via, v, j in rows:
            w("| %s | `%s` | `%s` | %s | %s |" % (_md(label), where, via, v, j))
        w("")

    # the namespaces
    for section, module, _ in SECTIONS:
        rows = section_rows(section, module, lists)
        counts = {}
        for _, _, _, kind, _ in rows:
            counts[kind] = counts.get(kind, 0) + 1
        names_total = sum(1 + len(r[1]) for r in rows)
        w("## %s" % MODULE_NAMES[section])
        w("")
        summary = ", ".join("%d %s" % (counts[k], SUMMARY_TEXT[k]) for k in SUMMARY_TEXT if counts.get(k))
        w(
            "Summary: %d public callables (%d names with aliases; classes apart): %s."
            % (
                len(rows) - counts.get("class", 0),
                names_total - sum(1 + len(r[1]) for r in rows if r[3] == "class"),
                summary,
            )
        )
        w("")
        w("| function | status | VJP args | JVP args | notes |")
        w("|---|---|---|---|---|")
        classes = []
        for main, aliases, obj, kind, detail in rows:
            if kind == "class":
                classes.append(main)
                continue
            label = "`%s`" % main + (" (= %s)" % ", ".join("`%s`" % a for a in aliases) if aliases else "")
            notes = []
            tag = tags.get((section, main)) or next((tags[(section, a)] for a in aliases if (section, a) in tags), None)
            if tag:
                notes.append("SPEC §5: " + tag)
            if kind in ("rules", "partial", "gap", "nature") and is_primitive(obj):
                vargs = describe_args(primitive_vjps, section, main, obj)
                jargs = describe_args(primitive_jvps, section, main, obj)
            else:
                vargs = jargs = "—"
            if kind == "composite":
                status = "traced via `%s`" % "`, `".join(detail.split(", "))
            else:
                status = STATUS_TEXT[kind]
                if detail:
                    notes.append(detail)
            w("| %s | %s | %s | %s | %s |" % (label, status, _md(vargs), _md(jargs), _md("; ".join(notes))))
        w("")
        if classes and section == "numpy":
            w(
                "Classes and scalar types are NumPy's own (the integer scalar types accept "
                "traced values, so that a traced value can be converted into an index): %s."
                % ", ".join("`%s`" % c for c in classes)
            )
            w("")
        elif classes:
            w("Classes (NumPy's own): %s." % ", ".join("`%s`" % c for c in classes))
            w("")

    # internal primitives
    w("## Internal primitives")
    w("")
    w(
        "Primitives of fastgrad.numpy without a public name, recorded by indexing, by the box "
        "operators, and by the functions above."
    )
    w("")
    w("| primitive | module | VJP args | JVP args |")
    w("|---|---|---|---|")
    for attr, modname, prim in internal_primitives():
        w(
            "| `%s` | `%s` | %s | %s |"
            % (
                attr,
                modname,
                _md(describe_args(primitive_vjps, "internal", attr, prim)),
                _md(describe_args(primitive_jvps, "internal", attr, prim)),
            )
        )
    w("")
    # The SciPy tables are written by hand next to the rules' notes (docs/coverage_scipy.md);
    # they are included here so that this page covers everything, one level down.
    scipy_page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "coverage_scipy.md")
    with open(scipy_page) as f:
        lines = f.read().splitlines()
    w("## fastgrad.scipy and fastgrad.misc")
    w("")
    w("Also on its own page: [the SciPy coverage tables](coverage_scipy.md).")
    for line in lines[1:]:  # its title becomes the heading above
        w("#" + line if line.startswith("#") else line)
    w("")
    out.extend(backend_section())
    return "\n".join(out)


KNOWN_FAILURES = REPO / "tests" / "backends" / "known_failures.txt"
BACKEND_LABELS = {
    "fakecupy": "CuPy (the stand-in of tests/backends)",
    "dask-1chunk": "Dask, one chunk",
    "dask-chunks2": "Dask, chunks of 2",
    "dask-uneven": "Dask, uneven chunks",
}


def _function_of_case(case_id):
    """The function a backend rule case exercises: 'linalg:eig-real' -> 'linalg.eig'."""
    table, name = case_id.split(":", 1)
    name = name.split("-")[0]
    prefix = {"linalg": "linalg.", "fft": "fft.", "special": "scipy.special."}.get(table, "")
    return prefix + name if not name.startswith(prefix) else name


def backend_section():
    """The section on other array libraries, read from tests/backends/known_failures.txt (the
    rule cases that do not yet work on a backend, with why)."""
    refused, failing = {}, {}
    for line in KNOWN_FAILURES.read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        backend, case_id, category = line.split("\t")[:3]
        into = refused if category in ("backend-lacks", "fastgrad-refuses") else failing
        into.setdefault(backend, {}).setdefault(_function_of_case(case_id), set()).add(category)
    out = ["## Other array libraries (Dask, CuPy)", ""]
    out.append(
        "fastgrad.numpy's functions run on Dask and CuPy arrays through NumPy's dispatch "
        "([Beyond one machine](beyond-one-machine.md)). `tests/backends` reruns every rule case "
        "on them; the cases that do not work yet are listed in `tests/backends/known_failures.txt`, "
        "from which these lists are made, by rule case (its name without the variant: the function, "
        "or the function and what the case exercises). **Refused**: the library cannot run the function (or "
        "its derivative) and an error says so. **Not yet backend-neutral**: a rule still converts "
        "to NumPy or branches on data (Dask computes, CuPy copies to the host), or passes a "
        "keyword the library rejects; these are being fixed in the rule modules."
    )
    out.append("")
    for backend, label in BACKEND_LABELS.items():
        out.append("### %s" % label)
        out.append("")
        names = sorted(refused.get(backend, {}))
        out.append("Refused (%d): %s." % (len(names), ", ".join("`%s`" % n for n in names) if names else "none"))
        out.append("")
        names = sorted(failing.get(backend, {}))
        out.append(
            "Not yet backend-neutral (%d): %s."
            % (len(names), ", ".join("`%s`" % n for n in names) if names else "none")
        )
        out.append("")
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if docs/coverage.md is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
        if current != text:
            print("docs/coverage.md is out of date: run python scripts/gen_coverage.py", file=sys.stderr)
            return 1
        print("docs/coverage.md is up to date")
        return 0
    DOC.write_text(text, encoding="utf-8")
    print("wrote", DOC.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
