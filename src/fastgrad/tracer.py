"""Tracing: boxes, nodes and primitives (the names of autograd.tracer), served by the engine."""
from ._engine import engine

Box = engine.Box
Node = engine.Node
trace = engine.trace
new_box = engine.new_box
isbox = engine.isbox
getval = engine.getval
register_notrace = engine.register_notrace
notrace_primitives = engine.notrace_primitives
box_type_mappings = Box.type_mappings


def primitive(f_raw):
    """Wrap ``f_raw`` so that calls on boxed values are recorded for differentiation.

    The wrapper behaves like ``f_raw`` on plain values; give it rules with
    ``fastgrad.extend.defvjp`` / ``defjvp``.

    >>> from fastgrad.extend import primitive, defvjp
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2)
    """
    return engine.Primitive(f_raw)


def notrace_primitive(f_raw):
    """Wrap ``f_raw`` so that it runs on the plain values of boxed arguments, recording nothing.

    Use it for functions whose output is constant with respect to their inputs
    (shapes, comparisons, integer results)."""
    return engine.NotracePrimitive(f_raw)
