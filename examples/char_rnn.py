"""A character-level recurrent neural network trained on a short story (examples/data).

A vanilla RNN, h_t = tanh(W_x[c_t] + h_{t-1} W_h + b), reads the text one character at a time
and predicts the next character with a softmax over the alphabet.  Each step of the loop is
ordinary NumPy-style code on traced arrays; `value_and_grad` runs back through the whole
unrolled sequence (backpropagation through time).  Training uses Adam on random windows of
the text.  After training, the model writes some text of its own.

    python examples/char_rnn.py [--iters 800] [--plot out.png]
"""

import argparse
import os
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import fastgrad.numpy as np
from fastgrad import value_and_grad
from fastgrad.misc.optimizers import adam

NUM_ITERS = 800
HERE = os.path.dirname(os.path.abspath(__file__))
TEXT_PATH = os.path.join(HERE, "data", "lighthouse.txt")
DEFAULT_PLOT = os.path.join(HERE, "plots", "char_rnn.png")


def load_text(path=TEXT_PATH):
    with open(path, encoding="utf-8") as f:
        text = " ".join(f.read().split())  # one line, single spaces
    alphabet = sorted(set(text))
    codes = np.array([alphabet.index(ch) for ch in text])
    return text, alphabet, codes


def init_params(rng, vocab, hidden):
    return {
        "W_x": 0.1 * rng.randn(vocab, hidden),
        "W_h": rng.randn(hidden, hidden) / np.sqrt(hidden) * 0.5,
        "b": np.zeros(hidden),
        "W_out": 0.1 * rng.randn(hidden, vocab),
        "b_out": np.zeros(vocab),
    }


def log_softmax(logits):
    shifted = logits - np.max(logits, axis=-1, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))


# gallery-start
def sequence_loss(params, windows):
    """Mean negative log-likelihood (nats per character) of windows[:, 1:] given windows[:, :-1]."""
    batch, length = windows.shape
    h = np.zeros((batch, params["b"].shape[0]))
    states = []
    for t in range(length - 1):
        h = np.tanh(params["W_x"][windows[:, t]] + h @ params["W_h"] + params["b"])
        states.append(h)
    logits = np.stack(states, axis=1) @ params["W_out"] + params["b_out"]  # (batch, T, vocab)
    targets = np.eye(params["b_out"].shape[0])[windows[:, 1:]]  # one-hot
    return -np.sum(log_softmax(logits) * targets) / (batch * (length - 1))


# gallery-end


def sample(params, alphabet, prompt, length, rng, temperature=0.7):
    """Text continued from prompt (plain NumPy, no tracing)."""
    h = np.zeros(params["b"].shape[0])
    out = list(prompt)
    for ch in prompt[:-1]:
        h = np.tanh(params["W_x"][alphabet.index(ch)] + h @ params["W_h"] + params["b"])
    code = alphabet.index(prompt[-1])
    for _ in range(length):
        h = np.tanh(params["W_x"][code] + h @ params["W_h"] + params["b"])
        logits = (h @ params["W_out"] + params["b_out"]) / temperature
        p = np.exp(logits - np.max(logits))
        code = rng.choice(len(alphabet), p=p / np.sum(p))
        out.append(alphabet[code])
    return "".join(out)


def main(
    num_iters=NUM_ITERS,
    plot_path=DEFAULT_PLOT,
    hidden=96,
    window=33,
    batch=32,
    step_size=0.01,
    seed=0,
    verbose=True,
    callback=None,
):
    """Train, then sample; ``callback(i, loss)`` is called with each minibatch's loss."""
    text, alphabet, codes = load_text()
    rng = np.random.RandomState(seed)
    params = init_params(rng, len(alphabet), hidden)
    # gallery-start
    loss_and_grad = value_and_grad(sequence_loss)
    # gallery-end
    losses = []

    def gradient(params, i):
        starts = np.random.RandomState(seed * 100003 + i).randint(0, len(codes) - window, batch)
        windows = codes[starts[:, None] + np.arange(window)]
        value, g = loss_and_grad(params, windows)
        losses.append(float(value))
        if callback is not None:
            callback(i, losses[-1])
        if verbose and i % 100 == 0:
            print(f"iteration {i:4d}  loss {value:.3f} nats/char")
        return g

    # gallery-start
    params = adam(gradient, params, num_iters=num_iters, step_size=step_size)
    # gallery-end
    generated = sample(params, alphabet, "The keeper ", 300, np.random.RandomState(seed))
    if verbose:
        print(
            f"{len(text)} characters, alphabet of {len(alphabet)}; "
            f"final loss {np.mean(losses[-20:]):.3f} nats/char (uniform guess: "
            f"{np.log(len(alphabet)):.3f})"
        )
        print("sample:", generated)

    fig, (ax_loss, ax_text) = plt.subplots(2, 1, figsize=(10, 6), height_ratios=[2.2, 1])
    ax_loss.plot(losses, alpha=0.4, label="minibatch loss")
    k = max(1, min(25, len(losses) // 10))
    smooth = np.convolve(losses, np.ones(k) / k, mode="valid")
    ax_loss.plot(np.arange(k - 1, len(losses)), smooth, label=f"moving average ({k})")
    ax_loss.axhline(np.log(len(alphabet)), color="gray", ls=":", label="uniform guess")
    ax_loss.set_xlabel("iteration")
    ax_loss.set_ylabel("nats per character")
    ax_loss.set_title(f"char RNN ({hidden} hidden units) on {os.path.basename(TEXT_PATH)}")
    ax_loss.legend()
    wrapped = textwrap.fill(generated, 95)
    ax_text.text(0.0, 1.0, "Sampled text:\n\n" + wrapped, va="top", family="monospace", fontsize=9)
    ax_text.axis("off")
    fig.tight_layout()
    save(fig, plot_path, verbose)
    return {"losses": losses, "sample": generated, "params": params}


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
