# Type stub of fastgrad.numpy.fft: numpy.fft's names with NumPy's types (the module defines
# them in a loop, which static analysis cannot follow).
from numpy.fft import *  # noqa: F403
