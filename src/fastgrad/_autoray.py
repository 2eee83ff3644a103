"""autoray's dispatch for fastgrad's boxes.

autoray (the array dispatch of quimb and PennyLane) finds the functions for an array from the
package its class comes from: autograd's boxes say ``autograd``, which autoray maps to
``autograd.numpy``, with a reduced SVD and ``complex(re, im)`` made as ``re + 1j * im``.
fastgrad's boxes say ``fastgrad``, a package without NumPy's functions, so once autoray is
imported fastgrad tells it that ``fastgrad`` means the backend ``fastgrad.numpy`` (the module
with the functions), with the same two adjustments.  Under ``install_as_autograd()`` the boxes
say ``autograd`` and autoray's own mapping applies.
"""


def _reduced_svd(svd):
    """autoray's ``linalg.svd`` is the reduced decomposition for every backend."""

    def reduced_svd(a, full_matrices=False, **kwargs):
        return svd(a, full_matrices=full_matrices, **kwargs)

    return reduced_svd


def _complex(re, im):
    return re + 1j * im


def register(autoray):
    """Called with the autoray module once it is imported (``_backends.add_integration``)."""
    from .numpy import linalg
    from .numpy.numpy_boxes import ArrayBox

    # The backend follows the boxes' module name, "autograd" under install_as_autograd()
    # (autoray's autograd mapping, which PennyLane's dispatch expects); autoray < 0.9 can only
    # name a class's backend.
    backend_alias = getattr(getattr(autoray, "autoray", autoray), "register_backend_alias", None)
    if backend_alias is not None:
        backend_alias("fastgrad", "fastgrad.numpy")
    else:
        autoray.register_backend(ArrayBox, "fastgrad.numpy")
    autoray.register_function("fastgrad.numpy", "linalg.svd", _reduced_svd(linalg.svd))
    autoray.register_function("fastgrad.numpy", "complex", _complex)
