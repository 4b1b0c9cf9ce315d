"""Stage 4 as a filter stage, and the ways to list what it matches (`match_all`, `match_spans`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from littlekit.filter.base import Decision, Option, Stage, StageSpec
from littlekit.filter.symbolic.engine import characters_of
from littlekit.filter.symbolic.rules import FAMILIES, MAX_MATCH_CHARS, _rules_for


def _clip(matched: str) -> str:
    return matched[:MAX_MATCH_CHARS]


def first_match(text: str, families: Iterable[str] | None = None) -> tuple[str, str] | None:
    """(family, matched text) of the first rule, in table order, that matches; None when clean."""
    chars = characters_of(text)
    for rule in _rules_for(families):
        for matched in rule.finditer(text, chars):
            return rule.family, _clip(matched)
    return None


def match_all(text: str, families: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Every match per family (all requested families are keys; clean families map to [])."""
    rules = _rules_for(families)
    found: dict[str, list[str]] = {rule.family: [] for rule in rules}
    chars = characters_of(text)
    for rule in rules:
        found[rule.family].extend(_clip(matched) for matched in rule.finditer(text, chars))
    return found


@dataclass(frozen=True)
class Span:
    """One match in a text: the rule's family and name, offsets [start, end), the matched text."""

    family: str
    rule: str
    start: int
    end: int
    text: str


def match_spans(text: str, families: Iterable[str] | None = None) -> list[Span]:
    """Every match with its offsets, rule by rule in table order, each rule's in text order.

    The first span is the stage's verdict (`score`'s family and, clipped, its match); notebooks
    use the offsets to show a match in its context.
    """
    chars = characters_of(text)
    return [
        Span(rule.family, rule.name, found.start(), found.end(), found.group(0))
        for rule in _rules_for(families)
        for found in rule.matches(text, chars)
    ]


class SymbolicStage(Stage):
    """Drop a document on any match of a Beyond-K-5 notation pattern (released filter stage 4)."""

    name = "symbolic"

    def __init__(self, families: Iterable[str] | None = None):
        self.families = tuple(FAMILIES if families is None else families)
        self.rules = _rules_for(self.families)

    def score(self, text: str) -> dict[str, Any]:
        """family: first family matched (FAMILIES order) or None; match: the matched text or None."""
        chars = characters_of(text)
        for rule in self.rules:
            for matched in rule.finditer(text, chars):
                return {"family": rule.family, "match": _clip(matched)}
        return {"family": None, "match": None}

    def decide(self, scores: dict[str, Any]) -> Decision:
        family = scores["family"]
        if family is None:
            return Decision(keep=True, scores=scores)
        return Decision(keep=False, reason=f"symbolic_{family}", scores=scores)


# --- the stage's declaration (littlekit.filter.base.StageSpec) -----------------------------------


def _families(name: str, given: str | Iterable[str]) -> tuple[str, ...]:
    """A tuple of family names whatever it came as (a list read back from JSON, "equations,roots")."""
    names = [part.strip() for part in given.split(",")] if isinstance(given, str) else [*given]
    names = [family for family in names if family]
    unknown = [family for family in names if family not in FAMILIES]
    if unknown or not names:
        raise ValueError(f"symbolic_families must name at least one of {', '.join(FAMILIES)}; got {given!r}")
    return tuple(names)


SPEC = StageSpec(
    name="symbolic",
    position=4,
    label="Symbolic",
    description="stage 4: no exponents, roots, logs, trigonometry, algebra or chemistry",
    build=lambda options: SymbolicStage(options.symbolic_families),
    options=(
        Option(
            "symbolic_families",
            None,
            f"symbolic stage: comma-separated notation families to check, of {','.join(FAMILIES)} "
            "(default: all of them)",
            metavar="LIST",
            check=_families,
        ),
    ),
)
