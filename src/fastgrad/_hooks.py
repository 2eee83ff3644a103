"""The runtime switches that the engine reads on every node, in one object bound to it.

fastgrad._debug sets ``debug`` when debug mode is switched on or off; fastgrad._recompute
sets ``record_replay`` while a recompute block is open in some thread.  These are
per-process state: the engine reads each once per node, so a change applies from the
next node on.
"""

from ._engine import engine

HOOKS = engine.Hooks()
engine.bind(hooks=HOOKS)
