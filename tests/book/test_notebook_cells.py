"""The notebooks stay readable and draw shared figures one way: no code cell over 40 lines, and
the confusion heatmaps and retention bars with their intervals come from `littlekit.analysis.plots`,
never from a notebook's own copy."""

from __future__ import annotations

import ast
import json

import pytest

from littlekit.config import REPO_ROOT

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
ALL_NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")) + sorted(
    (NOTEBOOK_DIR / "exercises").glob("ex[0-9][0-9]_*.ipynb")
)
IDS = [path.name for path in ALL_NOTEBOOKS]
MAX_CELL_LINES = 40
SHARED_PLOTS = ("ci_whiskers", "confusion_heatmap", "retention_bars", "retention_barh")
OWN_PLOT_WORDS = ("heatmap", "whisker", "errorbar", "bars")


def code_cells(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"]


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=IDS)
def test_no_code_cell_is_longer_than_40_lines(path):
    lines = {i: len(source.splitlines()) for i, source in code_cells(path)}
    long = {i: n for i, n in lines.items() if n > MAX_CELL_LINES}
    assert not long, f"{path.name}: cells {long} (index: lines) exceed {MAX_CELL_LINES} lines; split them"


def drawn(node: ast.AST) -> set[str]:
    """The drawing methods a piece of code calls (ax.bar, ax.errorbar, sns.heatmap, ...)."""
    return {
        n.func.attr for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    }


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=IDS)
def test_shared_plots_are_drawn_with_the_plots_module(path):
    use = "use littlekit.analysis.plots"
    for index, source in code_cells(path):
        where = f"{path.name}, cell {index}"
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                calls = drawn(node)
                own = "heatmap" in calls or ({"bar", "barh"} & calls and "errorbar" in calls)
                named = any(word in node.name.lower() for word in OWN_PLOT_WORDS)
                assert not (own or named), f"{where}: defines its own plot {node.name}(); {use}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                call = ast.unparse(node)
                if node.func.attr == "heatmap":
                    assert "confusion" not in call, f"{where}: a confusion matrix by hand; {use}"
                if node.func.attr == "errorbar":
                    assert "ci_low" not in call and "ci_high" not in call, (
                        f"{where}: interval whiskers by hand; {use} (ci_whiskers, retention_bars, ...)"
                    )


def test_each_shared_plot_is_defined_once_in_the_package():
    defined = {}
    for module in sorted((REPO_ROOT / "littlekit").rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in SHARED_PLOTS:
                defined.setdefault(node.name, []).append(module.relative_to(REPO_ROOT).as_posix())
    assert defined == {name: ["littlekit/analysis/plots.py"] for name in SHARED_PLOTS}
