"""The book's run order (book/tools/run_notebooks.py UPSTREAM, kept by hand) agrees with what the
notebooks read and make (book/tools/run_order.py derives it from their source), and a notebook that
reads another chapter's product without waiting for it is caught."""

from __future__ import annotations

import sys

import nbformat
import pytest

from littlekit import runs
from littlekit.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "book" / "tools"))
import run_notebooks as rn  # noqa: E402
import run_order as ro  # noqa: E402


@pytest.fixture(scope="module")
def derived():
    return ro.book_order()


def test_the_hand_kept_run_order_agrees_with_the_notebooks(derived):
    assert sorted(n for n in derived if not n.startswith("ex")) == sorted(rn.UPSTREAM)
    problems = ro.differences(rn.UPSTREAM, derived, rn.upstream_of)
    assert not problems, "run_notebooks.UPSTREAM disagrees with the notebooks:\n" + "\n".join(problems)


def test_every_product_has_a_maker_and_shared_writers_mention_theirs():
    layout = {name: entry.path for name, entry in runs.PRODUCTS.items()}
    helpers = ro.package_reads(REPO_ROOT / "littlekit", layout)
    notebooks = ro.book_notebooks(REPO_ROOT / "notebooks")
    uses = {number: ro.notebook_uses(path, layout, helpers) for number, path in notebooks.items()}
    made_by = ro.makers(uses, layout, ro.SHARED_PRODUCTS)
    assert sorted(made_by) == sorted(runs.PRODUCTS)
    for product, writers in ro.SHARED_PRODUCTS.items():
        for writer in writers:
            assert product in uses[writer].reads, f"chapter {writer} never names {product!r}"


def write(path, *cells: str) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(nb, path)


LAYOUT = {"first": "first", "first_file": "first/table.parquet", "second": "second", "third": "third"}


@pytest.fixture
def book(tmp_path):
    """Three tiny chapters: 02 reads a file inside 01's product, 03 reads 02's through a package
    function; none of it is in the table below."""
    package = tmp_path / "kit"
    package.mkdir()
    (package / "helpers.py").write_text(
        "from kit import runs\n\n\ndef load(run):\n    return _inner(run)\n\n\n"
        "def _inner(run):\n    return runs.require(run, 'second')\n"
    )
    folder = tmp_path / "notebooks"
    folder.mkdir()
    write(folder / "01_make.ipynb", "%matplotlib inline\nchapter = setup_chapter(run_name, 'first')")
    write(
        folder / "02_read.ipynb",
        "chapter = setup_chapter(run_name, 'second')",
        "import pandas as pd\nframe = pd.read_parquet(runs.path(chapter.run, 'first_file'))",
    )
    write(folder / "03_helper.ipynb", "chapter = setup_chapter(run_name, 'third')\nload(chapter.run)")
    notebooks = {path.name[:2]: path for path in sorted(folder.glob("*.ipynb"))}
    return notebooks, package


def test_a_missing_upstream_edge_is_caught(book):
    notebooks, package = book
    derived = ro.derive(notebooks, LAYOUT, package, shared={})
    assert derived == {"01": (), "02": ("01",), "03": ("02",)}
    assert ro.differences({"01": (), "02": ("01",), "03": ("02",)}, derived) == []
    # 03 waits for 01 through 02, so a table listing 03 -> 01 as well lists nothing extra
    assert ro.differences({"01": (), "02": ("01",), "03": ("01", "02")}, derived) == []
    assert ro.differences({"01": (), "02": ("01",)}, {"01": (), "02": ()}) == [
        "02: the table lists 01, whose products it does not read"
    ]
    assert ro.differences({"01": (), "02": (), "03": ("02",)}, derived) == [
        "02: reads products of 01, not upstream in the table"
    ]
    assert ro.differences({"01": (), "02": ("01",), "03": ()}, derived) == [
        "03: reads products of 02, not upstream in the table"
    ]


def test_shared_products_wait_for_the_writers_before_the_reader(book):
    notebooks, package = book
    derived = ro.derive(notebooks, {**LAYOUT, "pool": "pool"}, package, shared={"pool": ("01", "03")})
    assert derived["02"] == ("01",)  # its own read of 01's file; "pool" is not read
    write(notebooks["02"], "chapter = setup_chapter(run_name, 'second')\nruns.require(chapter.run, 'pool')")
    derived = ro.derive(notebooks, {**LAYOUT, "pool": "pool"}, package, shared={"pool": ("01", "03")})
    assert derived["02"] == ("01",)  # 03 writes to the pool after 02 and is no upstream of it
    with pytest.raises(ValueError, match="more than one place: second"):
        ro.derive(notebooks, LAYOUT, package, shared={"second": ("02",)})


def test_a_product_nothing_makes_is_refused(book):
    notebooks, package = book
    write(notebooks["02"], "runs.require(run, 'third')", "runs.require(run, 'fourth')")
    with pytest.raises(KeyError, match="'fourth', which no notebook makes"):
        ro.derive(notebooks, {**LAYOUT, "fourth": "fourth"}, package, shared={})
