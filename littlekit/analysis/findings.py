"""What a chapter found beside what the paper claims, and the glue that puts run numbers in prose.

A chapter reports each claim of the paper it tests as a `Finding` (the paper's figure, ours with
its interval, a verdict and what would change it); `findings_box` shows them as the chapter's
closing box and carries them, as data, in the output's metadata, where the book's scorecard reads
them back from the executed notebook. `glue` is MyST-NB's: an output Jupyter Book pastes into
markdown that reads `{glue:text}`key``, so prose quotes the run instead of typing numbers.
"""

from __future__ import annotations

import html
import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from littlekit import paper

HOLDS, DOES_NOT_HOLD, UNTESTABLE = "holds", "does not hold", "untestable here"
VERDICTS = (HOLDS, DOES_NOT_HOLD, UNTESTABLE)
GLUE_PREFIX = "application/papermill.record/"  # MyST-NB's mime prefix for a glued, hidden output
FINDINGS_METADATA = "littlekit_findings"  # the box's output metadata key the scorecard reads
GLUE_ROLE = re.compile(r"\{glue(?::\w+)?\}`([^`]+)`")  # {glue:text}`key:.1%` pastes key


@dataclass(frozen=True)
class Finding:
    """One claim of the paper as one chapter tested it."""

    claim: str  # a key of littlekit.paper.CLAIMS
    ours: str  # our figure, with its interval where it has one
    verdict: str  # one of VERDICTS
    would_change: str  # what result or scale would change the verdict
    paper: str = ""  # the paper's figure; the claim's own when empty

    def __post_init__(self) -> None:
        paper.claim(self.claim)  # a KeyError names the known claims
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if not self.ours.strip() or not self.would_change.strip():
            raise ValueError(f"finding {self.claim!r}: say what we measured and what would change it")

    def row(self) -> dict[str, str]:
        """The finding with the claim's statement and the paper's figure filled in."""
        claim = paper.claim(self.claim)
        return {
            **asdict(self),
            "where": claim.where,
            "statement": claim.statement,
            "paper": self.paper or claim.paper,
        }


def against_target(low: float, high: float, target: float, at_most: bool) -> str:
    """The verdict of an interval [low, high] against a target the paper meets: the whole interval
    on the target's side holds, the whole interval on the other side does not, and an interval
    that straddles the target cannot tell at this sample size."""
    if any(math.isnan(x) for x in (low, high)):
        return UNTESTABLE
    inside = high <= target if at_most else low >= target
    outside = low > target if at_most else high < target
    return HOLDS if inside else DOES_NOT_HOLD if outside else UNTESTABLE


def same_sign(low: float, high: float, positive: bool = True) -> str:
    """The verdict of an interval on a difference the paper says is positive (or negative): the
    whole interval strictly on that side holds, the whole interval strictly on the other side does
    not, one that touches or spans 0 cannot tell. (A claim of "at least as large" is
    `against_target(low, high, 0.0, at_most=False)`.)"""
    if any(math.isnan(x) for x in (low, high)):
        return UNTESTABLE
    low, high = (low, high) if positive else (-high, -low)
    return HOLDS if low > 0 else DOES_NOT_HOLD if high < 0 else UNTESTABLE


def within_margin(low: float, high: float, margin: float) -> str:
    """The verdict of an interval on a claim of no change, judged with an equivalence margin: the
    whole interval within +-margin holds, wholly outside it does not, across an edge cannot tell
    (an interval that merely holds 0 is absence of evidence, not evidence of no change)."""
    upper = against_target(low, high, margin, at_most=True)
    lower = against_target(low, high, -margin, at_most=False)
    if DOES_NOT_HOLD in (upper, lower):
        return DOES_NOT_HOLD
    return HOLDS if upper == lower == HOLDS else UNTESTABLE


def glue(key: str, value: Any) -> None:
    """Glue `value` (shown as its str; a float as it is) under `key`, hidden in the notebook, for
    `{glue:text}`key`` in markdown. The same output MyST-NB's `glue(key, value, display=False)` makes."""
    from IPython.display import display

    shown = value if isinstance(value, int | float) and not isinstance(value, bool) else str(value)
    display(
        {GLUE_PREFIX + "text/plain": repr(shown)},
        raw=True,
        metadata={"scrapbook": {"name": key, "mime_prefix": GLUE_PREFIX}},
    )


def box_html(rows: list[dict[str, str]]) -> str:
    """The findings box: one row per claim, as an admonition the book's theme draws as a box."""
    columns = ("paper's claim", "paper", "here", "verdict", "what would change it")
    head = "".join(f"<th>{h}</th>" for h in columns)
    body = "".join(
        "<tr>"
        f"<td>{html.escape(r['where'])}: {html.escape(r['statement'])}</td>"
        f"<td>{html.escape(r['paper'])}</td><td>{html.escape(r['ours'])}</td>"
        f"<td><b>{html.escape(r['verdict'])}</b></td><td>{html.escape(r['would_change'])}</td>"
        "</tr>"
        for r in rows
    )
    return (
        '<div class="admonition note findings"><p class="admonition-title">Findings beside the paper</p>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def show_box(findings: list[Finding], out_dir: Path | None = None) -> list[dict[str, str]]:
    """Show the findings box; write `findings.json` into `out_dir` when given. Returns the rows."""
    from IPython.display import display

    if not findings:
        raise ValueError("a findings box needs at least one finding")
    rows = [f.row() for f in findings]
    if out_dir is not None:
        (Path(out_dir) / "findings.json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    display(
        {"text/html": box_html(rows), "text/plain": json.dumps(rows, indent=1)},
        raw=True,
        metadata={FINDINGS_METADATA: rows},
    )
    return rows


def notebook_findings(notebook: dict) -> list[dict[str, str]]:
    """The findings rows an executed notebook's box carries (empty when it has none)."""
    return [
        row
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code"
        for output in cell.get("outputs", [])
        for row in output.get("metadata", {}).get(FINDINGS_METADATA, [])
    ]


def notebook_glue_keys(notebook: dict) -> set[str]:
    """The keys an executed notebook glued."""
    return {
        output["metadata"]["scrapbook"]["name"]
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "code"
        for output in cell.get("outputs", [])
        if "scrapbook" in output.get("metadata", {})
    }


def missing_glue(notebook: dict) -> set[str]:
    """Keys an executed notebook's markdown pastes that its run never glued (Jupyter Book would
    show nothing in their place)."""
    wanted = {
        match.group(1).split("::")[-1].rsplit(":", 1)[0]
        for cell in notebook.get("cells", [])
        if cell.get("cell_type") == "markdown"
        for match in GLUE_ROLE.finditer("".join(cell.get("source", "")))
    }
    return wanted - notebook_glue_keys(notebook)
