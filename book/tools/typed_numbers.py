"""Find numbers typed by hand into the book's markdown cells.

    python book/tools/typed_numbers.py [NOTEBOOK ...]   # default: every chapter and exercise

A result in prose comes from the run (`{glue:text}`key``) and a paper's figure from
`littlekit.paper` (glued as `paper_<name>`), so a digit left in markdown is a typed number,
unless it is one of what the allow-list below names: references to chapters, sections, figures,
tables, appendices, stages, grades and grade bands; years; numbered list items; names that carry
digits (Qwen3, bf16, pass@1); code, math, links and glued values. Prints each typed number with
its notebook and cell, and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_REF_NUM = r"(?:[A-Z]\.?)?\d+(?:\.\d+)*[a-z]?"
_REF_LIST = rf"{_REF_NUM}(?:\s*(?:-|–|,|, and|and|or|to|/|\+)\s*{_REF_NUM})*"
# Spans removed before digits are looked for, in this order.
ALLOWED = [
    re.compile(r"```.*?```", re.S),  # fenced code
    re.compile(r"\{glue(?::\w+)?\}`[^`]*`"),  # a glued value
    re.compile(r"`[^`\n]*`"),  # inline code: commands, flags, identifiers
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"\$[^$\n]+\$"),  # inline math
    re.compile(r"\]\([^)\s]*\)"),  # a link's or image's target
    re.compile(r"<[^>\n]*>"),  # an HTML tag and its attributes
    re.compile(r"https?://\S+"),
    re.compile(r"\b(?:K|\d{1,2})\.[A-Z]{1,4}(?:\.[A-Z])?(?:\.\d+[a-z]?)*"),  # CCSS codes: 6.EE.B.7
    re.compile(r"\b(?:90|95|99)% (?=(?:CI|confidence|interval|Wilson|bootstrap|exact|t-interval))"),
    re.compile(r"^#+[^\n]*?·\s*\d+", re.M),  # a numbered title: "# Exercises · 11 ..."
    re.compile(
        rf"\b(?:[Cc]hapters?|[Ss]ections?|§|[Ff]igures?|[Tt]ables?|[Aa]ppendix|[Aa]ppendices|App\.|"
        rf"[Ss]tages?|[Ee]xercises?|[Ss]essions?|[Ss]teps?|[Pp]arts?|[Ll]evels?|[Ee]quations?|"
        rf"[Cc]ells?|[Qq]uestions?|[Ss]tandards?|[Rr]ounds?|[Ss]egments?)\s+{_REF_LIST}"
    ),
    re.compile(r"\b[Gg]rades?\s+(?:K|\d+)(?:\s*(?:-|–|,|, and|and|or|to)\s*(?:K|\d+))*"),
    re.compile(r"\b(?:Beyond[- ])?K\s*[-–]\s*\d+\b"),  # grade bands K-5, K-8, K-12
    re.compile(r"\b(?:6\s*[-–]\s*8|9\s*[-–]\s*12)\b"),  # the middle and high school bands
    re.compile(r"\b[Gg]rades?\s+\d+\s*[-–]\s*\d+\b"),
    re.compile(r"\b(?:19|20)\d\d\b"),  # years
    re.compile(r"\[\d+(?:[,–-]\s*\d+)*\]"),  # numbered citations
    re.compile(r"^\s*(?:#+\s*)?\d+(?:[.)]|\s*·)\s", re.M),  # numbered list items and headings
    re.compile(r"\b[A-Za-z][A-Za-z_-]*\d+[A-Za-z0-9_.-]*"),  # names with digits: Qwen3, bf16, H100
    re.compile(r"@\d+|@k"),  # pass@1
    re.compile(r"\b\d+(?:st|nd|rd|th)\b"),  # ordinals
    re.compile(r"\b\d+-(?:gram|grams|way|shot|fold|digit|digits|dimensional)\b"),  # kinds, not counts
]


def typed_numbers(markdown: str) -> list[str]:
    """The numbers in `markdown` that no allow-list rule accounts for."""
    for rule in ALLOWED:
        markdown = rule.sub(" ", markdown)
    return NUMBER.findall(markdown)


def notebook_typed_numbers(path: Path) -> list[tuple[int, str, str]]:
    """(cell index, number, the line holding it) for each typed number in a notebook's markdown.
    A cell is scanned whole, so a reference broken across lines ("chapter" / "9") still counts."""
    notebook = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        text = "".join(cell["source"])
        lines = text.splitlines() or [""]
        for number in typed_numbers(text):
            line = next((line for line in lines if number in line), lines[0])
            found.append((index, number, line.strip()))
    return found


def book_notebooks() -> list[Path]:
    """Every chapter and exercise notebook of the book."""
    folder = ROOT / "notebooks"
    return sorted(folder.glob("[0-9][0-9]_*.ipynb")) + sorted((folder / "exercises").glob("ex*.ipynb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    paths = parser.parse_args(argv).notebooks or book_notebooks()
    total = 0
    for path in paths:
        for index, number, line in notebook_typed_numbers(path):
            print(f"{path.name} cell {index}: {number!r} in: {line[:140]}")
            total += 1
    print(f"{total} typed number(s) in {len(paths)} notebook(s)")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
