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

    # The backend follows the boxes' module name: "autograd" under install_as_autograd(),
    # where autoray's own autograd mapping applies (PennyLane's dispatch relies on it).
    # autoray < 0.9 has no aliases, only backends named per class, which would outrank the
    # module name there: it is left as it is.
    backend_alias = getattr(getattr(autoray, "autoray", autoray), "register_backend_alias", None)
    if backend_alias is None:
        return
    backend_alias("fastgrad", "fastgrad.numpy")
    autoray.register_function("fastgrad.numpy", "linalg.svd", _reduced_svd(linalg.svd))
    autoray.register_function("fastgrad.numpy", "complex", _complex)
