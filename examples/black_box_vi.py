"""Black-box variational inference: fit a Gaussian to a banana-shaped 2-D density.

The variational family is a full-covariance Gaussian q(z) = N(mu, L L^T) with
L = [[exp(a), 0], [c, exp(b)]].  The evidence lower bound (ELBO) is estimated by Monte Carlo
with the reparameterisation z = mu + L eps, eps ~ N(0, I), so its gradient with respect to the
variational parameters is an ordinary `grad` of the estimate.  Only the unnormalised log
density of the target is needed (hence "black box").  Adam does the optimisation.

    python examples/black_box_vi.py [--iters 400] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import fastgrad.numpy as np
from fastgrad import grad
from fastgrad.misc.optimizers import adam

NUM_ITERS = 400
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "black_box_vi.png")


def log_target(z):
    """Unnormalised log density of a bent ("banana") distribution; z has shape (n, 2)."""
    z1, z2 = z[:, 0], z[:, 1]
    return -0.5 * (z1 / 1.5) ** 2 - 0.5 * ((z2 - 0.3 * z1**2 - 0.6 * z1 + 1.0) / 0.5) ** 2


# gallery-start
def samples(params, eps):
    """z = mu + L eps for the rows of eps."""
    mu1, mu2, a, b, c = params[0], params[1], params[2], params[3], params[4]
    e1, e2 = eps[:, 0], eps[:, 1]
    return np.stack([mu1 + np.exp(a) * e1, mu2 + c * e1 + np.exp(b) * e2], axis=1)


def negative_elbo(params, eps):
    """-(E_q[log p(z)] + H[q]) with the expectation estimated on the samples eps."""
    entropy = params[2] + params[3] + np.log(2.0 * np.pi * np.e)  # log det L + const
    return -(np.mean(log_target(samples(params, eps))) + entropy)


# gallery-end


def main(
    num_iters=NUM_ITERS, plot_path=DEFAULT_PLOT, num_samples=100, step_size=0.05, seed=0, verbose=True, callback=None
):
    """Fit q; ``callback(i, loss)`` is called with the -ELBO estimate before each Adam step."""
    params = np.array([1.0, 1.0, 0.0, 0.0, 0.0])  # mean (1, 1), identity covariance
    eval_eps = np.random.RandomState(seed + 1).randn(5000, 2)  # fixed, for a smooth curve

    # gallery-start
    def objective(params, i):
        eps = np.random.RandomState(seed * 100003 + i).randn(num_samples, 2)  # fresh per step
        return negative_elbo(params, eps)

    # gallery-end

    losses = []

    def monitor(params, i, g):
        losses.append(float(negative_elbo(params, eval_eps)))
        if callback is not None:
            callback(i, losses[-1])
        if verbose and i % 50 == 0:
            print(f"iteration {i:4d}  -ELBO {losses[-1]:.4f}")

    # gallery-start
    params = adam(grad(objective), params, callback=monitor, num_iters=num_iters, step_size=step_size)
    # gallery-end
    losses.append(float(negative_elbo(params, eval_eps)))
    mu = params[:2]
    L = np.array([[np.exp(params[2]), 0.0], [params[4], np.exp(params[3])]])
    if verbose:
        print(f"final -ELBO {losses[-1]:.4f}; q mean {mu.round(3)}, covariance {(L @ L.T).round(3).tolist()}")

    fig, (ax_q, ax_loss) = plt.subplots(1, 2, figsize=(11, 4.5))
    g1, g2 = np.meshgrid(np.linspace(-5, 5, 200), np.linspace(-4, 6, 200))
    grid = np.stack([g1.ravel(), g2.ravel()], axis=1)
    ax_q.contour(g1, g2, np.exp(log_target(grid)).reshape(g1.shape), levels=8, cmap="Blues")
    angle = np.linspace(0, 2 * np.pi, 100)
    circle = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    for k in (1, 2, 3):
        ellipse = mu + k * circle @ L.T
        ax_q.plot(ellipse[:, 0], ellipse[:, 1], color="tab:red", lw=1, label="q: 1, 2, 3 sd" if k == 1 else None)
    z = samples(params, eval_eps[:300])
    ax_q.scatter(z[:, 0], z[:, 1], s=3, color="tab:red", alpha=0.4, label="samples of q")
    ax_q.set_title("target density (blue) and Gaussian approximation (red)")
    ax_q.legend(loc="upper left", fontsize=8)
    ax_loss.plot(losses)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("-ELBO (5000 fixed samples)")
    ax_loss.set_title("optimisation")
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
