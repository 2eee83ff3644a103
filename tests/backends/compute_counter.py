"""Counting Dask graph executions, to assert that building a gradient computes nothing.

``with ComputeCounter() as counter: ...`` counts every graph that Dask's local schedulers
run inside the block: ``.compute()``, ``float(x)``, ``bool(x)``, ``numpy.asarray(x)``,
``int(x)`` all go through one (Dask arrays have no ``tolist``).  (A ``dask.distributed`` client runs graphs on its
workers, where local callbacks do not fire: count with the local scheduler.)
"""

import traceback

from dask.callbacks import Callback


class ComputeCounter(Callback):
    """A dask callback whose ``count`` is the number of graphs executed while it is active."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.stacks = []  # the Python stack of each execution: who asked for it

    def _start(self, dsk):
        self.count += 1
        if len(self.stacks) < 100:
            self.stacks.append(traceback.extract_stack()[:-1])
