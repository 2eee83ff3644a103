"""Peak memory of one call, as tracemalloc sees it (NumPy reports its data buffers to it)."""

import gc
import tracemalloc


def peak_traced_bytes(fun, *args):
    """(peak bytes traced during ``fun(*args)`` above those traced before it, its result)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = fun(*args)
        return tracemalloc.get_traced_memory()[1] - before, result
    finally:
        tracemalloc.stop()
