"""Open recompute blocks: each thread's policies and the count, over all threads, that keeps
the replay hook set (pure engine; _core_blocks.pxi is the compiled one).

fastgrad.recompute subclasses RecomputeBlock.  Entering a block pushes the policy its
``_new_policy()`` makes onto this thread's list and sets the hook ``record_replay`` to its
``_record``; leaving pops it, and clears the hook when no block is open in any thread.  A
block left open by mistake would make every later gradient slower, so the state changes
where neither Ctrl-C nor another thread can come between two of its steps: CPython
delivers a signal, and switches threads, only on entering a Python function, on a jump back
in a loop and right after a call returns, and the steps below are loads, stores and list
operators, no call (the compiled block is C).  The policy (Python code) is made before
anything changes.  One moment cannot be guarded in Python: on entering __exit__, before its
first line (as resume_gc's in _core_gc.py); the compiled block has none.
"""

import os
import threading

from ._core_seam import _bound

_blocks = threading.local()  # .policies: this thread's open blocks' policies, innermost last
_open = [0]  # blocks open in all threads


class RecomputeBlock:
    """``with block:`` applies ``block._new_policy()`` to the graphs this thread records."""

    def __enter__(self):
        policy = self._new_policy()
        try:
            policies = _blocks.policies
        except AttributeError:
            policies = _blocks.policies = []
        # (no call from here on: see above)
        policies += (policy,)
        _open[0] += 1
        _bound.hooks.record_replay = self._record
        return self

    def __exit__(self, *exc_info):
        # (no call before the state has changed: see above)
        try:
            policies = _blocks.policies
        except AttributeError:
            return False
        if policies:
            _open[0] -= 1
            if _open[0] == 0:
                _bound.hooks.record_replay = None
            del policies[-1]
        return False


def recompute_policies():
    """This thread's open blocks' policies, innermost last (None or empty when none is open)."""
    return getattr(_blocks, "policies", None)


def open_recompute_blocks():
    """How many recompute blocks are open, in all threads."""
    return _open[0]


def _after_fork_in_child_blocks():
    """The child of a fork has only the forking thread: the blocks open are its own."""
    policies = getattr(_blocks, "policies", None)
    _open[0] = len(policies) if policies else 0
    if _open[0] == 0:
        _bound.hooks.record_replay = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child_blocks)
