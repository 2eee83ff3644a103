"""fastgrad.numpy.random: numpy.random as it is (random numbers have no gradient).

>>> import fastgrad.numpy as np
>>> np.random.seed(0); x = np.random.randn(3)
"""

from numpy.random import *
from numpy.random import (
    RandomState,
    default_rng,
    normal,
    rand,
    randint,
    randn,
    random,
    seed,
    uniform,
    Generator,
    SeedSequence,
    BitGenerator,
    get_bit_generator,  # (not in numpy.random.__all__: the star import leaves them out)
    set_bit_generator,
)
