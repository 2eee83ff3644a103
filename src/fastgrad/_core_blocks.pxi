# Open recompute blocks: each thread's policies and the count, over all threads, that keeps
# the replay hook set (compiled engine, included in _core.pyx; _core_blocks.py is the pure
# one and says why).  Every change of state here is C: no interrupt can land between two.

cdef object _blocks = _threading.local()   # .policies: this thread's open blocks' policies
cdef Py_ssize_t _open = 0                   # blocks open in all threads


cdef class RecomputeBlock:
    """``with block:`` applies ``block._new_policy()`` to the graphs this thread records."""

    def __enter__(self):
        global _open
        policy = self._new_policy()     # (Python code, before anything changes)
        policies = getattr(_blocks, "policies", None)
        if policies is None:
            policies = []
            _blocks.policies = policies
        (<list?>policies).append(policy)
        _open += 1
        _hooks.record_replay = self._record
        return self

    def __exit__(self, *exc_info):
        global _open
        policies = getattr(_blocks, "policies", None)
        if policies:
            (<list?>policies).pop()
            _open -= 1
            if _open == 0:
                _hooks.record_replay = None
        return False


def recompute_policies():
    """This thread's open blocks' policies, innermost last (None or empty when none is open)."""
    return getattr(_blocks, "policies", None)


def open_recompute_blocks():
    """How many recompute blocks are open, in all threads."""
    return _open


def _after_fork_in_child_blocks():
    """The child of a fork has only the forking thread: the blocks open are its own."""
    global _open
    policies = getattr(_blocks, "policies", None)
    _open = len(policies) if policies else 0
    if _open == 0:
        _hooks.record_replay = None


if hasattr(_os, "register_at_fork"):
    _os.register_at_fork(after_in_child=_after_fork_in_child_blocks)
