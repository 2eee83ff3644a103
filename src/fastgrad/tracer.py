"""Tracing: boxes, nodes and primitives (the names of autograd.tracer), served by the engine.

``Box``, ``Node``, ``trace``, ``new_box``, ``isbox``, ``getval`` and ``register_notrace``
are the engine's own (compiled) objects.  Inside a differentiated function the arguments
are boxes; ``getval`` gives the value inside any number of them:

>>> import fastgrad.numpy as np
>>> from fastgrad import grad
>>> from fastgrad.tracer import Box, getval, isbox
>>> def f(x):
...     print(isbox(x), isinstance(x, Box), getval(x))
...     print(x)
...     return np.sin(x)
>>> grad(f)(0.0)
True True 0.0
Autograd ArrayBox with value 0.0
1.0
>>> isbox(1.0), getval(1.0)
(False, 1.0)

A node type of one's own (here one that counts the primitive calls behind a value) can
trace a function, and ``register_notrace`` tells it which primitives not to record;
``new_box`` boxes a value for a trace:

>>> from fastgrad.extend import primitive
>>> from fastgrad.tracer import Node, new_box, register_notrace, trace
>>> class Counter(Node):
...     def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
...         self.count = 1 + sum(parent.count for parent in parents)
...     def initialize_root(self):
...         self.count = 0
>>> @primitive
... def clipped(x):
...     return np.clip(x, -0.5, 0.5)
>>> f = lambda x: clipped(np.sin(x)) * x
>>> value, end = trace(Counter.new_root(), f, 1.0)
>>> end.count
3
>>> register_notrace(Counter, clipped)
>>> trace(Counter.new_root(), f, 1.0)[1].count
1
>>> box = new_box(2.0, 0, Counter.new_root())
>>> type(box).__name__, getval(box)
('ArrayBox', 2.0)
>>> new_box(3, 0, Counter.new_root())
Traceback (most recent call last):
    ...
TypeError: Can't differentiate w.r.t. type <class 'int'>...
"""

from contextlib import contextmanager

from ._engine import engine
from ._helpers import subvals, toposort  # noqa: F401  (autograd.tracer has them too)

Box = engine.Box
Node = engine.Node
trace = engine.trace
new_box = engine.new_box
isbox = engine.isbox
getval = engine.getval
register_notrace = engine.register_notrace
notrace_primitives = engine.notrace_primitives
box_type_mappings = Box.type_mappings
box_types = Box.types


def find_top_boxed_args(args):
    """``(boxes, trace, node_type)``: the boxes among ``args`` that belong to the innermost
    trace (as ``(position, box)`` pairs), that trace's id (-1 if no argument is boxed) and
    the type of their nodes.  A primitive records its call in that trace only."""
    top_trace, top_boxes, top_node_type = -1, [], None
    for argnum, arg in enumerate(args):
        if isbox(arg):
            t = arg._trace
            if t > top_trace:
                top_trace, top_boxes, top_node_type = t, [(argnum, arg)], type(arg._node)
            elif t == top_trace:
                top_boxes.append((argnum, arg))
    return top_boxes, top_trace, top_node_type


class TraceStack:
    """Trace ids for code that traces on its own (autograd's ``trace_stack``).

    ``with trace_stack.new_trace() as t:`` gives an id above every trace open now, so that
    boxes made with ``new_box(value, t, node)`` are recorded by primitives as the innermost
    trace, exactly as the boxes ``trace`` makes.  ``top`` is the id of the innermost trace
    opened here (-1 outside).  Ids are never reused: one drawn inside another is larger.
    The trace ends with the block: a box of it given to a primitive beside boxes of a later
    trace is then taken as the value it holds.
    """

    def __init__(self):
        self.top = -1

    @contextmanager
    def new_trace(self):
        outer = self.top
        self.top = t = engine.open_trace()
        try:
            yield t
        finally:
            self.top = outer
            engine.close_trace(t)


trace_stack = TraceStack()


def primitive(f_raw):
    """Wrap ``f_raw`` so that calls on boxed values are recorded for differentiation.

    The wrapper behaves like ``f_raw`` on plain values; give it rules with
    ``fastgrad.extend.defvjp`` / ``defjvp``.

    >>> from fastgrad import grad
    >>> from fastgrad.extend import primitive, defvjp
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defvjp(cube, lambda ans, x: lambda g: 3 * g * x ** 2)
    >>> grad(cube)(2.0)
    12.0
    """
    return engine.Primitive(f_raw)


def notrace_primitive(f_raw):
    """Wrap ``f_raw`` so that it runs on the plain values of boxed arguments, recording nothing.

    Use it for functions whose output is constant with respect to their inputs
    (shapes, comparisons, integer results).

    >>> from fastgrad import grad
    >>> from fastgrad.extend import notrace_primitive
    >>> @notrace_primitive
    ... def sign_of(x):
    ...     return 1.0 if x > 0 else -1.0
    >>> grad(lambda x: sign_of(x) * x)(-3.0)
    -1.0
    """
    return engine.NotracePrimitive(f_raw)
