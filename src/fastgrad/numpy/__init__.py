"""fastgrad.numpy: NumPy with differentiable functions (import it as ``np``).

>>> import fastgrad.numpy as np
>>> from fastgrad import grad
>>> grad(lambda x: np.sum(np.sin(x) * x))(np.ones(3))
array([1.38177329, 1.38177329, 1.38177329])
"""

from . import numpy_wrapper
from . import numpy_boxes
from . import numpy_vspaces
from . import numpy_vjps
from . import numpy_jvps
from . import _scalar_kernels
from .numpy_wrapper import *
from .numpy_wrapper import make_diagonal
from . import fft, linalg, random
from .. import builtins  # (autograd.numpy.builtins: libraries reach the traced containers this way)
from . import _refusals

_refusals.install()
