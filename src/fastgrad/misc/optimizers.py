"""Gradient-descent optimizers that work on any container tree of arrays.

Each takes ``grad(x, i)`` (the gradient at ``x`` in iteration ``i``, shaped like ``x``),
the starting point ``x0`` (an array or a nested list/tuple/dict of arrays), an optional
``callback(x, i, g)`` called every iteration before the step, and returns the final ``x``
with the structure of ``x0``.  Internally the tree is flattened once into one vector.
The signatures are autograd's.  Nothing is printed: to show progress, print from the
callback (``x`` and ``g`` there have the structure of ``x0``).
"""

from functools import wraps
from typing import Any, Callable, TypeVar

import numpy as onp

from .flatten import flatten

__all__ = ["sgd", "rmsprop", "adam", "unflatten_optimizer"]

_Tree = TypeVar("_Tree")  # the type of x0: an array, or a container tree of arrays


def unflatten_optimizer(optimize: Callable[..., Any]) -> Callable[..., Any]:
    """Turn an optimizer on flat vectors into one on container trees.

    >>> import fastgrad.numpy as np
    >>> from fastgrad.misc.optimizers import unflatten_optimizer
    >>> @unflatten_optimizer
    ... def descend(grad, x, callback=None, num_iters=100, step_size=0.1):
    ...     for i in range(num_iters):
    ...         x = x - step_size * grad(x, i)
    ...     return x
    >>> result = descend(lambda p, i: {"a": 2 * (p["a"] - 1.0)}, {"a": 0.0})   # (a - 1)**2
    >>> list(result), bool(np.allclose(result["a"], 1.0))
    (['a'], True)
    """

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


def sgd(
    grad: Callable[[_Tree, int], Any],
    x0: _Tree,
    callback: Callable[[_Tree, int, _Tree], object] | None = None,
    num_iters: int = 200,
    step_size: float = 0.1,
    mass: float = 0.9,
) -> _Tree:
    """Stochastic gradient descent with momentum ``mass``.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.misc.optimizers import sgd
    >>> def objective(p, i):
    ...     return (p["a"] - 1.0) ** 2 + np.sum((p["b"] + 2.0) ** 2)
    >>> p = sgd(grad(objective), {"a": 0.0, "b": np.zeros(2)}, num_iters=300)
    >>> bool(np.allclose(p["a"], 1.0, atol=1e-4)), bool(np.allclose(p["b"], -2.0, atol=1e-4))
    (True, True)
    """
    return _flat_sgd(grad, x0, callback, num_iters, step_size, mass)


@unflatten_optimizer
def _flat_sgd(grad, x, callback, num_iters, step_size, mass):
    velocity = onp.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


def rmsprop(
    grad: Callable[[_Tree, int], Any],
    x0: _Tree,
    callback: Callable[[_Tree, int, _Tree], object] | None = None,
    num_iters: int = 100,
    step_size: float = 0.1,
    gamma: float = 0.9,
    eps: float = 10**-8,
) -> _Tree:
    """RMSProp: steps scaled by a running root mean square of the gradients.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.misc.optimizers import rmsprop
    >>> objective = lambda x, i: np.sum((x - 3.0) ** 2)
    >>> losses = []
    >>> x = rmsprop(grad(objective), np.zeros(2), num_iters=200,
    ...             callback=lambda x, i, g: losses.append(objective(x, i)))
    >>> len(losses), bool(np.allclose(x, 3.0, atol=1e-2))
    (200, True)
    """
    return _flat_rmsprop(grad, x0, callback, num_iters, step_size, gamma, eps)


@unflatten_optimizer
def _flat_rmsprop(grad, x, callback, num_iters, step_size, gamma, eps):
    avg_sq_grad = onp.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1.0 - gamma)
        x = x - step_size * g / (onp.sqrt(avg_sq_grad) + eps)
    return x


def adam(
    grad: Callable[[_Tree, int], Any],
    x0: _Tree,
    callback: Callable[[_Tree, int, _Tree], object] | None = None,
    num_iters: int = 100,
    step_size: float = 0.001,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 10**-8,
) -> _Tree:
    """Adam (Kingma and Ba, 2014): bias-corrected running moments of the gradient.

    >>> import fastgrad.numpy as np
    >>> from fastgrad import grad
    >>> from fastgrad.misc.optimizers import adam
    >>> objective = lambda x, i: np.sum((x - 3.0) ** 2)
    >>> x = adam(grad(objective), np.zeros(2), step_size=0.1, num_iters=500)
    >>> bool(np.allclose(x, 3.0, atol=1e-3))
    True
    """
    return _flat_adam(grad, x0, callback, num_iters, step_size, b1, b2, eps)


@unflatten_optimizer
def _flat_adam(grad, x, callback, num_iters, step_size, b1, b2, eps):
    m = onp.zeros(len(x))
    v = onp.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1.0 - b1) * g + b1 * m
        v = (1.0 - b2) * (g**2) + b2 * v
        mhat = m / (1.0 - b1 ** (i + 1))
        vhat = v / (1.0 - b2 ** (i + 1))
        x = x - step_size * mhat / (onp.sqrt(vhat) + eps)
    return x
