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
