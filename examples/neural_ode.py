"""A neural ODE: learn the vector field of a damped pendulum from one observed trajectory.

The model is dy/dt = f(y; params) with f a small tanh network.  Its trajectory comes from
`fastgrad.scipy.integrate.odeint` (SciPy's LSODA integrator); the loss compares it with the
observations, and `grad` of the loss with respect to the network's parameters runs the
adjoint ODE backwards in time through `odeint`.  Adam does the optimisation.

    python examples/neural_ode.py [--iters 150] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import fastgrad.numpy as np
from fastgrad import value_and_grad
from fastgrad.misc.optimizers import adam
from fastgrad.scipy.integrate import odeint

NUM_ITERS = 150
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "neural_ode.png")
TOLERANCES = {"rtol": 1e-5, "atol": 1e-6}


def pendulum(y, t):
    """The true system: angle and angular velocity of a damped pendulum."""
    angle, velocity = y
    return np.array([velocity, -np.sin(angle) - 0.3 * velocity])


def make_data(rng, num_points=40, t_max=8.0, noise=0.02):
    t = np.linspace(0.0, t_max, num_points)
    y0 = np.array([2.0, 0.0])
    ys = odeint(pendulum, y0, t, **TOLERANCES)
    return t, y0, ys + noise * rng.randn(*ys.shape)


def init_params(rng, hidden=16):
    return [0.5 * rng.randn(2, hidden), np.zeros(hidden), 0.1 * rng.randn(hidden, 2), np.zeros(2)]


# gallery-start
def network_field(y, t, W1, b1, W2, b2):
    """dy/dt as the model sees it: a one-hidden-layer tanh network of the state."""
    return np.tanh(y @ W1 + b1) @ W2 + b2


def trajectory(params, y0, t):
    return odeint(network_field, y0, t, tuple(params), **TOLERANCES)


def loss(params, y0, t, observed):
    return np.mean((trajectory(params, y0, t) - observed) ** 2)


# gallery-end


def main(num_iters=NUM_ITERS, plot_path=DEFAULT_PLOT, step_size=0.03, seed=0, verbose=True, callback=None):
    """Train; ``callback(i, loss)`` is called with each step's mean squared error."""
    rng = np.random.RandomState(seed)
    t, y0, observed = make_data(rng)
    params = init_params(rng)
    initial_fit = trajectory(params, y0, t)
    # gallery-start
    loss_and_grad = value_and_grad(loss)
    # gallery-end
    losses = []

    def gradient(params, i):
        value, g = loss_and_grad(params, y0, t, observed)
        losses.append(float(value))
        if callback is not None:
            callback(i, losses[-1])
        if verbose and i % 25 == 0:
            print(f"iteration {i:4d}  mean squared error {value:.5f}")
        return g

    # gallery-start
    params = adam(gradient, params, num_iters=num_iters, step_size=step_size)
    # gallery-end
    losses.append(float(loss(params, y0, t, observed)))
    if verbose:
        print(f"final mean squared error {losses[-1]:.5f}")

    t_long = np.linspace(0.0, 2 * t[-1], 300)  # extrapolate to twice the observed time
    fitted = trajectory(params, y0, t_long)
    truth = odeint(pendulum, y0, t_long, **TOLERANCES)
    fig, (ax_phase, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax_phase.plot(truth[:, 0], truth[:, 1], "k-", lw=0.8, label="true system")
    ax_phase.plot(observed[:, 0], observed[:, 1], "k.", label="observations")
    ax_phase.plot(initial_fit[:, 0], initial_fit[:, 1], ":", label="untrained model")
    ax_phase.plot(fitted[:, 0], fitted[:, 1], "-", label="trained model (to 2x time)")
    grid = np.linspace(-2.5, 2.5, 15)
    ga, gv = np.meshgrid(grid, grid)
    field = network_field(np.stack([ga.ravel(), gv.ravel()], axis=1), 0.0, *params)
    ax_phase.quiver(ga, gv, field[:, 0], field[:, 1], color="gray", alpha=0.4)
    ax_phase.set_xlabel("angle")
    ax_phase.set_ylabel("angular velocity")
    ax_phase.set_title("phase plane: learned vector field and trajectories")
    ax_phase.legend(loc="lower left", fontsize=8)
    ax_loss.semilogy(losses)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("mean squared error (log scale)")
    ax_loss.set_title("training through odeint")
    fig.tight_layout()
    save(fig, plot_path, verbose)
    return {"losses": losses, "params": params}


def save(fig, path, verbose=True):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if verbose:
        print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=NUM_ITERS, help="Adam steps")
    parser.add_argument("--plot", default=DEFAULT_PLOT, help="where to save the PNG")
    args = parser.parse_args()
    main(num_iters=args.iters, plot_path=args.plot)
