"""Gradient-descent optimizers that work on any container tree of arrays.

Each takes ``grad(x, i)`` (the gradient at ``x`` in iteration ``i``, shaped like ``x``),
the starting point ``x0`` (an array or a nested list/tuple/dict of arrays), an optional
``callback(x, i, g)`` called every iteration before the step, and returns the final ``x``
with the structure of ``x0``.  Internally the tree is flattened once into one vector.
"""
from functools import wraps

import numpy as onp

from .flatten import flatten

__all__ = ["sgd", "rmsprop", "adam", "unflatten_optimizer"]


def unflatten_optimizer(optimize):
    """Turn an optimizer on flat vectors into one on container trees."""
    @wraps(optimize)
    def _optimize(grad, x0, callback=None, *args, **kwargs):
        flat_x0, unflatten = flatten(x0)

        def flat_grad(x, i):
            return flatten(grad(unflatten(x), i))[0]
        if callback is not None:
            def flat_callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))
        else:
            flat_callback = None
        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))
    return _optimize


@unflatten_optimizer
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Stochastic gradient descent with momentum ``mass``."""
    velocity = onp.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """RMSProp: steps scaled by a running root mean square of the gradients."""
    avg_sq_grad = onp.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g ** 2 * (1.0 - gamma)
        x = x - step_size * g / (onp.sqrt(avg_sq_grad) + eps)
    return x


@unflatten_optimizer
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba, 2014): bias-corrected running moments of the gradient."""
    m = onp.zeros(len(x))
    v = onp.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1.0 - b1) * g + b1 * m
        v = (1.0 - b2) * (g ** 2) + b2 * v
        mhat = m / (1.0 - b1 ** (i + 1))
        vhat = v / (1.0 - b2 ** (i + 1))
        x = x - step_size * mhat / (onp.sqrt(vhat) + eps)
    return x
