"""Gaussian-process regression with its hyper-parameters fitted by scipy.optimize.minimize.

The negative log marginal likelihood of a GP with a squared-exponential kernel is written
with fastgrad.numpy and fastgrad.scipy.linalg (a Cholesky factorisation and cho_solve);
`grad` of it is passed to SciPy's L-BFGS-B as `jac=`.  The hyper-parameters (log signal
variance, log length-scale, log noise variance and a constant mean) are unconstrained
because they are optimised on the log scale.

    python examples/gaussian_process.py [--iters 100] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from scipy.optimize import minimize

import fastgrad.numpy as np
import fastgrad.scipy.linalg as sla
from fastgrad import grad

NUM_ITERS = 100
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "gaussian_process.png")


def make_data(rng, n=40):
    x = np.sort(rng.uniform(-4.0, 4.0, n))
    y = np.sin(x) + 0.3 * np.cos(3.0 * x) + 0.5 + 0.15 * rng.randn(n)
    return x, y


def unpack(theta):
    log_signal, log_length, log_noise, mean = theta[0], theta[1], theta[2], theta[3]
    return np.exp(log_signal), np.exp(log_length), np.exp(log_noise), mean


def kernel(a, b, signal, length):
    sq_dist = (a[:, None] - b[None, :]) ** 2
    return signal * np.exp(-0.5 * sq_dist / length**2)


# gallery-start
def negative_log_marginal_likelihood(theta, x, y):
    signal, length, noise, mean = unpack(theta)
    K = kernel(x, x, signal, length) + (noise + 1e-6) * np.eye(len(x))
    L = sla.cholesky(K, lower=True)
    r = y - mean
    alpha = sla.cho_solve((L, True), r)
    return 0.5 * np.dot(r, alpha) + np.sum(np.log(np.diagonal(L))) + 0.5 * len(x) * np.log(2.0 * np.pi)


# gallery-end


def posterior(theta, x, y, x_new):
    """Mean and standard deviation of the latent function at x_new (plain values)."""
    signal, length, noise, mean = unpack(theta)
    K = kernel(x, x, signal, length) + (noise + 1e-6) * np.eye(len(x))
    K_star = kernel(x_new, x, signal, length)
    L = sla.cholesky(K, lower=True)
    mu = mean + K_star @ sla.cho_solve((L, True), y - mean)
    v = sla.solve_triangular(L, K_star.T, lower=True)
    var = signal - np.sum(v**2, axis=0)
    return mu, np.sqrt(np.maximum(var, 0.0))


def main(num_iters=NUM_ITERS, plot_path=DEFAULT_PLOT, seed=0, verbose=True, callback=None):
    """Fit; ``callback(i, loss)`` is called after each L-BFGS-B iteration."""
    rng = np.random.RandomState(seed)
    x, y = make_data(rng)
    theta0 = np.array([0.0, np.log(0.3), np.log(1.0), 0.0])  # a poor starting point

    def objective(theta):
        return negative_log_marginal_likelihood(theta, x, y)

    losses = [float(objective(theta0))]

    def monitor(theta):
        losses.append(float(objective(theta)))
        if callback is not None:
            callback(len(losses) - 1, losses[-1])
        if verbose:
            print(f"iteration {len(losses) - 1:3d}  negative log marginal likelihood {losses[-1]:.4f}")

    # gallery-start
    result = minimize(
        objective, theta0, jac=grad(objective), method="L-BFGS-B", callback=monitor, options={"maxiter": num_iters}
    )
    # gallery-end
    theta = result.x
    signal, length, noise, mean = unpack(theta)
    if verbose:
        print(
            f"{result.message}: signal variance {signal:.3f}, length-scale {length:.3f}, "
            f"noise variance {noise:.4f}, mean {mean:.3f}"
        )

    fig, (ax_fit, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.5), width_ratios=[1.6, 1])
    grid = np.linspace(-5.0, 5.0, 300)
    for th, style, label in ((theta0, ":", "initial hyper-parameters"), (theta, "-", "fitted hyper-parameters")):
        mu, sd = posterior(th, x, y, grid)
        (line,) = ax_fit.plot(grid, mu, style, label=label)
        if th is theta:
            ax_fit.fill_between(
                grid, mu - 2 * sd, mu + 2 * sd, color=line.get_color(), alpha=0.2, label="fitted: mean +/- 2 sd"
            )
    ax_fit.plot(x, y, "k.", label="data")
    ax_fit.set_title(f"GP posterior (length-scale {length:.2f}, noise sd {np.sqrt(noise):.2f})")
    ax_fit.legend(loc="lower right", fontsize=8)
    ax_loss.plot(losses, "o-")
    ax_loss.set_xlabel("L-BFGS-B iteration")
    ax_loss.set_ylabel("negative log marginal likelihood")
    ax_loss.set_title("hyper-parameter fit")
    fig.tight_layout()
    save(fig, plot_path, verbose)
    return {"losses": losses, "theta": theta}


def save(fig, path, verbose=True):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if verbose:
        print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=NUM_ITERS, help="maximum L-BFGS-B iterations")
    parser.add_argument("--plot", default=DEFAULT_PLOT, help="where to save the PNG")
    args = parser.parse_args()
    main(num_iters=args.iters, plot_path=args.plot)
