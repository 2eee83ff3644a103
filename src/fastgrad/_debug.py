"""Debug mode, in the spirit of PyTorch's anomaly detection.

``fastgrad.set_debug(True)`` (or FASTGRAD_DEBUG=1) makes the engine call these checks:
- when a primitive is recorded, arrays its rule will read are copied;
- before its rule runs in the backward pass, they are compared with the copies, so an
  array changed in place in between (which silently corrupts gradients) is reported,
  naming the primitive and the argument;
- after the rule, a cotangent with NaN or inf computed from a finite one is reported,
  naming the primitive whose backward produced it.
It costs a copy of every saved array and a scan of every cotangent: for debugging only.
"""

import weakref

import numpy as np

from ._hooks import HOOKS


def _name(node):
    return getattr(node.fun, "__name__", repr(node.fun))


def _values(x):
    """The plain numeric value of a cotangent (through boxes), or None for other kinds."""
    while hasattr(x, "_value") and hasattr(x, "_node"):
        x = x._value
    return x if isinstance(x, (np.ndarray, np.generic, float, complex, int)) else None


def _all_finite(x):
    x = _values(x)
    return True if x is None else bool(np.all(np.isfinite(x)))


class _Checks:
    def __init__(self):
        self.saved = weakref.WeakKeyDictionary()  # node -> [(label, original, copy)]

    def recorded(self, node):
        copies = [("argument {}".format(i), a, a.copy()) for i, a in enumerate(node.args) if type(a) is np.ndarray]
        if type(node.value) is np.ndarray:
            copies.append(("output", node.value, node.value.copy()))
        if copies:
            self.saved[node] = copies

    def before_backward(self, node):
        for label, original, copy in self.saved.get(node, ()):
            if original.shape != copy.shape or not np.array_equal(original, copy, equal_nan=True):
                raise RuntimeError(
                    "fastgrad debug: the {} of {} was modified in place after the forward pass "
                    "recorded it, so its gradient would be wrong. Copy the array before changing "
                    "it (x = x.copy()) or build a new one.".format(label, _name(node))
                )

    def checked(self, node, argnum, g, cotangent):
        if cotangent is not None and not _all_finite(cotangent) and _all_finite(g):
            inputs = [a for a in node.args if a is not None] + [node.value]
            origin = (
                "its forward values were finite"
                if all(_all_finite(a) for a in inputs)
                else "its forward values already contained nan or inf"
            )
            raise FloatingPointError(
                "fastgrad debug: the backward pass of {} produced nan or inf in the gradient of "
                "argument {} from a finite incoming gradient ({})".format(_name(node), argnum, origin)
            )


def set_debug(enabled: bool = True) -> bool:
    """Turn debug mode on or off (see the module docstring); returns the previous state.

    Here an array is changed after ``x * a`` recorded it, which would silently give the
    gradient for the new values; debug mode reports it:

    >>> import numpy
    >>> import fastgrad
    >>> import fastgrad.numpy as np
    >>> def f(x):
    ...     a = numpy.ones(2)
    ...     y = np.sum(x * a)
    ...     a[0] = 5.0
    ...     return y
    >>> previous = fastgrad.set_debug(True)
    >>> fastgrad.grad(f)(np.ones(2))
    Traceback (most recent call last):
        ...
    RuntimeError: fastgrad debug: the argument 1 of multiply was modified in place ...
    >>> fastgrad.set_debug(previous)
    True
    """
    enabled = bool(enabled)
    checks = _Checks() if enabled else None
    # (no call between the two stores: a Ctrl-C cannot leave the state and the hook apart)
    previous = _state[0]
    _state[0] = enabled
    HOOKS.debug = checks
    return previous


_state = [False]
