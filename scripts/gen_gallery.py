"""Generate the examples gallery: docs/gallery/<example>.png and docs/examples.md.

Each program of examples/ is run through its ``main(plot_path=..., verbose=False, ...)``
(the entry point tests/test_examples.py calls) at the size given in GALLERY, its plot is
shrunk to a small palette PNG under docs/gallery/, and docs/examples.md is written: for each
example its description (the program's docstring), its picture and the key lines of its
code, taken from the source between ``# gallery-start`` and ``# gallery-end`` comments.

    python scripts/gen_gallery.py            # run every example, write the PNGs and the page
    python scripts/gen_gallery.py --page     # only rewrite the page (no example is run)
    python scripts/gen_gallery.py mlp_digits # run some examples only (and rewrite the page)

tests/test_gallery.py checks that the page is what ``render_page()`` makes from the current
sources, so the code shown cannot drift from the programs.  Needs the examples extra
(matplotlib, scikit-learn, SciPy) and Pillow (a matplotlib dependency) to make pictures.
"""

import argparse
import importlib.util
import io
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
DOCS = REPO / "docs"
GALLERY_DIR = DOCS / "gallery"
PAGE = DOCS / "examples.md"
START, END = "# gallery-start", "# gallery-end"
MAX_WIDTH = 900  # pixels: the width of the docs' content column, twice over is not needed
COLORS = 96  # palette size: plots use few colours, and a palette PNG is a fraction of RGB's size

# Page order: each example's heading, and the keyword arguments of main() for its picture
# (the examples' own sizes where they run in seconds, smaller where the default takes longer).
GALLERY = {
    "logistic_regression": ("Logistic regression", {}),
    "mlp_digits": ("A neural network on handwritten digits", {"num_iters": 300}),
    "gaussian_process": ("Gaussian-process regression", {}),
    "black_box_vi": ("Black-box variational inference", {}),
    "neural_ode": ("A neural ODE", {}),
    "newton_cg": ("Newton-CG with Hessian-vector products", {}),
    "char_rnn": ("A character-level recurrent network", {"num_iters": 400}),
    "tanh_derivatives": ("Higher derivatives of tanh", {}),
    # in this process, with Dask's threads (its default starts a two-worker cluster)
    "dask_logistic_regression": (
        "Logistic regression over a Dask array",
        {"n_rows": 200_000, "chunk_rows": 50_000, "local_cluster": False},
    ),
}

INTRO = """\
# Examples

The directory `examples/` of the repository holds complete programs written for fastgrad.
Each runs in well under a minute on a laptop with its default settings, prints its progress,
and saves a plot of its result as a PNG (by default in `examples/plots/`). Install what they
need with `pip install ".[examples]"` (matplotlib, scikit-learn, SciPy), then, from the
repository root:

```bash
python examples/logistic_regression.py
python examples/neural_ode.py --iters 300 --plot /tmp/ode.png   # every example takes --plot
```

Every program has a `main(...)` function with keyword arguments for its size (`num_iters`,
or `order` for `tanh_derivatives.py`), `plot_path`, `verbose` (print progress, the default)
and `callback`, called as `callback(i, loss)` at every iteration (`callback(k, values)` with
the k-th derivative for `tanh_derivatives.py`); it returns its results, including the loss at
each iteration. `tests/test_examples.py` runs each with a small iteration count and checks
that the loss went down.

The pictures below are made by these programs (`python scripts/gen_gallery.py`, at the sizes
given under each one), and the code shown is taken from their sources.
"""


def load_example(name):
    """The module examples/<name>.py (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"fastgrad_gallery_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_names():
    return sorted(p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_"))


def key_lines(source):
    """The blocks of ``source`` between gallery-start and gallery-end comment lines, each
    dedented, joined by a ``# ...`` line (lines left out)."""
    blocks, block = [], None
    for number, line in enumerate(source.splitlines(), 1):
        marker = line.strip()
        if marker == START:
            if block is not None:
                raise ValueError(f"line {number}: {START} inside a gallery block")
            block = []
        elif marker == END:
            if block is None:
                raise ValueError(f"line {number}: {END} without {START}")
            blocks.append(textwrap.dedent("\n".join(block)).strip("\n"))
            block = None
        elif block is not None:
            block.append(line)
    if block is not None:
        raise ValueError(f"{START} without {END}")
    if not blocks:
        raise ValueError(f"no {START} ... {END} block")
    return "\n\n\n# ...\n\n\n".join(blocks)  # two blank lines: the layout of top-level code


def description(source):
    """The paragraphs of the module docstring, without its usage line."""
    import ast

    paragraphs = [" ".join(p.split()) for p in ast.get_docstring(ast.parse(source)).split("\n\n")]
    return [p for p in paragraphs if p and not p.startswith(("python examples/", "pip install "))]


def call_text(kwargs):
    args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"main({args})" if args else "main()"


def render_section(name):
    source = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
    title, kwargs = GALLERY[name]
    return "\n".join(
        [
            f"## {title} (`{name}.py`)",
            "",
            *[line for p in description(source) for line in (textwrap.fill(p, 95), "")],
            f"![{title}: the plot of examples/{name}.py](gallery/{name}.png)",
            "",
            f"Key lines of `examples/{name}.py`:",
            "",
            "```python",
            key_lines(source),
            "```",
            "",
            f"Run it with `python examples/{name}.py`; the picture above comes from `{call_text(kwargs)}`.",
            "",
        ]
    )


def render_page():
    """docs/examples.md as the current sources make it."""
    missing = sorted(set(example_names()) - set(GALLERY))
    if missing:
        raise ValueError(f"examples not in GALLERY: {missing}")
    header = "<!-- Generated by scripts/gen_gallery.py from examples/*.py: edit those and rerun it. -->\n\n"
    return header + INTRO + "\n" + "\n".join(render_section(name) for name in GALLERY)


def shrink_png(raw, path):
    """Save the PNG bytes ``raw`` to ``path`` at most MAX_WIDTH wide, with a small palette."""
    from PIL import Image

    image = Image.open(io.BytesIO(raw)).convert("RGB")
    if image.width > MAX_WIDTH:
        height = round(image.height * MAX_WIDTH / image.width)
        image = image.resize((MAX_WIDTH, height), Image.LANCZOS)
    image = image.quantize(colors=COLORS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    image.save(path, optimize=True)


def make_picture(name):
    """Run the example at its gallery size and save its picture; returns a progress line."""
    import matplotlib

    matplotlib.use("Agg")
    steps = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        plot = Path(tmp) / f"{name}.png"
        load_example(name).main(
            plot_path=str(plot), verbose=False, callback=lambda i, value: steps.append(i), **GALLERY[name][1]
        )
        GALLERY_DIR.mkdir(parents=True, exist_ok=True)
        shrink_png(plot.read_bytes(), GALLERY_DIR / f"{name}.png")
    size = (GALLERY_DIR / f"{name}.png").stat().st_size
    return f"{name}: {len(steps)} steps in {time.perf_counter() - start:.1f} s, {size // 1024} KiB"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="examples to run (default: all)")
    parser.add_argument("--page", action="store_true", help="only rewrite docs/examples.md")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - set(GALLERY))
    if unknown:
        parser.error(f"unknown examples {unknown}; known: {sorted(GALLERY)}")
    if not args.page:
        for name in args.names or list(GALLERY):
            print(make_picture(name), flush=True)
    PAGE.write_text(render_page(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
