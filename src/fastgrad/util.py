"""Small helpers shared by the Python layer (autograd.util's names)."""

import warnings

from ._helpers import func, subval, subvals, toposort  # noqa: F401  (autograd.util's names)


def quick_grad_check(fun, arg0, extra_args=(), kwargs=None, verbose=True, eps=1e-4, rtol=1e-4, atol=1e-6, rs=None):
    """Deprecated (as in autograd): checks the gradient of ``fun(arg0, *extra_args, **kwargs)``
    with respect to ``arg0`` against central differences along a random direction, raising
    AssertionError on a mismatch.  Use ``fastgrad.test_util.check_grads`` instead.

    ``verbose``, ``eps``, ``rtol``, ``atol`` and ``rs`` are accepted for compatibility and
    ignored: the check uses test_util's tolerances and numpy's global random state, and
    prints nothing, as autograd 1.9.1's does.

    >>> import warnings
    >>> import fastgrad.numpy as np
    >>> from fastgrad.util import quick_grad_check
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     quick_grad_check(lambda x, a: np.sum(np.sin(a * x)), np.array([0.1, 0.7]), (2.0,))
    >>> print(caught[0].message)
    quick_grad_check is deprecated; use fastgrad.test_util.check_grads
    """
    warnings.warn("quick_grad_check is deprecated; use fastgrad.test_util.check_grads", UserWarning, stacklevel=2)
    from .test_util import check_grads

    kwargs = {} if kwargs is None else kwargs
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=["rev"], order=1)(arg0)
