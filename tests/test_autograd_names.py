"""Every name of autograd 1.9.1's extension modules that libraries built on autograd import
exists under install_as_autograd() (issue #14, item 5).

The lists were read from autograd 1.9.1's modules (``dir()`` of each).  Left out, each for a
reason: names a module merely imported from the standard library or NumPy (``count``,
``reduce``, ``partial``, ``wraps``, ``OrderedDict``, ``defaultdict``, ``contextmanager``,
``repeat``, ``product``, ``np``, ``type_``, ``dict_``, ``list_``, ``tuple_``, ``isinstance_``),
leftovers of module-level loops (``method_name``), ``misc.flatten.type`` (autograd's module
imports its traced ``type()`` for its own use: here the module uses Python's), and autograd's private rule helpers
(``grad_*``, ``fwd_grad_*``, ``deprecated_defvjp_message``), which are the implementation of
its rules, not an interface: fastgrad's rules are its own.  Private names are listed where
libraries use them (geomstats calls ``differential_operators._make_vjp``).
"""

import textwrap

import pytest

from test_dropin import _fastgrad_env, _finish, _run

NAMES = {
    "autograd": "grad elementwise_grad value_and_grad grad_and_aux hessian jacobian make_vjp make_jvp "
    "make_hvp make_ggnvp deriv holomorphic_grad multigrad_dict checkpoint hessian_tensor_product "
    "hessian_vector_product tensor_jacobian_product vector_jacobian_product primitive",
    "autograd.tracer": "Box Node TraceStack box_type_mappings box_types find_top_boxed_args getval isbox "
    "new_box notrace_primitive notrace_primitives primitive register_notrace subvals toposort trace "
    "trace_stack",
    "autograd.core": "Box JVPNode Node SparseBox SparseObject VJPNode VSpace add_outgrads backward_pass "
    "def_linear defjvp defjvp_argnum defjvp_argnums defvjp defvjp_argnum defvjp_argnums getval "
    "identity_jvp identity_vjp isbox make_jvp make_vjp primitive primitive_jvps primitive_vjps "
    "sparse_add sparse_object_types subval sum_outgrads toposort trace translate_jvp translate_vjp "
    "vspace",
    "autograd.extend": "Box JVPNode SparseObject VJPNode VSpace def_linear defjvp defjvp_argnum "
    "defjvp_argnums defvjp defvjp_argnum defvjp_argnums notrace_primitive primitive register_notrace "
    "vspace",
    "autograd.builtins": "Box ContainerVSpace DictBox DictVSpace ListVSpace NamedTupleVSpace SequenceBox "
    "SequenceVSpace SparseObject TupleVSpace VSpace container_take container_untake defjvp "
    "defjvp_argnum defvjp defvjp_argnum dict isinstance list make_sequence notrace_primitive primitive "
    "sequence_extend_left sequence_extend_right subvals tuple type vspace",
    "autograd.differential_operators": "_make_jvp _make_vjp atuple checkpoint defvjp_argnum deriv elementwise_grad grad grad_and_aux "
    "grad_named hessian hessian_tensor_product hessian_vector_product holomorphic_grad jacobian "
    "make_ggnvp make_hvp make_jvp make_jvp_reversemode make_vjp multigrad_dict primitive "
    "tensor_jacobian_product unary_to_nary value_and_grad vector_jacobian_product vspace",
    "autograd.wrap_util": "get_doc get_name subvals unary_to_nary wrap_nary_f wraps",
    "autograd.util": "func quick_grad_check subval subvals toposort",
    "autograd.test_util": "EPS RTOL TOL check_equivalent check_grads check_jvp check_vjp combo_check "
    "get_name make_jvp make_numerical_jvp make_vjp scalar_close unary_to_nary vspace",
    "autograd.numpy.numpy_boxes": "ArrayBox Box SequenceBox diff_methods nondiff_methods primitive",
    "autograd.numpy.numpy_vspaces": "ArrayVSpace ComplexArrayVSpace EigResultVSpace EighResultVSpace "
    "NamedTupleVSpace QRResultVSpace SVDResultVSpace SlogdetResultVSpace VSpace",
    "autograd.misc": "const_graph flatten",
    "autograd.misc.fixed_points": "defvjp fixed_point fixed_point_vjp make_vjp primitive tuple vspace",
    "autograd.misc.flatten": "flatten flatten_func make_vjp",
    "autograd.misc.optimizers": "adam flatten rmsprop sgd unflatten_optimizer",
    "autograd.misc.tracers": "ConstGraphNode FullGraphNode Node const_graph const_graph_unary full_graph "
    "subvals toposort trace",
}


def test_autograd_names_exist_under_the_switch():
    code = textwrap.dedent(f"""
        import importlib, fastgrad
        fastgrad.install_as_autograd()
        missing = []
        for module_name, names in {NAMES!r}.items():
            module = importlib.import_module(module_name)
            missing += [module_name + "." + n for n in names.split() if not hasattr(module, n)]
        print(" ".join(missing) or "none")
    """)
    out = _finish(_run(code, _fastgrad_env()), "the name audit").strip()
    assert out == "none", "missing under install_as_autograd(): " + out


def test_the_lists_are_autograds_names(ref):
    # the lists hold only names autograd 1.9.1 really has (so that they cannot drift)
    import importlib

    for module_name, names in NAMES.items():
        module = importlib.import_module(module_name)
        extra = [n for n in names.split() if not hasattr(module, n)]
        assert not extra, (module_name, extra)


@pytest.mark.fastgrad_only
def test_trace_stack_opens_a_trace_of_ones_own():
    code = textwrap.dedent("""
        import fastgrad
        fastgrad.install_as_autograd()
        import autograd.numpy as np
        from autograd.tracer import trace_stack, new_box, isbox, getval, find_top_boxed_args
        from autograd.core import VJPNode, backward_pass
        x = np.array([1.0, 2.0])
        with trace_stack.new_trace() as t:
            start = VJPNode.new_root()
            b = new_box(x, t, start)
            y = np.sum(np.sin(b) * 3.0)
            assert isbox(y) and y._trace == t
            boxed, top, node_type = find_top_boxed_args([1.0, b, y])
            assert top == t and [i for i, _ in boxed] == [1, 2] and node_type is VJPNode
            g = backward_pass(1.0, y._node)
        print(list(map(float, g)), getval(y) == float(np.sum(np.sin(x) * 3.0)))
    """)
    out = _finish(_run(code, _fastgrad_env()), "the trace_stack check").split()
    import numpy as onp

    onp.testing.assert_allclose([float(out[0].strip("[,")), float(out[1].strip("],"))], 3.0 * onp.cos([1.0, 2.0]))
    assert out[2] == "True"


@pytest.mark.fastgrad_only
@pytest.mark.parametrize("sub", ["", "linalg", "fft", "random"])
def test_numpy_namespaces_have_every_numpy_name_autograds_have(ref, sub):
    """autograd.numpy mirrors NumPy's names of the installed version (under NumPy 1 too,
    whose dir() leaves AxisError, ComplexWarning... out): so does fastgrad.numpy."""
    import importlib

    import numpy

    suffix = "." + sub if sub else ""
    theirs = importlib.import_module("autograd.numpy" + suffix)
    ours = importlib.import_module("fastgrad.numpy" + suffix)
    numpys = importlib.import_module("numpy" + suffix)
    missing = [
        n for n in dir(theirs) if not n.startswith("_") and n != "test" and hasattr(numpys, n) and not hasattr(ours, n)
    ]
    assert not missing, (numpy.__version__, sub, missing)
