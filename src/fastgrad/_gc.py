"""Pause the cyclic garbage collector while a graph is built and consumed.

A graph is a large number of container objects that live briefly; every collection would
walk all of them (60% of autograd's time at 10^5 nodes).  The engine counts the pauses
across threads and nested calls, so the collector's state is restored exactly when the
outermost differentiation ends, also when user code raises or is interrupted.
"""

from ._engine import engine

_PAUSE = engine.GCPause()
depth = engine.gc_pause_depth


def gc_paused():
    """``with gc_paused(): ...``"""
    return _PAUSE
