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

import hashlib
import json
import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

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
        # the fast build drops the debug information Python's own CFLAGS ask for (-g): it was
        # four fifths of the wheel; symbols stay, so profilers still name the functions
        extra_compile_args=compile_args + [debug_info] if compile_args else fast_args + ["-g0"],
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
# (not differential_operators: Cython would keep its annotations as strings)
PLAIN_MODULES = [
    "fastgrad.builtins",
    "fastgrad.core",
    "fastgrad.wrap_util",
    # the rules of fastgrad.numpy: shapes and broadcasting (unbroadcast, fit), the
    # registration helpers (whose wrappers the elementwise rules run through), the topics
    "fastgrad.numpy._shapes",
    "fastgrad.numpy._registration",
    "fastgrad.numpy._elementwise",
    "fastgrad.numpy._reductions",
    "fastgrad.numpy._statistics",
    "fastgrad.numpy._products",
    "fastgrad.numpy._shaping",
    "fastgrad.numpy._indexing",
    "fastgrad.numpy._differences",
    "fastgrad.numpy.numpy_vjps",
    # the box of NumPy values: user code reads its attributes (shape, len, ndim) and NumPy
    # hands it the ufuncs of its operators (ndarray * box, float64 * box)
    "fastgrad.numpy.numpy_boxes",
]


def plain_source(module):
    return "src/" + module.replace(".", "/") + ".py"


compiled_python = cythonize(
    # the rule modules make large C files (numpy_vjps.c was 135k lines): -g1 keeps checked builds fast
    [extension(module, plain_source(module), ["-O2"], debug_info="-g1") for module in PLAIN_MODULES],
    compiler_directives=python_directives,
)


class build_ext_recording_sources(build_ext):
    """build_ext that also writes fastgrad/_compiled_sources.json beside the built modules:
    the SHA-256 of each plain module's .py it compiled, which importing fastgrad compares
    with the .py beside the extension (fastgrad/_stale.py: an edited .py whose old build
    would otherwise win fails loudly)."""

    def run(self):
        super().run()
        hashes = {}
        for module in PLAIN_MODULES:
            with open(plain_source(module), "rb") as f:
                hashes[module] = hashlib.sha256(f.read()).hexdigest()
        os.makedirs(os.path.dirname(self._manifest_path()), exist_ok=True)
        with open(self._manifest_path(), "w") as f:
            json.dump(hashes, f, indent=1, sort_keys=True)

    def _manifest_path(self):
        return os.path.join(os.path.dirname(self.get_ext_fullpath("fastgrad._core")), "_compiled_sources.json")

    def get_outputs(self):
        return super().get_outputs() + [self._manifest_path()]


setup(ext_modules=engine + compiled_python, cmdclass={"build_ext": build_ext_recording_sources})
