"""Switch on the compiled engine's scalar kernels for the commonest primitives and rules.

On NumPy float64 scalars (a scalar model, a loop over ``x[i]``) each primitive does one
floating-point operation behind a NumPy dispatch that costs far more than the operation.
The compiled engine has C kernels for those operations (``_scalar_kernels.h``) and uses
them when every value involved is a float64 or a Python float (or, for one operand of
``+ - * /`` and of their rules, an int a double holds exactly: ``x * 2``, ``1 - x``,
where NumPy computes on that double).  A kernel stands for a
NumPy function only where it gives NumPy's bits on every CPU:

- IEEE operations (``+ - * /``, negation, ``square``, ``sqrt``, ``abs``, and the reverse rules
  built from them): correctly rounded, so the same in C and in any NumPy loop;
- for ``sin``, ``cos``, ``tan``, ``exp``, ``log``, ..., ``power``: NumPy's own inner loop, the one
  NumPy runs on a float64 scalar on this machine (its SIMD loop where it has one, chosen
  for this CPU and NPY_DISABLE_CPU_FEATURES).  The engine binds each loop here from the
  primitive's ufunc after seeing NumPy call it (``bind``'s ``numpy_loops``); where it cannot,
  the kernels that need it stay off and NumPy computes.

Nothing is sampled at import: what makes a kernel right is what it computes, not a few
values on one machine (tests/test_scalar_kernels.py checks every kernel bit for bit on
thousands of values, with NumPy's CPU dispatch restricted and unrestricted).  The
pure-Python engine has no kernels (``scalar_kernel_names()`` is empty) and computes the
same values in Python.
"""

from .._engine import engine as _engine
from ..core import primitive_vjps
from . import numpy_wrapper as anp

# primitive -> forward kernel; the operator primitives (Python's operators, which give a
# float on two Python floats) need a float64 argument for the kernel to apply
FORWARD = {
    anp.add: "add",
    anp.subtract: "subtract",
    anp.multiply: "multiply",
    anp.true_divide: "divide",
    anp.negative: "negative",
    anp.square: "square",
    anp.sqrt: "sqrt",
    anp.absolute: "absolute",
    anp.fabs: "absolute",
    anp.sin: "sin",
    anp.cos: "cos",
    anp.tan: "tan",
    anp.exp: "exp",
    anp.log: "log",
    anp.tanh: "tanh",
    anp.sinh: "sinh",
    anp.cosh: "cosh",
    anp.arctan: "arctan",
    anp.log1p: "log1p",
    anp.expm1: "expm1",
    anp.log2: "log2",
    anp.log10: "log10",
    anp.power: "power",
    anp.maximum: "maximum",
    anp.minimum: "minimum",
    anp.fmax: "fmax",
    anp.fmin: "fmin",
}
OPERATOR_FORWARD = {
    anp.add_op: "add",
    anp.subtract_op: "subtract",
    anp.multiply_op: "multiply",
    anp.true_divide_op: "divide",
    anp.negative_op: "negative",
}

# primitive -> {argnum: reverse kernel}: each names the expression of the Python rule
# (the product in numpy/_elementwise.py) for that argument; "g" is a rule that returns g itself.  true_divide's
# rule for y, -g * x / y ** 2, has none: NumPy's y ** 2 on a float64 is the C library's
# pow (which may differ from y * y by an ulp), not a loop the engine can call.
REVERSE = {
    anp.add: {0: "g", 1: "g"},
    anp.subtract: {0: "g", 1: "-g"},
    anp.multiply: {0: "g*y", 1: "x*g"},
    anp.true_divide: {0: "g/y"},
    anp.negative: {0: "-g"},
    anp.square: {0: "g*2*x"},
    anp.sin: {0: "g*cos(x)"},
    anp.cos: {0: "-g*sin(x)"},
    anp.exp: {0: "g*ans"},
    anp.log: {0: "g/x"},
    anp.tanh: {0: "g*(1-ans*ans)"},
    anp.sinh: {0: "g*cosh(x)"},
    anp.cosh: {0: "g*sinh(x)"},
    anp.log1p: {0: "g/(x+1)"},
    anp.expm1: {0: "g*(ans+1)"},
    anp.absolute: {0: "g*sign(x)"},
    anp.fabs: {0: "g*sign(x)"},
    # ties share g evenly (numpy/_elementwise.py's _balanced_weight)
    anp.maximum: {0: "g*[x==ans]/(1+[x==y])", 1: "g*[y==ans]/(1+[y==x])"},
    anp.minimum: {0: "g*[x==ans]/(1+[x==y])", 1: "g*[y==ans]/(1+[y==x])"},
    anp.fmax: {0: "g*[x==ans]/(1+[x==y])", 1: "g*[y==ans]/(1+[y==x])"},
    anp.fmin: {0: "g*[x==ans]/(1+[x==y])", 1: "g*[y==ans]/(1+[y==x])"},
    anp.sqrt: {0: "g*0.5/ans"},
    # x ** 2 (the exponent the Python int 2 or float 2.0: the rule's branch for it)
    anp.power: {0: "g*x*2 (y=2)"},
}
for _ufunc_prim, _op_prim in (
    (anp.add, anp.add_op),
    (anp.subtract, anp.subtract_op),
    (anp.multiply, anp.multiply_op),
    (anp.true_divide, anp.true_divide_op),
    (anp.negative, anp.negative_op),
    (anp.power, anp.power_op),
):
    REVERSE[_op_prim] = REVERSE[_ufunc_prim]

# indexing: the rule's cotangent for the array, A's zeros with g added at idx (a sparse
# cotangent), is added by the engine straight into the array's pending sum when idx names
# one element of a float64 array and g is a float64 (a loop over x[i])
SCATTER = {anp.getitem: "A[idx]+=g"}
# and forward, the element itself is read (a float64 of its bytes) under the same condition
# on idx, A a float64 array in native byte order, without NumPy's indexing machinery
ELEMENT = {anp.getitem: "A[idx]"}

# primitives whose rules unbroadcast (and cast) to the argument
_BINARY = frozenset(
    [
        anp.add,
        anp.subtract,
        anp.multiply,
        anp.true_divide,
        anp.add_op,
        anp.subtract_op,
        anp.multiply_op,
        anp.true_divide_op,
        anp.maximum,
        anp.minimum,
        anp.fmax,
        anp.fmin,
    ]
)

ENABLED = {}  # what was switched on: (primitive, "forward" or argnum) -> kernel
LOOPS = {}  # NumPy loop name -> None when bound (the kernels that call it need it), else why not


def _direct_rule(prim, argnum):
    """The VJPRule of ``prim`` if its entry for ``argnum`` is a DIRECT rule (the kind a
    reverse kernel stands for), else None."""
    rule = primitive_vjps.get(prim)
    entry = getattr(rule, "entries", {}).get(argnum)
    if type(rule) is not _engine.VJPRule or entry is None or entry[0] != _engine.DIRECT:
        return None
    return rule


def install():
    """Bind NumPy's loops, then switch on every kernel of FORWARD, OPERATOR_FORWARD and
    REVERSE whose loop (if it needs one) is bound, and only those (no-op on the pure
    engine)."""
    unary, binary, reverse = _engine.scalar_kernel_names()
    if not reverse:
        return
    ENABLED.clear()
    LOOPS.clear()
    _engine.bind(numpy_loops={name: getattr(anp, name).fun for name in _engine.numpy_loop_names()})
    LOOPS.update(_engine.numpy_loop_status())

    def usable(kernel):
        loop = _engine.scalar_kernel_loop(kernel)
        return loop is None or LOOPS[loop] is None

    forward, backward = {}, {}  # primitive -> (kernel, needs_float64); (rule, argnum) -> (kernel, checks_target)
    for table, needs_float64 in ((FORWARD, False), (OPERATOR_FORWARD, True), (ELEMENT, False)):
        for prim, name in table.items():
            if name in unary + binary and usable(name):
                forward[prim] = (name, needs_float64)
                ENABLED[(prim, "forward")] = name
    for prim, kernels in REVERSE.items():
        for argnum, name in kernels.items():
            rule = _direct_rule(prim, argnum)
            if rule is not None and name in reverse and usable(name):
                # binary rules unbroadcast (and cast) to the argument: its type is checked too
                backward[(rule, argnum)] = (name, prim in _BINARY)
                ENABLED[(prim, argnum)] = name
    for prim, name in SCATTER.items():
        rule = _direct_rule(prim, 0)
        if rule is not None and name in reverse:
            backward[(rule, 0)] = (name, False)
            ENABLED[(prim, 0)] = name
    # the tables replace the bound ones whole: what they do not name is switched off
    _engine.bind(scalar_kernels=forward, scalar_vjps=backward)


install()
