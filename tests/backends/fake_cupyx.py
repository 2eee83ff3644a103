"""``cupyx`` of the CuPy stand-in: ``scatter_add``, CuPy's replacement for ``numpy.add.at``.

``cupyx.scatter_add(a, slices, value)`` adds ``value`` into ``a[slices]`` in place, every
repeated index contributing (as ``numpy.add.at``), and returns None.
https://docs.cupy.dev/en/stable/reference/generated/cupyx.scatter_add.html
"""

import numpy as onp

import fake_cupy


def scatter_add(a, slices, value):
    if not isinstance(a, fake_cupy.ndarray):
        raise TypeError("scatter_add: a must be a fake_cupy.ndarray, got %s" % type(a).__name__)
    onp.add.at(a._data, fake_cupy._index(slices), fake_cupy._operand(value))
