"""Forward-mode rules of fastgrad.numpy (first slice: the linear functions).

A function that is linear in each argument (the others held fixed) has the function
itself as its JVP; ``def_linear`` registers that.  The remaining forward rules come with
a later slice.
"""
from ..core import def_linear, defjvp
from . import numpy_wrapper as anp

# multilinear: linear in each argument separately
for _f in (anp.multiply, anp.dot, anp.matmul, anp.tensordot, anp.outer, anp.inner,
           anp.vdot, anp.kron, anp.cross, anp.einsum, anp.multiply_op, anp.matmul_op):
    def_linear(_f)

# linear in their (single) array argument
for _f in (anp.negative, anp.negative_op, anp.positive, anp.reshape, anp.ravel, anp.transpose, anp.swapaxes,
           anp.moveaxis, anp.expand_dims, anp.squeeze, anp.matrix_transpose, anp.broadcast_to,
           anp.flip, anp.copy, anp.real, anp.imag, anp.conjugate, anp.sum, anp.mean,
           anp.cumsum, anp.diagonal, anp.trace, anp.getitem, anp.diag_embed,
           anp.astype_method, anp.astype, anp.atleast_1d, anp.atleast_2d, anp.atleast_3d,
           anp.take, anp.repeat):
    defjvp(_f, "same")

# linear in every argument jointly is not the same as multilinear: these only in arg 0
defjvp(anp.true_divide, "same")
defjvp(anp.true_divide_op, "same")
defjvp(anp.compress, None, "same")
