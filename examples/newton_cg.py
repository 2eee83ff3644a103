"""Newton-CG on the 50-dimensional Rosenbrock function, with Hessian-vector products.

SciPy's Newton-CG method needs the gradient and, for each conjugate-gradient step, a product
of the Hessian with a vector.  `hessian_vector_product(f)` computes H v by differentiating
<grad f(x), v> once more (reverse over reverse), without ever forming the 50 x 50 Hessian.
For comparison the same problem is solved by L-BFGS-B, which uses the gradient only.

    python examples/newton_cg.py [--iters 200] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from scipy.optimize import minimize

import fastgrad.numpy as np
from fastgrad import grad, hessian_vector_product

NUM_ITERS = 200
DIM = 50
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "newton_cg.png")


# gallery-start
def rosenbrock(x):
    """sum_i 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2; its minimum is 0 at x = (1, ..., 1)."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


# gallery-end


def run(method, x0, num_iters, callback=None, **derivatives):
    losses = [float(rosenbrock(x0))]

    def monitor(x):
        losses.append(float(rosenbrock(x)))
        if callback is not None:
            callback(len(losses) - 1, losses[-1])

    result = minimize(
        rosenbrock,
        x0,
        method=method,
        callback=monitor,
        options={"maxiter": num_iters},
        **derivatives,
    )
    return result, losses


def main(num_iters=NUM_ITERS, plot_path=DEFAULT_PLOT, dim=DIM, seed=0, verbose=True, callback=None):
    """Minimise; ``callback(i, value)`` is called after each Newton-CG iteration."""
    x0 = np.random.RandomState(seed).uniform(-1.5, 1.5, dim)
    # gallery-start
    hvp = hessian_vector_product(rosenbrock)  # hvp(x, v) = H(x) @ v

    newton, losses = run("Newton-CG", x0, num_iters, callback, jac=grad(rosenbrock), hessp=hvp)
    # gallery-end
    lbfgs, lbfgs_losses = run("L-BFGS-B", x0, num_iters, jac=grad(rosenbrock))
    if verbose:
        print(
            f"Newton-CG: f = {newton.fun:.3e} after {newton.nit} iterations "
            f"({newton.nhev} Hessian-vector products); max |x - 1| = "
            f"{np.max(np.abs(newton.x - 1.0)):.2e}"
        )
        print(f"L-BFGS-B:  f = {lbfgs.fun:.3e} after {lbfgs.nit} iterations")

    # Check one product against the full Hessian (built from dim products with unit vectors).
    H = np.stack([hvp(x0, e) for e in np.eye(dim)])
    v = np.random.RandomState(seed + 1).randn(dim)
    hvp_error = float(np.max(np.abs(H @ v - hvp(x0, v))))

    fig, (ax_loss, ax_x) = plt.subplots(1, 2, figsize=(11, 4.5))
    ax_loss.semilogy(np.maximum(losses, 1e-16), "o-", ms=3, label="Newton-CG (grad + H v)")
    ax_loss.semilogy(np.maximum(lbfgs_losses, 1e-16), "s-", ms=3, label="L-BFGS-B (grad only)")
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("Rosenbrock value (log scale)")
    ax_loss.set_title(f"{dim}-dimensional Rosenbrock")
    ax_loss.legend()
    ax_x.plot(x0, "o", ms=4, label="start")
    ax_x.plot(newton.x, "x", label="Newton-CG solution")
    ax_x.axhline(1.0, color="k", lw=0.5)
    ax_x.set_xlabel("coordinate")
    ax_x.set_title("coordinates (the minimum is all ones)")
    ax_x.legend()
    fig.tight_layout()
    save(fig, plot_path, verbose)
    return {"losses": losses, "lbfgs_losses": lbfgs_losses, "x": newton.x, "hvp_error": hvp_error}


def save(fig, path, verbose=True):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if verbose:
        print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iters", type=int, default=NUM_ITERS, help="maximum iterations")
    parser.add_argument("--plot", default=DEFAULT_PLOT, help="where to save the PNG")
    args = parser.parse_args()
    main(num_iters=args.iters, plot_path=args.plot)
