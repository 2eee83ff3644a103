"""Logistic regression with quadratic features, fitted by gradient descent with fastgrad.grad.

Two classes drawn from Gaussians with different spreads are separated by a curved boundary,
so the model uses the features (1, x, y, x^2, xy, y^2).  The loss is the mean logistic loss
plus a small L2 penalty; `value_and_grad` gives the loss and its gradient in one pass.

    python examples/logistic_regression.py [--iters 300] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import fastgrad.numpy as np
from fastgrad import value_and_grad

NUM_ITERS = 300
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "logistic_regression.png")


def make_data(rng, n_per_class=150):
    inner = rng.randn(n_per_class, 2) * 0.6 + [0.3, 0.2]
    outer = rng.randn(n_per_class, 2) * 1.6
    X = np.concatenate([inner, outer])
    y = np.concatenate([np.ones(n_per_class), np.zeros(n_per_class)])
    return X, y


def features(X):
    x, y = X[:, 0], X[:, 1]
    return np.stack([np.ones_like(x), x, y, x * x, x * y, y * y], axis=1)


# gallery-start
def loss(w, F, y, l2=1e-3):
    """Mean logistic loss of the logits F @ w for labels y in {0, 1}, plus l2 * |w|^2."""
    logits = F @ w
    sign = 2.0 * y - 1.0
    return np.mean(np.logaddexp(0.0, -sign * logits)) + l2 * np.sum(w**2)


# gallery-end


def main(num_iters=NUM_ITERS, plot_path=DEFAULT_PLOT, step_size=0.5, seed=0, verbose=True, callback=None):
    """Train; ``callback(i, loss)`` is called after each step's loss is computed."""
    rng = np.random.RandomState(seed)
    X, y = make_data(rng)
    F = features(X)
    w = np.zeros(F.shape[1])
    # gallery-start
    loss_and_grad = value_and_grad(loss)

    losses = []
    for i in range(num_iters):
        value, g = loss_and_grad(w, F, y)
        losses.append(float(value))
        w = w - step_size * g
        # gallery-end
        if callback is not None:
            callback(i, losses[-1])
        if verbose and i % 50 == 0:
            print(f"iteration {i:4d}  loss {value:.4f}")
    losses.append(float(loss(w, F, y)))
    accuracy = float(np.mean(((F @ w) > 0) == (y > 0.5)))
    if verbose:
        print(f"final loss {losses[-1]:.4f}, training accuracy {accuracy:.1%}")

    fig, (ax_data, ax_loss) = plt.subplots(1, 2, figsize=(10, 4.5))
    grid = np.linspace(-4.5, 4.5, 200)
    gx, gy = np.meshgrid(grid, grid)
    probs = 1.0 / (1.0 + np.exp(-(features(np.stack([gx.ravel(), gy.ravel()], axis=1)) @ w)))
    ax_data.contourf(gx, gy, probs.reshape(gx.shape), levels=20, cmap="RdBu_r", alpha=0.4)
    ax_data.contour(gx, gy, probs.reshape(gx.shape), levels=[0.5], colors="k")
    ax_data.scatter(X[y == 1, 0], X[y == 1, 1], s=10, c="tab:red", label="class 1")
    ax_data.scatter(X[y == 0, 0], X[y == 0, 1], s=10, c="tab:blue", label="class 0")
    ax_data.set_xlim(grid[0], grid[-1])
    ax_data.set_ylim(grid[0], grid[-1])
    ax_data.set_title(f"decision boundary (accuracy {accuracy:.0%})")
    ax_data.legend(loc="upper right")
    ax_loss.plot(losses)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("loss")
    ax_loss.set_title("training loss")
    fig.tight_layout()
    save(fig, plot_path, verbose)
    return {"losses": losses, "weights": w, "accuracy": accuracy}


def save(fig, path, verbose=True):
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if verbose:
        print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=NUM_ITERS, help="gradient steps")
    parser.add_argument("--plot", default=DEFAULT_PLOT, help="where to save the PNG")
    args = parser.parse_args()
    main(num_iters=args.iters, plot_path=args.plot)
