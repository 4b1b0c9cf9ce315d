"""Stage 4 in numbers: which notation families fire on which texts, and the matched text in context.

The symbolic-filter report (the run product `symbolic_report`) is built from these pieces:

- `family_table()`: the families of the paper's Table 3 and of the released filter, with the
  rules and examples of `littlekit.filter.symbolic.RULES`, and whether each example fires.
- `hits_frame(texts)`: one row per text with the stage's verdict (first family, matched text,
  exactly what `SymbolicStage.score` reports) and the number of matches of every family;
  `spans_frame(texts)`: every match with its rule and character offsets.
- `hit_rates(hits, by)`: share of texts dropped per group, with Wilson intervals, per family.
- `examples(...)` and `in_context(...)`: a few matches per family, drawn with a seed, shown with
  the text around them.
- `mathcamps_grade(standard)`: the school grade of a MathCAMPS standard code.
- `time_scoring(score, texts)` and `growth_exponent(chars, seconds)`: seconds per text, and how
  time grows with length, for the linear-time demonstration.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from littlekit.filter.symbolic.rules import FAMILIES, MAX_MATCH_CHARS, RULES
from littlekit.filter.symbolic.stage import match_spans
from littlekit.grades import normalise_grade
from littlekit.stats import share_table

# The paper's Table 3 (App. A.3): representative matches and pattern coverage, per category.
PAPER_TABLE3: dict[str, tuple[str, str]] = {
    "equations": (
        "2x + 3 = 7, ax + by = c, x² + 2x",
        "Single-variable algebra, multi-variable equations, and polynomial forms",
    ),
    "exponents": ("x², xⁿ, 5³", "Caret, LaTeX, unicode, digit-base and programming-style"),
    "roots": ("√x, ⁿ√x, x^(1/3)", "Square roots, cube roots, n-th roots, cbrt(, and root word forms"),
    "inequalities": ("a < x < b, a ≤ x ≤ b", "Chained comparisons with <, >, ≤, and ≥"),
    "calculus": (
        "∑, ∫, ∂, ∞",
        "Summation, integrals, partial derivatives, infinity, and advanced LaTeX commands",
    ),
    "functions": ("f(x), g(y), h(z)", "Restricted to f/g/h with arguments x/y/z"),
}
# What each family of our rule table covers, in words (the rules themselves are in RULES).
COVERAGE: dict[str, str] = {
    "equations": "a coefficient juxtaposed with a variable (2x + 3 = 7, y = 3x), two different "
    "variables (ax + by = c), polynomials (x² + 2x), 2(x + 3), (5 * d)",
    "exponents": "n^m, x^{...}, unicode superscripts, x**n, 'squared'/'cubed', 'to the power of'; "
    "not powers of ten with a one-digit exponent (5.NBT.A.2) nor area/volume units (cm², m^3)",
    "roots": "√ before a number or short symbol, ∛ ∜, \\sqrt, sqrt( cbrt(, fractional exponents "
    "x^(1/3), 'square/cube/nth root'",
    "inequalities": "chained comparisons (a < x < b), a variable bounded with ≤ ≥ <= >= \\le \\ge "
    "(x ≥ 3), and n/x/y/z compared with a number (x > 5); not numbers ordered (5 < 8)",
    "calculus": "∑ ∫ ∂ ∇ ∞, Σ outside Greek words, \\frac \\lim \\int \\sum \\partial \\infty, "
    "dy/dx, lim x→0",
    "functions": "f(x) g(y) h(z), 'f of x', sin( cos( tan( log( ln( exp( and their LaTeX commands, sin θ",
    "chemical_formulas": "element symbols with counts or subscripts (H2O, CO2, C6H12O6, Ca(OH)2, O₂), "
    "salts without counts (NaCl), either after a coefficient (6CO2, 6O2); not codes or acronyms "
    "(USA, Y2K, H1N1, 5KW)",
}
assert set(COVERAGE) == set(FAMILIES) and set(PAPER_TABLE3) <= set(FAMILIES)


HIT_COLUMNS = ("dropped", "family", "rule", "match", "n_matches", *(f"n_{f}" for f in FAMILIES))


def family_table() -> pd.DataFrame:
    """One row per family: Table 3's examples and coverage, ours, the rules and their examples.

    `examples_fire` is True when every rule's example is matched by its own family, which is
    what makes the `example` column trustworthy as "an example that fires".
    """
    rows = []
    for family in FAMILIES:
        rules = [rule for rule in RULES if rule.family == family]
        paper_examples, paper_coverage = PAPER_TABLE3.get(family, ("", "(released filter only)"))
        fired = [any(span.family == family for span in match_spans(rule.example)) for rule in rules]
        rows.append(
            {
                "family": family,
                "in_table3": family in PAPER_TABLE3,
                "paper_examples": paper_examples,
                "paper_coverage": paper_coverage,
                "covers": COVERAGE[family],
                "rules": len(rules),
                "examples": " · ".join(rule.example for rule in rules),
                "examples_fire": all(fired),
            }
        )
    return pd.DataFrame(rows).set_index("family")


def rule_table() -> pd.DataFrame:
    """One row per rule of RULES: family, name, example, and the family its example fires first."""
    rows = []
    for rule in RULES:
        spans = match_spans(rule.example)
        rows.append(
            {
                "family": rule.family,
                "rule": rule.name,
                "example": rule.example,
                "fires_as": spans[0].family if spans else None,
                "own_family_fires": any(span.family == rule.family for span in spans),
            }
        )
    return pd.DataFrame(rows)


def hits_frame(texts: Sequence[str], index: Sequence | pd.Index | None = None) -> pd.DataFrame:
    """Per text: `dropped`, the stage's first `family`/`rule`/`match`, `n_matches`, `n_<family>`.

    `family` and `match` are what `SymbolicStage().score(text)` reports (first rule in table
    order, its first match); the counts cover every rule of every family.
    """
    rows = []
    for text in texts:
        spans = match_spans(text)
        counts = {f"n_{family}": 0 for family in FAMILIES}
        for span in spans:
            counts[f"n_{span.family}"] += 1
        first = spans[0] if spans else None
        rows.append(
            {
                "dropped": first is not None,
                "family": first.family if first else None,
                "rule": first.rule if first else None,
                "match": first.text[:MAX_MATCH_CHARS] if first else None,
                "n_matches": len(spans),
                **counts,
            }
        )
    frame = pd.DataFrame(rows, columns=list(HIT_COLUMNS))
    frame["dropped"] = frame["dropped"].astype(bool)
    if index is not None:
        frame.index = pd.Index(index)
    return frame


def spans_frame(texts: Sequence[str], index: Sequence | pd.Index | None = None) -> pd.DataFrame:
    """Every match of every rule: `doc` (position or `index` label), family, rule, start, end, match."""
    labels = list(range(len(texts))) if index is None else list(index)
    rows = [
        {
            "doc": label,
            "family": span.family,
            "rule": span.rule,
            "start": span.start,
            "end": span.end,
            "match": span.text,
        }
        for label, text in zip(labels, texts, strict=True)
        for span in match_spans(text)
    ]
    return pd.DataFrame(rows, columns=["doc", "family", "rule", "start", "end", "match"])


def hit_rates(hits: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """Per group of `by` (None: one row, "all"): texts `n`, `dropped`, `share` with its Wilson 95%
    interval, then the dropped texts per family and `any_<family>`, the share with any match.

    `hits` is a `hits_frame` plus the column `by`. The per-family counts put each dropped text
    under the family that dropped it (the stage's first match), so they add up to `dropped`; a
    text can count in several `any_` columns.
    """
    key = by or "group"
    frame = hits if by else hits.assign(group="all")
    table = share_table(frame, key, "dropped")
    grouped = frame.groupby(key, observed=True)
    for family in FAMILIES:
        table[family] = grouped["family"].agg(lambda s, f=family: int((s == f).sum()))
    for family in FAMILIES:
        table[f"any_{family}"] = grouped[f"n_{family}"].agg(lambda s: float((s > 0).mean()))
    return table


def in_context(text: str, start: int, end: int, width: int = 60) -> str:
    """The span [start, end) marked «like this», with up to `width` characters either side.

    Newlines and tabs become spaces so an example reads on one line; "…" marks a cut.
    """
    if not 0 <= start <= end <= len(text):
        raise ValueError(f"span [{start}, {end}) is outside a text of {len(text)} characters")
    left = text[max(0, start - width) : start]
    right = text[end : end + width]
    pieces = [
        "…" if start > width else "",
        left,
        "«",
        text[start:end],
        "»",
        right,
        "…" if end + width < len(text) else "",
    ]
    return " ".join("".join(pieces).split())


def examples(
    spans: pd.DataFrame,
    texts: Mapping | pd.Series,
    per_family: int,
    seed: int,
    width: int = 60,
) -> pd.DataFrame:
    """Up to `per_family` texts per family, drawn with `seed`, each with its first match in context.

    `spans` is a `spans_frame`; `texts` maps its `doc` labels to the texts. The same seed and
    inputs always give the same rows.
    """
    rows = []
    for family in FAMILIES:
        first = spans[spans["family"] == family].drop_duplicates("doc", keep="first")
        if first.empty:
            continue
        chosen = first.sample(n=min(per_family, len(first)), random_state=seed).sort_values("doc")
        for row in chosen.itertuples(index=False):
            rows.append(
                {
                    "family": family,
                    "doc": row.doc,
                    "rule": row.rule,
                    "match": row.match,
                    "context": in_context(texts[row.doc], row.start, row.end, width),
                }
            )
    return pd.DataFrame(rows, columns=["family", "doc", "rule", "match", "context"])


def mathcamps_grade(standard: str) -> str:
    """'K.CC.A.1' -> 'K', '3.MD.D.8-polygon' -> '3' (the grade that opens a CCSS math code)."""
    return normalise_grade(str(standard).split(".", 1)[0])


def time_scoring(
    score: Callable[[str], object],
    texts: Mapping[str, str],
    repeats: int = 3,
    clock: Callable[[], float] = time.process_time,
) -> pd.DataFrame:
    """Best-of-`repeats` seconds `score(text)` takes for each named text, with the text's length.

    The default clock is this process's CPU time, so other work on a shared machine does not
    inflate the figures (pass `time.perf_counter` for wall time).
    """
    rows = []
    for name, text in texts.items():
        best = min(_seconds(score, text, clock) for _ in range(repeats))
        rows.append({"input": name, "chars": len(text), "seconds": best})
    return pd.DataFrame(rows)


def growth_exponent(chars: Sequence[float], seconds: Sequence[float]) -> float:
    """b in seconds ≈ a · chars^b, by least squares on log-log: about 1 for linear time, 2 for quadratic."""
    x, y = np.log(np.asarray(chars, dtype=float)), np.log(np.asarray(seconds, dtype=float))
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError("need timings at two or more different lengths")
    return float(np.polyfit(x, y, 1)[0])


def _seconds(score: Callable[[str], object], text: str, clock: Callable[[], float]) -> float:
    start = clock()
    score(text)
    return clock() - start
