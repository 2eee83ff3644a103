"""tanh and its first six derivatives, each obtained by differentiating the previous one.

`elementwise_grad(f)` is the derivative of an elementwise function at every point of an
array.  Applying it to its own output again and again gives higher derivatives: each level
differentiates the backward pass of the level below (reverse over reverse).  The first three
are compared with their closed forms: with t = tanh(x), 1 - t^2, -2 t (1 - t^2) and
-2 (1 - t^2)(1 - 3 t^2).

    python examples/tanh_derivatives.py [--order 6] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import fastgrad.numpy as np
from fastgrad import elementwise_grad

ORDER = 6
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "tanh_derivatives.png")


# gallery-start
def derivatives(fun, x, order, callback=None):
    """[fun(x), fun'(x), ..., fun^(order)(x)]; ``callback(k, values[k])`` after each one."""
    values, f = [fun(x)], fun
    for k in range(1, order + 1):
        f = elementwise_grad(f)
        values.append(f(x))
        # gallery-end
        if callback is not None:
            callback(k, values[-1])
    return values


def main(order=ORDER, plot_path=DEFAULT_PLOT, num_points=400, verbose=True, callback=None):
    """Differentiate; ``callback(k, values)`` is called with the k-th derivative on the grid."""
    x = np.linspace(-7.0, 7.0, num_points)
    values = derivatives(np.tanh, x, order, callback)
    t = np.tanh(x)
    closed_forms = [t, 1.0 - t**2, -2.0 * t * (1.0 - t**2), -2.0 * (1.0 - t**2) * (1.0 - 3.0 * t**2)]
    errors = [float(np.max(np.abs(v - c))) for v, c in zip(values, closed_forms)]
    if verbose:
        for k, err in enumerate(errors):
            print(f"derivative {k}: max deviation from the closed form {err:.1e}")
        for k, v in enumerate(values):
            print(f"derivative {k}: range [{v.min():.3f}, {v.max():.3f}]")

    fig, ax = plt.subplots(figsize=(8, 5))
    for k, v in enumerate(values):
        ax.plot(x, v, label="tanh" if k == 0 else f"order {k}")
    ax.set_title(f"tanh and its first {order} derivatives (elementwise_grad applied {order} times)")
    ax.legend(fontsize=8)
    ax.set_xlim(x[0], x[-1])
    fig.tight_layout()
    save(fig, plot_path, verbose)
    return {"x": x, "derivatives": values, "closed_form_errors": errors}


def save(fig, path, verbose=True):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if verbose:
        print(f"plot saved to {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--order", type=int, default=ORDER, help="highest derivative")
    parser.add_argument("--plot", default=DEFAULT_PLOT, help="where to save the PNG")
    args = parser.parse_args()
    main(order=args.order, plot_path=args.plot)
