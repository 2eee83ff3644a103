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
from . import _scalar_kernels                   # noqa: F401  (after the rules it checks)
from .numpy_wrapper import *                     # noqa: F401,F403  (every NumPy name)
from .numpy_wrapper import make_diagonal         # noqa: F401
from . import fft, linalg, random                # noqa: F401
