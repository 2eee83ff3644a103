"""Where the time of each downstream fit goes: compute, the library's Python, the autodiff's own.

    python benchmarks/downstream/profile_split.py                   # every workload (~25 minutes)
    python benchmarks/downstream/profile_split.py --workloads weibull,coxph-elastic-net --seconds 8

For each workload and implementation (fastgrad bound as autograd, and autograd itself: the
"before"), profile_target.py sets the workload up and fits once, then fits for ``--seconds``
while two samplers attach to it for that window only:

- ``perf record --call-graph dwarf`` (kernel sampling of CPU time, complete native stacks).  Each
  sample goes to the innermost frame that has an owner: NumPy/SciPy (their shared objects, BLAS,
  libm), pandas' C, fastgrad's compiled modules (split by symbol into parts, see ``PERF_PARTS``),
  CPython's garbage collector, or the interpreter's evaluation loop, which is "Python code" of
  whoever (libc, the kernel and the rest of libpython count for their caller).  For fastgrad,
  compute is split by whether its backward pass is on the stack.
- ``py-spy record --native``: Python frames merged with native ones.  Its unwinding loses the
  Python frames of some samples (they are dropped), so it is used only to split perf's "Python
  code" share, by the file of the Python frame that was executing (library, pandas, NumPy/SciPy's
  Python, the autodiff's Python modules by part), and, for autograd (pure Python, invisible to
  perf), its compute into forward and backward.

A third run counts calls (profile_target.py ``count``: fastgrad's pure engine without compiled
modules, under cProfile, so every engine step is visible): primitives, nodes, passes, operator
calls per fit.  Writes benchmarks/results/downstream_profile.md and .json.  Shares are shares of
CPU samples, so other jobs on the machine change them much less than they change times.
"""

import argparse
import collections
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(os.path.dirname(HERE), "results")
sys.path.insert(0, HERE)
import workloads  # noqa: E402

BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
LIBRARY_DIRS = ("lifelines/", "pymanopt/", "autograd_gamma/", "formulaic/", "workloads.py")
AUTODIFF_DIRS = {"fastgrad": "fastgrad/", "autograd": "autograd/"}

COMPUTE_FWD = "NumPy/SciPy C, forward and the library's own numerics"
COMPUTE_BWD = "NumPy/SciPy C inside backward passes"
NUMPY_PY = "NumPy/SciPy Python (wrappers, scipy.optimize)"
LIBRARY = "library Python (and the cost functions)"
PANDAS = "pandas"
GC = "garbage collector"
OTHER = "other"
AUTODIFF = "autodiff's own"
CATEGORIES = (COMPUTE_FWD, COMPUTE_BWD, NUMPY_PY, LIBRARY, PANDAS, GC, OTHER)

FWD_CALLS = "forward: tracing and primitive calls"
NODES = "forward: node creation"
MAKERS = "forward: VJP makers run at record time"
BWD_ENGINE = "backward: engine (walk, rule dispatch, accumulation)"
BWD_RULES = "backward: rules (rule bodies, unbroadcast)"
BWD_CALLS = "backward: wrapped NumPy calls made by rules"
FIXED = "grad's fixed cost (operators, trace start and end, output checks)"
VSPACES = "vspace and containers"
OTHER_AD = "other autodiff"
AUTODIFF_PARTS = (FWD_CALLS, NODES, MAKERS, BWD_ENGINE, BWD_RULES, BWD_CALLS, FIXED, VSPACES, OTHER_AD)

# fastgrad's compiled symbols -> part (first match wins; "bwd" parts apply inside a backward pass).
PERF_PARTS = [
    (("vspace", "VSpace", "SequenceBox", "DictBox", "container", "sequence_"), VSPACES, VSPACES),
    (("_vjp_node", "_set_args", "VJPNode___init__", "tp_new_8fastgrad_5_core_VJPNode"), NODES, BWD_CALLS),
    (
        (
            "backward",
            "_accumulate",
            "_add_to_node",
            "_rule_cotangent",
            "rule_for",
            "_call_with",
            "toposort",
            "_release",
            "_take_root",
            "_first_contribution",
            "_node_vjp",
            "_in_use",
            "_own",
            "add_outgrads",
            "_engine_add",
            "sparse_add",
            "_by_generic_add",
            "_exclusive",
            "_same_layout",
            "VJPRule",
        ),
        BWD_ENGINE,
        BWD_ENGINE,
    ),
    (
        (
            "wrap_util",
            "_make_vjp",
            "make_vjp",
            "_core_trace",
            "pause_gc",
            "resume_gc",
            "GCPause",
            "fg_cache",
            "check_output_space",
            "_reject_integers",
        ),
        FIXED,
        FIXED,
    ),
    (
        (
            "call_primitive",
            "call_raw",
            "new_box",
            "box_binop",
            "Primitive",
            "fg_primitive",
            "fg_call",
            "argnums_of",
            "tuple_of",
            "getval",
            "_is_box",
            "isbox",
            "call_notrace",
            "ArithmeticBox",
            "tp_new_8fastgrad_5_core_Box",
            "Box",
        ),
        FWD_CALLS,
        BWD_CALLS,
    ),
]
# the rule modules of fastgrad.numpy (both modes of a primitive sit in one of them)
RULE_MODULES = (
    "numpy_vjps",
    "numpy_jvps",
    "_shapes",
    "_registration",
    "_elementwise",
    "_reductions",
    "_statistics",
    "_products",
    "_shaping",
    "_indexing",
    "_differences",
)
RULE_FILES = tuple("numpy/{}.py".format(m) for m in RULE_MODULES) + (
    "numpy/_linalg_rules.py",
    "numpy/_fft_rules.py",
    "scipy/",
    "numpy/linalg.py",
    "numpy/fft.py",
)
VSPACE_FILES = ("numpy/numpy_vspaces.py", "builtins.py", "misc/flatten.py", "core.py:vspace", "core.py:VSpace")
FIXED_FILES = (
    "differential_operators.py",
    "wrap_util.py",
    "_gc.py",
    "_drop_in.py",
    "__init__.py",
    "util.py",
    "core.py",
    "test_util.py",
)
CALL_FILES = ("numpy/numpy_boxes.py", "numpy/numpy_wrapper.py", "tracer.py")
GC_SYMBOLS = (
    "gc_collect",
    "collect",
    "deduce_unreachable",
    "move_unreachable",
    "subtract_refs",
    "update_refs",
    "visit_decref",
    "visit_reachable",
    "move_legacy_finalizer",
    "handle_legacy_finalizers",
    "finalize_garbage",
    "gc_",
)


# ------------------------------------------------------------------------------------ perf samples


def perf_samples(perf_data):
    """Each sample's frames, leaf first, as (symbol, shared object path)."""
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "ip,sym,dso"], capture_output=True, text=True).stdout
    frames = []
    for line in out.splitlines():
        line = line.strip()
        if not line:
            if frames:
                yield frames
            frames = []
            continue
        _, _, rest = line.partition(" ")
        sym, _, dso = rest.rpartition(" (")
        frames.append((sym, dso.rstrip(")")))
    if frames:
        yield frames


def _perf_owner(sym, dso):
    if "/fastgrad/" in dso:
        return "fastgrad"
    if any(
        k in dso
        for k in (
            "/numpy/",
            "/scipy/",
            "numpy.libs",
            "scipy.libs",
            "openblas",
            "/libm.so",
            "libgfortran",
            "libquadmath",
        )
    ):
        return "compute"
    if "/pandas/" in dso:
        return "pandas"
    if "libpython" in dso or dso.endswith(("/python3", "/python3.11", "/python")):
        if sym.startswith("_PyEval_EvalFrameDefault"):
            return "python"
        if sym.startswith(GC_SYMBOLS):
            return "gc"
    return None


def _perf_part(sym, dso, in_backward):
    module = dso.rsplit("/", 1)[-1].split(".")[0]
    if module in RULE_MODULES or "/scipy/" in dso:
        return BWD_RULES if in_backward else MAKERS
    if module == "builtins":
        return VSPACES
    if module == "wrap_util":
        return FIXED
    for names, fwd, bwd in PERF_PARTS:
        if any(n in sym for n in names):
            return bwd if in_backward else fwd
    return OTHER_AD


def classify_perf(perf_data):
    """Sample counts by owner (compute split by fastgrad's backward pass), fastgrad's compiled
    samples by part, and by symbol (self: the innermost fastgrad frame)."""
    owners, parts, symbols = collections.Counter(), collections.Counter(), collections.Counter()
    total = 0
    for frames in perf_samples(perf_data):
        total += 1
        in_backward = any("/fastgrad/" in d and ("backward" in s or "_node_vjp" in s) for s, d in frames)
        who = None
        for sym, dso in frames:
            who = _perf_owner(sym, dso)
            if who:
                break
        if who == "fastgrad":
            parts[_perf_part(sym, dso, in_backward)] += 1
            module = dso.rsplit("/", 1)[-1].split(".")[0]
            symbols[f"{module}: {sym}"] += 1
        elif who == "compute":
            owners["compute_bwd" if in_backward else "compute_fwd"] += 1
        else:
            owners[who or "other"] += 1
    return {"total": total, "owners": dict(owners), "compiled_parts": dict(parts), "compiled_symbols": dict(symbols)}


# ---------------------------------------------------------------------------------- py-spy samples


def compiled_fastgrad_files():
    """fastgrad's source files that run compiled (py-spy names their native frames by these
    files, as if they were Python frames): the .pyx/.pxd/.c/.h and each .py with a .so twin."""
    import glob
    import importlib.util

    spec = importlib.util.find_spec("fastgrad")  # locates the package without importing it
    root = os.path.dirname(spec.origin)
    files = set()
    for so in glob.glob(os.path.join(root, "**", "*.so"), recursive=True):
        rel = os.path.relpath(so, root).split(".")[0]
        files.add("fastgrad/" + rel + ".py")
    return files


COMPILED_FILES = None


def _is_native_frame(path):
    global COMPILED_FILES
    if COMPILED_FILES is None:
        COMPILED_FILES = compiled_fastgrad_files()
    return (
        path.endswith((".so", ".pyx", ".pxd", ".pxi", ".c", ".h"))
        or ".so." in path
        or path.startswith(("0x", "lib"))
        or path in COMPILED_FILES
    )


def _file_of(frame):
    loc = frame.rsplit(" (", 1)[-1].rstrip(")")
    return loc.split(":")[0]


def _py_owner(path, impl):
    if path.startswith(AUTODIFF_DIRS[impl]):
        return "autodiff"
    if path.startswith(("numpy/", "scipy/")):
        return "numpy"
    if path.startswith(LIBRARY_DIRS):
        return "library"
    if path.startswith("pandas/"):
        return "pandas"
    return None


def _py_part(frame, in_backward):
    path = _file_of(frame).split("/", 1)[-1]
    name = frame.rsplit(" (", 1)[0]
    where = f"{path}:{name}"
    if where.startswith(VSPACE_FILES) or "vspace" in name.lower():
        return VSPACES
    if path.startswith(RULE_FILES):
        return BWD_RULES if in_backward else MAKERS
    if path.startswith(CALL_FILES) or "__array_ufunc__" in name:
        return BWD_CALLS if in_backward else FWD_CALLS
    if in_backward:
        return BWD_ENGINE
    if path.startswith(FIXED_FILES):
        return FIXED
    if name in ("__init__",) and path == "core.py":
        return NODES
    return OTHER_AD


def classify_pyspy(raw_path, impl):
    """From the samples whose stack survived: the executing Python frame's owner (for samples
    that were running Python code), the autodiff's Python by part and by function, and the
    fraction of compute samples that ran inside a backward pass."""
    python, parts, functions = collections.Counter(), collections.Counter(), collections.Counter()
    compute = collections.Counter()
    kept = lost = 0
    with open(raw_path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            if not stack:
                continue
            n = int(n)
            frames = stack.split(";")
            py = [fr for fr in frames if not _is_native_frame(_file_of(fr))]
            if not any("profiled_fits" in fr for fr in py):
                lost += n  # unwinding lost the Python frames
                continue
            kept += n
            in_backward = any(
                fr.startswith(("backward_pass ", "_core__backward", "_backward_on_nodes")) for fr in frames
            )
            leaf_file = _file_of(frames[-1])
            if _is_native_frame(leaf_file):
                if leaf_file.startswith(("numpy", "scipy")) or "openblas" in leaf_file:
                    compute["bwd" if in_backward else "fwd"] += n
                continue  # native code: perf has it
            who = None
            for fr in reversed(py):
                who = _py_owner(_file_of(fr), impl)
                if who:
                    break
            python[who or "other"] += n
            if who == "autodiff":
                inner = next(fr for fr in reversed(py) if _py_owner(_file_of(fr), impl) == "autodiff")
                parts[_py_part(inner, in_backward)] += n
                functions[f"{_file_of(inner)}: {inner.rsplit(' (', 1)[0]}"] += n
    return {
        "kept": kept,
        "lost": lost,
        "python": dict(python),
        "python_parts": dict(parts),
        "python_functions": dict(functions),
        "compute": dict(compute),
    }


def combine(perf, spy):
    """Shares of the fit by category, and the autodiff's share by part (fractions of 1)."""
    total = perf["total"] or 1
    own = perf["owners"]
    shares = {c: 0.0 for c in CATEGORIES}
    parts = {p: 0.0 for p in AUTODIFF_PARTS}
    compute = (own.get("compute_fwd", 0) + own.get("compute_bwd", 0)) / total
    if own.get("compute_bwd", 0) or perf["compiled_parts"]:  # fastgrad: perf sees its backward pass
        shares[COMPUTE_FWD], shares[COMPUTE_BWD] = own.get("compute_fwd", 0) / total, own.get("compute_bwd", 0) / total
    else:  # autograd: its backward pass is Python, so split perf's compute as py-spy saw it
        c = spy["compute"]
        bwd = c.get("bwd", 0) / max(1, c.get("fwd", 0) + c.get("bwd", 0))
        shares[COMPUTE_FWD], shares[COMPUTE_BWD] = compute * (1 - bwd), compute * bwd
    shares[PANDAS] = own.get("pandas", 0) / total
    shares[GC] = own.get("gc", 0) / total
    shares[OTHER] = own.get("other", 0) / total
    python = own.get("python", 0) / total
    py_total = sum(spy["python"].values()) or 1
    shares[LIBRARY] += python * spy["python"].get("library", 0) / py_total
    shares[PANDAS] += python * spy["python"].get("pandas", 0) / py_total
    shares[NUMPY_PY] += python * spy["python"].get("numpy", 0) / py_total
    shares[OTHER] += python * spy["python"].get("other", 0) / py_total
    autodiff_python = python * spy["python"].get("autodiff", 0) / py_total
    py_parts_total = sum(spy["python_parts"].values()) or 1
    for p, n in spy["python_parts"].items():
        parts[p] += autodiff_python * n / py_parts_total
    for p, n in perf["compiled_parts"].items():
        parts[p] += n / total
    shares[AUTODIFF] = sum(parts.values())
    return shares, parts


# ------------------------------------------------------------------------------------------ runs


def run_target(mode, workload, seconds, tmpdir, rate, pyspy, resume=False, perf_rate=997):
    out_json = os.path.join(tmpdir, f"{workload}-{mode}.json")
    if resume and os.path.exists(out_json):
        with open(out_json) as f:
            return json.load(f)
    env = dict(os.environ, **BLAS_ENV)
    env.pop("FASTGRAD_PURE", None)
    target = [sys.executable, os.path.join(HERE, "profile_target.py"), mode, workload]
    if mode == "count":
        proc = subprocess.run(target + [str(seconds), out_json], env=env, capture_output=True, text=True)
        if not os.path.exists(out_json):
            return {"error": " / ".join(proc.stderr.strip().splitlines()[-3:]) or "no output"}
        with open(out_json) as f:
            return json.load(f)
    # Set up and fit once, then fit for a little longer than the samplers' window.
    ready = out_json + ".ready"
    if os.path.exists(ready):
        os.remove(ready)
    log_path = os.path.join(tmpdir, f"{workload}-{mode}.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(target + [str(seconds + 2), out_json], env=env, stdout=log, stderr=log)
        while not os.path.exists(ready) and proc.poll() is None:
            time.sleep(0.05)
        perf_data = os.path.join(tmpdir, f"{workload}-{mode}.perf")
        raw = os.path.join(tmpdir, f"{workload}-{mode}.raw")
        if proc.poll() is None:
            pid = str(proc.pid)
            perf = subprocess.Popen(
                [
                    "perf",
                    "record",
                    "-q",
                    "-e",
                    "cpu-clock",
                    "-F",
                    str(perf_rate),
                    "--call-graph",
                    "dwarf,32768",
                    "-p",
                    pid,
                    "-o",
                    perf_data,
                    "--",
                    "sleep",
                    str(seconds),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            subprocess.run(
                [
                    pyspy,
                    "record",
                    "--native",
                    "-r",
                    str(rate),
                    "-d",
                    str(int(seconds)),
                    "-f",
                    "raw",
                    "-o",
                    raw,
                    "--pid",
                    pid,
                ],
                capture_output=True,
            )
            perf.wait()
        proc.wait()
    if not os.path.exists(out_json):
        with open(log_path) as f:
            return {"error": " / ".join(f.read().strip().splitlines()[-3:]) or "no output"}
    with open(out_json) as f:
        out = json.load(f)
    out["perf"] = (
        classify_perf(perf_data)
        if os.path.exists(perf_data)
        else {"total": 0, "owners": {}, "compiled_parts": {}, "compiled_symbols": {}}
    )
    out["pyspy"] = (
        classify_pyspy(raw, mode)
        if os.path.exists(raw)
        else {"kept": 0, "lost": 0, "python": {}, "python_parts": {}, "python_functions": {}, "compute": {}}
    )
    for path in (perf_data,):
        if os.path.exists(path):
            os.remove(path)  # large; the counts above are what is kept
    with open(out_json, "w") as f:
        json.dump(out, f)
    return out


# ---------------------------------------------------------------------------------------- report


def pct(x):
    return f"{100.0 * x:.0f}%"


def write_report(results, meta, md_path, json_path):
    for r in results.values():
        for impl in ("fastgrad", "autograd"):
            p = r.get(impl, {})
            if "perf" in p and p["perf"]["total"]:
                p["shares"], p["parts"] = combine(p["perf"], p["pyspy"])
    with open(json_path, "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    L = [
        "# Where the time of downstream fits goes (issue #20)",
        "",
        f"`{meta['command']}` — {meta['date']}. {meta['seconds']:g} s of whole fits per implementation and workload, sampled "
        f"by perf at {meta['perf_rate']} Hz of CPU time (DWARF call chains) and py-spy {meta['pyspy']} (native mode) at "
        f"{meta['rate']} Hz, at once. "
        f"**Provisional**: {meta['provisional']}.",
        "",
        "Method (`benchmarks/downstream/profile_split.py`): perf puts each sample on the innermost frame that has an owner: "
        "NumPy/SciPy's shared objects (BLAS and libm included), pandas' C, fastgrad's compiled modules (by symbol), the "
        "garbage collector, or CPython's evaluation loop (Python code of whoever); libc, the kernel and the rest of libpython "
        "count for their caller. py-spy, whose stacks name Python functions, splits perf's Python-code share by the file of "
        "the executing Python frame (library, pandas, NumPy/SciPy Python, the autodiff's Python modules) and, for autograd, "
        "its compute into forward and backward. *Ceiling*: the ratio autograd / fastgrad if fastgrad's own share were zero "
        f"(times from {meta['ceiling_times']}). Calls per fit: fastgrad's pure-Python engine without compiled modules under "
        "cProfile (the same algorithms, every step visible).",
        "",
        "## The split per workload",
        "",
        "Shares of a fit's CPU time; fastgrad first, autograd (the before) second. *autodiff's own* is fastgrad's or "
        "autograd's own code (compiled and Python), NumPy work they cause being under NumPy/SciPy.",
        "",
    ]
    head = (
        "| workload | impl | time per fit | "
        + " | ".join(CATEGORIES)
        + f" | **{AUTODIFF}** | ceiling | samples (perf / py-spy kept, lost) |"
    )
    L += [head, "|" + "---|" * (head.count("|") - 1)]
    for w in workloads.WORKLOADS:
        if w.name not in results:
            continue
        r = results[w.name]
        for impl in ("fastgrad", "autograd"):
            p = r.get(impl, {})
            if "shares" not in p:
                L.append(
                    f"| `{w.name}` | {impl} | **fails**: `{p.get('error', 'no samples')}` |"
                    + " |" * (len(CATEGORIES) + 3)
                )
                continue
            s = p["shares"]
            per_fit = p["seconds"] / p["fits"]
            ceiling = "—"
            ag = r.get("autograd", {})
            if impl == "fastgrad" and "seconds" in ag:
                bench = meta.get("bench_times", {}).get(w.name)
                t_ag, t_fg = bench if bench else (ag["seconds"] / ag["fits"], per_fit)
                ceiling = f"{t_ag / (t_fg * (1 - s[AUTODIFF])):.2f}x (now {t_ag / t_fg:.2f}x)"
            cells = " | ".join(pct(s[c]) for c in CATEGORIES)
            n = f"{p['perf']['total']} / {p['pyspy']['kept']}, {p['pyspy']['lost']}"
            L.append(
                f"| `{w.name}` | {impl} | {per_fit * 1e3:.0f} ms | {cells} | **{pct(s[AUTODIFF])}** | {ceiling} | {n} |"
            )
    L += [
        "",
        "## The autodiff's own share, by part",
        "",
        "Shares of the whole fit (a row adds up to the autodiff's own share above).",
        "",
    ]
    head = "| workload | impl | " + " | ".join(AUTODIFF_PARTS) + " |"
    L += [head, "|" + "---|" * (len(AUTODIFF_PARTS) + 2)]
    for w in workloads.WORKLOADS:
        for impl in ("fastgrad", "autograd"):
            p = results.get(w.name, {}).get(impl, {})
            if "parts" in p:
                L.append(f"| `{w.name}` | {impl} | " + " | ".join(pct(p["parts"][k]) for k in AUTODIFF_PARTS) + " |")
    L += ["", "## Calls per fit (fastgrad, counted on the pure engine)", ""]
    labels = next((r["count"]["counts"] for r in results.values() if "counts" in r.get("count", {})), None)
    if labels:
        L += ["| workload | " + " | ".join(labels) + " |", "|" + "---|" * (len(labels) + 1)]
        for w in workloads.WORKLOADS:
            c = results.get(w.name, {}).get("count", {})
            if "counts" in c:
                L.append(f"| `{w.name}` | " + " | ".join(f"{c['counts'][k]:,.0f}" for k in labels) + " |")
            elif "error" in c:
                L.append(f"| `{w.name}` | **fails**: `{c['error']}` |" + " |" * (len(labels) - 1))
    L += [
        "",
        "## fastgrad's hottest functions per workload",
        "",
        "Compiled: perf samples whose innermost fastgrad frame is the symbol (NumPy work it calls excluded), as a share of "
        "the fit. Python: py-spy samples executing the function, scaled to the fit. Calls per fit from the pure-engine count "
        "where the same function exists there.",
        "",
    ]
    for w in workloads.WORKLOADS:
        r = results.get(w.name, {})
        p = r.get("fastgrad", {})
        if "shares" not in p:
            continue
        per_fn = r.get("count", {}).get("per_function", {})
        total = p["perf"]["total"] or 1
        python_share = p["perf"]["owners"].get("python", 0) / total
        py_total = sum(p["pyspy"]["python"].values()) or 1
        compiled = collections.Counter()
        for k, n in p["perf"]["compiled_symbols"].items():
            module, _, sym = k.partition(": ")
            compiled[f"{module}: {demangle(sym)}"] += n
        rows = [(n / total, "compiled", k) for k, n in compiled.items()]
        rows += [(python_share * n / py_total, "Python", k) for k, n in p["pyspy"]["python_functions"].items()]
        rows.sort(reverse=True)
        L += [f"### `{w.name}`", "", "| function | kind | share of the fit | calls per fit |", "|---|---|---|---|"]
        for share, kind, key in rows[:12]:
            L.append(f"| `{key}` | {kind} | {100 * share:.1f}% | {_calls_for(key, per_fn)} |")
        L.append("")
    analysis = ""
    if os.path.exists(md_path):  # the hand-written analysis below the marker survives a rerun
        with open(md_path) as f:
            old = f.read()
        if ANALYSIS_MARKER in old:
            analysis = old[old.index(ANALYSIS_MARKER) :]
    with open(md_path, "w") as f:
        f.write("\n".join(L) + "\n" + (analysis or ANALYSIS_MARKER + "\n"))


ANALYSIS_MARKER = "<!-- analysis: written by hand, kept when the tables above are regenerated -->"


def demangle(sym):
    """A Cython symbol as the Python name it implements: '__pyx_pw_8fastgrad_5numpy_10numpy_vjps_323clip_masks'
    -> 'clip_masks', '__pyx_f_8fastgrad_5_core_7VJPRule_rule_for' -> 'VJPRule.rule_for'."""
    import re

    for prefix in (
        "__pyx_pw_",
        "__pyx_pf_",
        "__pyx_f_",
        "__pyx_tp_new_vectorcall_",
        "__pyx_tp_new_",
        "__pyx_tp_dealloc_",
    ):
        if sym.startswith(prefix):
            kind = {"__pyx_tp_new_vectorcall_": "new ", "__pyx_tp_new_": "new ", "__pyx_tp_dealloc_": "dealloc "}.get(
                prefix, ""
            )
            rest, names = sym[len(prefix) :], []
            while True:  # length-prefixed names: the module path, then classes and enclosing functions
                m = re.match(r"(\d+)", rest)
                if not m:
                    break
                n, start = int(m.group(1)), len(m.group(1))
                token, after = rest[start : start + n], rest[start + n : start + n + 1]
                if len(token) < n or after not in ("_", ""):
                    break
                names.append(token)
                rest = rest[start + n + 1 :]
            names = [t for t in names if t not in ("fastgrad", "numpy", "scipy", "misc")][1:]  # drop the module
            rest = re.sub(r"^\d+", "", rest)
            if rest.startswith("__pyx_scope_struct_"):
                rest = "closure of " + re.sub(r"^__pyx_scope_struct_\d+_", "", rest)
            if rest.startswith("__pyx_lambda_funcdef_"):
                rest = "lambda #" + re.sub(r"^.*lambda", "", rest)  # Cython's index of the module's lambdas
            return kind + ".".join(names + ([rest] if rest else []))
    return sym


# compiled-engine functions -> the pure engine's function that does the same step
_PURE_TWIN = {
    "_call_primitive": "__call__",
    "_call_raw": "__call__",
    "_backward_on_nodes": "backward_pass",
    "_vjp_node": "__init__",
    "_new_box": "new_box",
}


def _calls_for(key, per_fn):
    """Calls per fit of a sampled function in the pure-engine count, matched by file and name."""
    module, _, name = key.partition(": ")
    name = name.split(".")[-1]
    if module in ("_core", "fastgrad/_core.pyx"):
        name = _PURE_TWIN.get(name, name)
        found = per_fn.get(f"_core_py.py:{name}")
    else:
        path = module.replace("fastgrad/", "")
        path = {
            **{m: "numpy/{}.py".format(m) for m in RULE_MODULES},
            "core": "core.py",
            "builtins": "builtins.py",
            "wrap_util": "wrap_util.py",
        }.get(path, path)
        found = per_fn.get(f"{path}:{name}")
    return f"{found:,.0f}" if found else ""


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", default="all")
    p.add_argument("--seconds", type=float, default=8.0, help="seconds of fits sampled per implementation")
    p.add_argument("--rate", type=int, default=250, help="py-spy's samples per second")
    p.add_argument("--perf-rate", type=int, default=997, help="perf's samples per second of CPU time")
    p.add_argument("--out", default=os.path.join(RESULTS, "downstream_profile"))
    p.add_argument("--provisional", default="sampled while other jobs ran on this 2-core machine")
    p.add_argument(
        "--times",
        default=os.path.join(RESULTS, "downstream.json"),
        help="run.py's JSON, whose medians the ceiling uses (else the profiled fits' own times)",
    )
    p.add_argument("--raw-dir", help="where the per-run results go (kept; default a new temporary directory)")
    p.add_argument("--resume", action="store_true", help="reuse the runs already in --raw-dir")
    args = p.parse_args(argv)
    pyspy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    if not os.path.exists(pyspy) or not shutil.which("perf"):
        p.error("needs py-spy (pip install py-spy) and perf (apt-get install linux-perf)")
    names = [w.name for w in workloads.WORKLOADS] if args.workloads == "all" else args.workloads.split(",")
    meta = {
        "command": "python benchmarks/downstream/profile_split.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "seconds": args.seconds,
        "rate": args.rate,
        "perf_rate": args.perf_rate,
        "pyspy": subprocess.run([pyspy, "--version"], capture_output=True, text=True).stdout.split()[-1],
        "provisional": args.provisional,
        "bench_times": {},
        "ceiling_times": "the profiled fits' own times",
    }
    if os.path.exists(args.times):
        with open(args.times) as f:
            bench = json.load(f)["results"]
        meta["bench_times"] = {
            n: (r["autograd"]["median"], r["fastgrad"]["median"]) for n, r in bench.items() if "ratio" in r
        }
        meta["ceiling_times"] = f"the medians in `{os.path.relpath(args.times)}` where it has them"
    raw_dir = args.raw_dir or tempfile.mkdtemp(prefix="downstream-profile-")
    os.makedirs(raw_dir, exist_ok=True)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    results = {}
    for name in names:
        results[name] = {}
        for mode in ("count", "fastgrad", "autograd"):
            print(f"{name}: {mode}", file=sys.stderr, flush=True)
            results[name][mode] = run_target(
                mode, name, args.seconds, raw_dir, args.rate, pyspy, args.resume, args.perf_rate
            )
            if "error" in results[name][mode]:
                print(f"  failed: {results[name][mode]['error']}", file=sys.stderr, flush=True)
        write_report(results, meta, args.out + ".md", args.out + ".json")  # after each workload: partial runs count
    print(f"wrote {args.out}.md and .json (per-run data in {raw_dir})", file=sys.stderr)


if __name__ == "__main__":
    main()
