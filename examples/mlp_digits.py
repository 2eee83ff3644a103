"""A small neural network classifying scikit-learn's bundled 8x8 digits (no download).

A 64-64-10 tanh network with a softmax output, trained on minibatches with Adam
(fastgrad.misc.optimizers.adam).  The parameters are a list of (weights, biases) tuples:
fastgrad differentiates through lists and tuples and returns gradients of the same shape.

    python examples/mlp_digits.py [--iters 600] [--plot out.png]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from sklearn.datasets import load_digits

import fastgrad.numpy as np
from fastgrad import grad
from fastgrad.misc.optimizers import adam

NUM_ITERS = 600
DEFAULT_PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "plots", "mlp_digits.png")


def load_data(rng, n_test=400):
    digits = load_digits()
    X = digits.data / 16.0  # pixel intensities in [0, 1]
    labels = digits.target
    order = rng.permutation(len(X))
    X, labels = X[order], labels[order]
    onehot = np.eye(10)[labels]
    return (X[n_test:], onehot[n_test:]), (X[:n_test], onehot[:n_test]), digits.images[order][:n_test]


def init_params(rng, sizes, scale=0.1):
    return [(scale * rng.randn(m, n), np.zeros(n)) for m, n in zip(sizes[:-1], sizes[1:])]


def log_softmax(logits):
    shifted = logits - np.max(logits, axis=1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))


# gallery-start
def predict_log_probs(params, X):
    h = X
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    return log_softmax(h @ W + b)


def loss(params, X, Y, l2=1e-4):
    """Mean cross-entropy plus an L2 penalty on the weights."""
    penalty = sum(np.sum(W**2) for W, _ in params)
    return -np.mean(np.sum(predict_log_probs(params, X) * Y, axis=1)) + l2 * penalty


# gallery-end


def accuracy(params, X, Y):
    return float(np.mean(np.argmax(predict_log_probs(params, X), axis=1) == np.argmax(Y, axis=1)))


def main(
    num_iters=NUM_ITERS, plot_path=DEFAULT_PLOT, batch_size=128, step_size=0.01, seed=0, verbose=True, callback=None
):
    """Train; ``callback(i, loss)`` is called with the training loss before each Adam step."""
    rng = np.random.RandomState(seed)
    (X_train, Y_train), (X_test, Y_test), test_images = load_data(rng)
    params = init_params(rng, [64, 64, 10])
    num_batches = int(np.ceil(len(X_train) / batch_size))

    def batch_loss(params, i):
        start = (i % num_batches) * batch_size
        return loss(params, X_train[start : start + batch_size], Y_train[start : start + batch_size])

    losses, test_accuracies = [], []

    def monitor(params, i, g):
        losses.append(float(loss(params, X_train, Y_train)))
        if callback is not None:
            callback(i, losses[-1])
        if i % 25 == 0 or i == num_iters - 1:
            test_accuracies.append((i, accuracy(params, X_test, Y_test)))
        if verbose and i % 100 == 0:
            print(f"iteration {i:4d}  train loss {losses[-1]:.4f}  test accuracy {test_accuracies[-1][1]:.1%}")

    # gallery-start
    params = adam(grad(batch_loss), params, callback=monitor, num_iters=num_iters, step_size=step_size)
    # gallery-end
    losses.append(float(loss(params, X_train, Y_train)))
    final_accuracy = accuracy(params, X_test, Y_test)
    if verbose:
        print(f"final train loss {losses[-1]:.4f}, test accuracy {final_accuracy:.1%}")

    fig = plt.figure(figsize=(12, 5), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[1.1, 1])
    ax_loss = left.subplots()
    ax_loss.semilogy(losses, label="training loss")
    ax_acc = ax_loss.twinx()
    steps, accs = zip(*test_accuracies)
    ax_acc.plot(steps, accs, color="tab:orange", label="test accuracy")
    ax_acc.set_ylim(0, 1)
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("cross-entropy (log scale)")
    ax_acc.set_ylabel("test accuracy")
    ax_loss.set_title(f"training (final test accuracy {final_accuracy:.1%})")
    handles = ax_loss.get_legend_handles_labels()[0] + ax_acc.get_legend_handles_labels()[0]
    ax_loss.legend(handles=handles, loc="center right")
    predictions = np.argmax(predict_log_probs(params, X_test), axis=1)
    truth = np.argmax(Y_test, axis=1)
    for k, ax in enumerate(right.subplots(4, 6).ravel()):
        ax.imshow(test_images[k], cmap="gray_r")
        ax.set_title(
            f"predicted {predictions[k]}", fontsize=9, color="tab:green" if predictions[k] == truth[k] else "tab:red"
        )
        ax.axis("off")
    right.suptitle("test digits")
    save(fig, plot_path, verbose)
    return {"losses": losses, "test_accuracy": final_accuracy, "params": params}


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
