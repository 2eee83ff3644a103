"""What fastgrad does when a function cannot run on an array library: an error that names
the function and the library, raised from the library's own error, never a silent
conversion to NumPy (issue #17, item 3), in both engines."""

import subprocess
import sys
import textwrap
import warnings

import numpy as onp
import pytest

import fake_cupy
import fastgrad
import fastgrad.numpy as np
from array_backends import HAVE_DASK
from fastgrad import _backends

needs_dask = pytest.mark.skipif(not HAVE_DASK, reason="dask[array] is not installed")


def _stand_in(a):
    return fake_cupy.from_numpy(onp.asarray(a, dtype=float))


# ---- a library's own error, explained --------------------------------------------------


def test_a_failure_on_a_library_array_names_the_function_and_keeps_the_error_class():
    x = _stand_in(onp.ones((2, 3)))
    with pytest.raises(_backends.BackendError) as info:
        np.linalg.inv(x)  # (not square: NumPy's LinAlgError is a ValueError)
    err = info.value
    assert isinstance(err, onp.linalg.LinAlgError) and isinstance(err, ValueError)
    assert str(err).startswith("fastgrad: fastgrad.numpy.linalg.inv is not available for fake_cupy.ndarray arrays: ")
    assert type(err.__cause__) is onp.linalg.LinAlgError  # the library's own error, kept


def test_the_explained_error_is_raised_inside_a_gradient_too():
    x = _stand_in(onp.ones((2, 3)))
    with pytest.raises(ValueError, match="fastgrad.numpy.linalg.inv is not available for fake_cupy.ndarray") as info:
        fastgrad.grad(lambda x: np.sum(np.linalg.inv(x)))(x)
    assert isinstance(info.value, _backends.BackendError)


def test_a_failure_on_numpy_values_is_numpy_s_own_error_unchanged():
    with pytest.raises(onp.linalg.LinAlgError) as info:
        np.linalg.inv(onp.ones((2, 3)))
    assert type(info.value) is onp.linalg.LinAlgError and info.value.__cause__ is None
    with pytest.raises(TypeError) as info:
        fastgrad.grad(lambda x: np.sum(np.sin(x, 1, 2, 3)))(onp.ones(3))
    assert type(info.value) is TypeError


def test_errors_other_than_type_value_and_not_implemented_pass_unchanged():
    class Odd(Exception):
        pass

    def boom(x):
        raise Odd("boom")

    prim = fastgrad.extend.primitive(boom)
    with pytest.raises(Odd):
        prim(_stand_in([1.0]))


def test_an_error_class_that_cannot_take_a_message_is_raised_as_it_is():
    def decode(x):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")  # (a ValueError)

    prim = fastgrad.extend.primitive(decode)
    with pytest.raises(UnicodeDecodeError) as info:
        prim(_stand_in([1.0]))
    assert type(info.value) is UnicodeDecodeError


# ---- Dask: the functions it would run by converting to NumPy ----------------------------


@needs_dask
@pytest.mark.parametrize(
    "call, name",
    [
        (lambda x: np.split(x, 2), "fastgrad.numpy.split"),
        (lambda x: np.kron(x, x), "fastgrad.numpy.kron"),
        (lambda x: np.linalg.det(x), "fastgrad.numpy.linalg.det"),
        (lambda x: np.real_if_close(x), "fastgrad.numpy.real_if_close"),
    ],
)
def test_a_function_dask_lacks_is_refused_without_computing(call, name):
    import dask.array as da

    from compute_counter import ComputeCounter

    x = da.from_array(onp.arange(16.0).reshape(4, 4) + onp.eye(4), chunks=2)
    with ComputeCounter() as counter, warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # (Dask's warning before it computes)
        with pytest.raises(_backends.BackendError, match=name + " is not available for dask.array.Array arrays"):
            call(x)
        with pytest.raises(_backends.BackendError, match=name):
            fastgrad.grad(lambda x: np.sum(call(x)[0]))(x)
    assert counter.count == 0
    assert call(onp.eye(4)) is not None  # NumPy values: as before


@needs_dask
def test_dask_s_own_functions_are_not_refused():
    import dask.array as da

    x = da.from_array(onp.arange(6.0).reshape(2, 3), chunks=1)
    g = fastgrad.grad(lambda x: np.sum(np.concatenate([np.transpose(np.transpose(x)), x]) ** 2))(x)
    assert isinstance(g, da.Array)
    onp.testing.assert_allclose(g.compute(), 4 * onp.arange(6.0).reshape(2, 3))


@needs_dask
def test_refusals_are_installed_whichever_of_dask_and_fastgrad_is_imported_first():
    code = """
        import warnings
        warnings.simplefilter("error", FutureWarning)
        {first}
        {second}
        x = da.ones((4, 4), chunks=2)
        try:
            np.split(x, 2)
        except Exception as e:
            print(type(e).__name__, e)
        print(len(np.split(np.ones(4), 2)))
    """
    imports = ["import dask.array as da", "import fastgrad.numpy as np"]
    for first, second in (imports, imports[::-1]):
        out = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code.format(first=first, second=second))],
            capture_output=True,
            text=True,
        )
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0].startswith("BackendError fastgrad: fastgrad.numpy.split is not available for dask.array.Array")
        assert lines[1] == "2"
