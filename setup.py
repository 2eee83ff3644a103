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

extension = Extension("fastgrad._core", ["src/fastgrad/_core.pyx"],
                      define_macros=macros, extra_compile_args=compile_args)

setup(ext_modules=cythonize([extension], compiler_directives=directives,
                            include_path=["src/fastgrad"]))
