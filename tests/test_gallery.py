"""The examples gallery (docs/examples.md and docs/gallery/, made by scripts/gen_gallery.py)
lists every example with its picture, and the code it shows is the examples' code.

No example is run here (tests/test_examples.py does that): the page is rebuilt from the
current sources and compared with the committed one, so an edited example whose page was
not regenerated fails.
"""

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _load_gen_gallery():
    spec = importlib.util.spec_from_file_location("gen_gallery", REPO / "scripts" / "gen_gallery.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen_gallery = _load_gen_gallery()
PAGE = (REPO / "docs" / "examples.md").read_text(encoding="utf-8")
EXAMPLES = sorted(p.stem for p in (REPO / "examples").glob("*.py") if not p.stem.startswith("_"))


def test_the_gallery_has_every_example():
    assert len(EXAMPLES) >= 8
    assert sorted(gen_gallery.GALLERY) == EXAMPLES


@pytest.mark.parametrize("name", EXAMPLES)
def test_page_shows_the_picture_of_each_example(name):
    assert f"](gallery/{name}.png)" in PAGE
    assert f"(`{name}.py`)" in PAGE
    picture = REPO / "docs" / "gallery" / f"{name}.png"
    data = picture.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert 5_000 < len(data) < 100_000, f"{picture}: {len(data)} bytes (a few tens of KB expected)"


def test_no_picture_without_an_example():
    pictures = sorted(p.stem for p in (REPO / "docs" / "gallery").glob("*.png"))
    assert pictures == EXAMPLES


def test_page_is_what_the_sources_make():
    assert PAGE == gen_gallery.render_page(), "docs/examples.md is stale: run python scripts/gen_gallery.py --page"


@pytest.mark.parametrize("name", EXAMPLES)
def test_code_shown_is_the_examples_code(name):
    """Each line of the page's code block for an example is a line of its source (dedented),
    in order, and the block is the marked part of the source."""
    source = (REPO / "examples" / f"{name}.py").read_text(encoding="utf-8")
    section = PAGE.split(f"(`{name}.py`)", 1)[1]
    block = re.search(r"```python\n(.*?)\n```", section, re.S).group(1)
    assert block == gen_gallery.key_lines(source)
    stripped = [line.strip() for line in source.splitlines()]
    position = 0
    for line in block.splitlines():
        if line.strip() and line.strip() != "# ...":
            position = stripped.index(line.strip(), position) + 1  # ValueError: not in the source
    assert "grad(" in block, "the key lines should show the fastgrad call"


def test_key_lines_rejects_broken_markers():
    with pytest.raises(ValueError, match="without"):
        gen_gallery.key_lines("x = 1\n# gallery-start\ny = 2\n")
    with pytest.raises(ValueError, match="without"):
        gen_gallery.key_lines("# gallery-end\n")
    with pytest.raises(ValueError, match="no "):
        gen_gallery.key_lines("x = 1\n")
    assert gen_gallery.key_lines(
        "    # gallery-start\n    a = 1\n    # gallery-end\n# gallery-start\nb\n# gallery-end"
    ) == ("a = 1\n\n\n# ...\n\n\nb")


def test_readme_shows_a_gallery_picture():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = re.findall(r"\(docs/gallery/(\w+)\.png\)", readme)
    assert shown and all(name in EXAMPLES for name in shown)
