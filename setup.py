"""Builds the compiled engine fastgrad._core from src/fastgrad/_core.pyx.

Three builds, chosen by environment variables:
  (default)                     the fast one: -O3, no bounds checks;
  FASTGRAD_DEBUG_BUILD=1        bounds checks, wraparound and initialisation checks, line
                                tracing, -O0 -g (for profiling, coverage and valgrind);
  FASTGRAD_SANITIZE=address     the same checks without line tracing, compiled and linked
                                with AddressSanitizer at -O1 -g (scripts/asan.sh).  Line
                                tracing stays off: Cython 3.3.1's tracing breaks under any
                                sys.settrace tracer on CPython 3.11, and some tests use one.
                                The value is passed to -fsanitize= (e.g. "address,undefined").
"""

import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("FASTGRAD_DEBUG_BUILD", "") not in ("", "0")
SANITIZE = os.environ.get("FASTGRAD_SANITIZE", "")
CHECKS = DEBUG or bool(SANITIZE)  # Cython's runtime checks
TRACE = DEBUG and not SANITIZE  # line tracing and profiling hooks

if SANITIZE:
    # -fsanitize-recover lets ASAN_OPTIONS=halt_on_error=0 report every error, not the first
    compile_args = [
        "-O1",
        "-fno-omit-frame-pointer",
        "-fno-optimize-sibling-calls",
        "-fsanitize=" + SANITIZE,
        "-fsanitize-recover=" + SANITIZE,
    ]
    link_args = ["-fsanitize=" + SANITIZE]
elif DEBUG:
    compile_args, link_args = ["-O0"], []
else:
    compile_args, link_args = None, []  # per module, below
macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")] if TRACE else []


def extension(module, source, fast_args, numpy_api=False, debug_info="-g"):
    """``numpy_api``: the module uses NumPy's C API (headers, no deprecated names).
    ``debug_info`` of the checked builds: -g, or -g1 (functions and lines, enough for stack
    traces) for a module too large for full debug information to compile quickly."""
    return Extension(
        module,
        [source],
        define_macros=macros + ([("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")] if numpy_api else []),
        include_dirs=[numpy.get_include()] if numpy_api else [],
        extra_compile_args=compile_args + [debug_info] if compile_args else fast_args,
        extra_link_args=link_args,
    )


directives = {
    "language_level": 3,
    "boundscheck": CHECKS,
    "wraparound": CHECKS,
    "initializedcheck": CHECKS,
    "cdivision": not CHECKS,
    "embedsignature": True,
    "linetrace": TRACE,
    "profile": TRACE,
}
# -ffp-contract=off: the scalar kernels must round like NumPy (no fused multiply-adds)
engine = cythonize(
    [extension("fastgrad._core", "src/fastgrad/_core.pyx", ["-O3", "-ffp-contract=off"], numpy_api=True)],
    compiler_directives=directives,
    include_path=["src/fastgrad"],
)

# Plain Python modules on the hot path of the backward pass, compiled unchanged: every
# rule call then skips the interpreter's frame setup (W1/W5/W6/W8 10-20% faster).  The
# .py stays the source; without a compiler it is simply imported as Python.
# They keep Python's semantics exactly: negative indices and bounds checks stay on.
python_directives = {"language_level": 3, "linetrace": TRACE, "profile": TRACE}
compiled_python = cythonize(
    # numpy_vjps.c is 135k lines: with -g1 its checked builds compile in 1.5 instead of 5 min
    [
        extension(module, "src/" + module.replace(".", "/") + ".py", ["-O2"], debug_info="-g1")
        # (not differential_operators: Cython would keep its annotations as strings)
        for module in ["fastgrad.numpy.numpy_vjps", "fastgrad.builtins", "fastgrad.core", "fastgrad.wrap_util"]
    ],
    compiler_directives=python_directives,
)

setup(ext_modules=engine + compiled_python)
