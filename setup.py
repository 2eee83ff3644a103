"""Builds the compiled engine fastgrad._core from src/fastgrad/_core.pyx.

FASTGRAD_DEBUG_BUILD=1 turns on bounds checks, assertions and line tracing (for
profiling, coverage and memory checkers); the default build is the fast one.
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("FASTGRAD_DEBUG_BUILD", "") not in ("", "0")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
    "linetrace": DEBUG,
    "profile": DEBUG,
}
macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1")] if DEBUG else []
compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]

engine = cythonize([Extension("fastgrad._core", ["src/fastgrad/_core.pyx"], define_macros=macros,
                               extra_compile_args=compile_args)],
                   compiler_directives=directives, include_path=["src/fastgrad"])

# Plain Python modules on the hot path of the backward pass, compiled unchanged: every
# rule call then skips the interpreter's frame setup (W1/W5/W6/W8 10-20% faster).  The
# .py stays the source; without a compiler it is simply imported as Python.
# They keep Python's semantics exactly: negative indices and bounds checks stay on.
python_directives = {"language_level": 3, "linetrace": DEBUG, "profile": DEBUG}
compiled_python = cythonize(
    [Extension(module, ["src/" + module.replace(".", "/") + ".py"], define_macros=macros,
               extra_compile_args=["-O0", "-g"] if DEBUG else ["-O2"])
     for module in ["fastgrad.numpy.numpy_vjps"]],
    compiler_directives=python_directives)

setup(ext_modules=engine + compiled_python)
