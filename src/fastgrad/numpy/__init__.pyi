# Type stub of fastgrad.numpy, for editors and static type checkers.
#
# fastgrad.numpy is NumPy with differentiable functions: it defines its names in a loop over
# numpy's, which static analysis cannot follow, so this stub gives them NumPy's own types.
# The parameters and results are NumPy's; inside a function being differentiated the
# arrays are traced values (boxes) that behave as arrays, and gradients have the types of
# the arguments (see fastgrad.differential_operators).
#
# Not provided by fastgrad.numpy although NumPy's star import names them (using one is an
# AttributeError at run time): the index helpers s_, index_exp, mgrid and ogrid, and the
# submodules char, core, ctypeslib, emath, f2py, lib, ma, polynomial, rec, strings, test.
# tests/typing/test_stubs.py keeps this list true.
from typing import Any

from numpy.typing import ArrayLike, NDArray

# fastgrad's own submodules first: for mypy the first binding of a name wins, so numpy's
# fft, linalg and random from the star import below do not replace fastgrad's.
from . import fft as fft
from . import linalg as linalg
from . import numpy_boxes as numpy_boxes
from . import numpy_jvps as numpy_jvps
from . import numpy_vjps as numpy_vjps
from . import numpy_vspaces as numpy_vspaces
from . import numpy_wrapper as numpy_wrapper
from . import random as random

from numpy import *  # type: ignore[no-redef]  # noqa: F403  (fft, linalg, random: see above)
from numpy import __version__ as __version__

def make_diagonal(D: ArrayLike, offset: int = 0, axis1: int = -1, axis2: int = -2) -> NDArray[Any]:
    """An array with the last axis of ``D`` on its ``offset`` diagonal in axes
    (``axis1``, ``axis2``) of the result, zeros elsewhere: the inverse of ``np.diagonal``."""
