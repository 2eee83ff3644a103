# Type stub of fastgrad.numpy.linalg: numpy.linalg's names with NumPy's types (the module
# defines them in a loop, which static analysis cannot follow), and fastgrad's two helpers.
from typing import Any

from numpy.linalg import *  # noqa: F403
from numpy.typing import ArrayLike, NDArray

def T(x: ArrayLike) -> NDArray[Any]:
    """``x`` with its last two axes swapped (a batch of matrices transposed)."""

def _dot(a: ArrayLike, b: ArrayLike) -> NDArray[Any]:
    """Batched matrix product over the last two axes (``a @ b``)."""
