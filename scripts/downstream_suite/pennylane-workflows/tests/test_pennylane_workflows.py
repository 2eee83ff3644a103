"""PennyLane's autograd interface, as its users run it: gradients, Jacobians and Hessians of
quantum circuits on its simulator, checked against closed forms.  Run on autograd 1.8.0 (which
PennyLane requires) and on fastgrad bound with ``install_as_autograd(array_ufunc=False)``
(scripts/downstream_suite.sh pennylane-workflows); CI cannot fetch PennyLane's own tests.

The workflows are those where fastgrad once differed from autograd 1.8: a PennyLane ``tensor``
on the left of an operator with a traced value, an in-place sum into a tensor, and Hessians by
parameter shift, whose rule contracts the cotangent with a tuple of traced values.
"""

import numpy as onp
import pennylane as qml
import pytest
from pennylane import numpy as pnp

TOL = 1e-10


@pytest.fixture
def dev():
    return qml.device("default.qubit", wires=2)


def test_jacobian_of_a_rotation_by_a_sum_of_two_tensors(dev):
    @qml.qnode(dev)
    def circuit(a, c):
        qml.RX(a + c, wires=0)  # a PennyLane tensor plus a traced one
        return qml.expval(qml.PauliZ(0))

    a = pnp.array(0.5, requires_grad=True)
    c = pnp.array(0.3, requires_grad=True)
    jac = qml.jacobian(circuit)(a, c)
    onp.testing.assert_allclose(onp.array(jac, dtype=float), [-onp.sin(0.8)] * 2, rtol=TOL)
    onp.testing.assert_allclose(onp.array(qml.grad(circuit)(a, c), dtype=float), [-onp.sin(0.8)] * 2, rtol=TOL)


@pytest.mark.parametrize("diff_method", ["backprop", "parameter-shift"])
def test_gradient_of_an_entangling_circuit(dev, diff_method):
    @qml.qnode(dev, diff_method=diff_method)
    def circuit(x):
        qml.RX(x[0], wires=0)
        qml.RY(x[1], wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    x = pnp.array([0.4, -1.1], requires_grad=True)
    # <Z1> after the CNOT is <Z0 Z1> before it: cos(x0) cos(x1)
    assert abs(float(circuit(x)) - onp.cos(0.4) * onp.cos(-1.1)) < TOL
    expected = [-onp.sin(0.4) * onp.cos(-1.1), -onp.cos(0.4) * onp.sin(-1.1)]
    onp.testing.assert_allclose(qml.grad(circuit)(x), expected, rtol=TOL)


@pytest.mark.parametrize("diff_method", ["backprop", "parameter-shift"])
def test_hessian_of_a_vector_valued_circuit_with_post_processing(dev, diff_method):
    @qml.qnode(dev, diff_method=diff_method, max_diff=2)
    def circuit(x):
        qml.RX(x[0], wires=0)
        qml.RY(x[1], wires=0)
        return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliZ(0))

    def cost(x):
        return x @ qml.math.hstack(circuit(x))  # (a + b) cos(a) cos(b)

    a, b = 0.76, -0.87
    x = pnp.array([a, b], requires_grad=True)
    # (PennyLane returns this Hessian inside a traced value whose trace has ended, on autograd too)
    hess = qml.math.unwrap(qml.jacobian(qml.grad(cost))(x))
    s, c = (onp.sin(a), onp.sin(b)), (onp.cos(a), onp.cos(b))
    expected = [
        [-2 * s[0] * c[1] - (a + b) * c[0] * c[1], -s[0] * c[1] - c[0] * s[1] + (a + b) * s[0] * s[1]],
        [-s[0] * c[1] - c[0] * s[1] + (a + b) * s[0] * s[1], -2 * c[0] * s[1] - (a + b) * c[0] * c[1]],
    ]
    onp.testing.assert_allclose(hess, expected, rtol=1e-9, atol=1e-12)


def test_second_derivative_by_parameter_shift(dev):
    @qml.qnode(dev, diff_method="parameter-shift", max_diff=2)
    def circuit(x):
        qml.RY(x, wires=0)
        return qml.expval(qml.PauliZ(0))

    x = pnp.array(0.9, requires_grad=True)
    second = qml.grad(qml.grad(circuit))(x)
    assert abs(float(second) + onp.cos(0.9)) < TOL


def test_global_phases_summed_in_place(dev):
    # combine_global_phases adds the phases with +=, a tensor first and a traced value next
    @qml.transforms.combine_global_phases
    @qml.qnode(dev)
    def circuit(x):
        qml.GlobalPhase(pnp.array(0.3, requires_grad=False), wires=0)
        qml.GlobalPhase(x, wires=0)
        qml.RX(x, wires=0)
        return qml.expval(qml.PauliZ(0))

    x = pnp.array(0.7, requires_grad=True)
    assert abs(float(qml.grad(circuit)(x)) + onp.sin(0.7)) < TOL


def test_gradient_descent_follows_the_closed_form(dev):
    @qml.qnode(dev)
    def circuit(x):
        qml.RX(x[0], wires=0)
        qml.RY(x[1], wires=0)
        return qml.expval(qml.PauliZ(0))  # cos(x0) cos(x1)

    opt = qml.GradientDescentOptimizer(stepsize=0.3)
    x = pnp.array([0.2, 0.4], requires_grad=True)
    by_hand = onp.array([0.2, 0.4])
    for _ in range(5):
        x = opt.step(circuit, x)
        grad = [-onp.sin(by_hand[0]) * onp.cos(by_hand[1]), -onp.cos(by_hand[0]) * onp.sin(by_hand[1])]
        by_hand = by_hand - 0.3 * onp.array(grad)
    onp.testing.assert_allclose(x, by_hand, rtol=TOL)
