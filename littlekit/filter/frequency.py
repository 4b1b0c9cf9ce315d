"""Stage 5, frequency sampling: documents holding words that lean Beyond-K-5.

The word table (`littlekit.filter.word_table`) scores each word by `log2(rate_beyond / rate_k5)`.
The paper and the released script use it differently, and both are here:

- The paper (Sec. 3.1.5, App. A.4): the filtered pool (~100B tokens) exceeds the training
  target (~80B), so the final *sampling* stage uses the rank-ordered blocklist to downsample
  candidate documents, preferring those without high-scoring terms over a uniform subsample.
  That is `sample_to_budget`: it fills a token budget from documents with no blocklisted word
  first, then from tiers of increasing worst score, only as far as the budget needs.
- The released `filter_k5.py`: a hard filter, dropping every document that holds any word with
  beyond_score >= 4.0, whatever the budget. That is `FrequencyStage` with `min_blocked_share=None`,
  reason "frequency_blocklist"; it is what `littlekit filter` runs as stage "frequency".

The released rule grows stricter with length: a 600-word article is six times as likely as a
100-word passage to hold one blocklisted word by chance (a month, a country, "solar"). With
`min_blocked_share` set, the stage drops a document only when blocklisted tokens make up at least
that share of its word tokens (0.01: one per hundred words), the same test at any length. The
artifacts' filter_config.json carries the share chosen on training labels
(`littlekit.fit.operating_point.choose_blocked_share`).

Scoring is one dict lookup per token. Words missing from the table are unscored and ignored.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from littlekit.argtypes import finite
from littlekit.config import data_path
from littlekit.filter import word_table as bl
from littlekit.filter.base import (
    Artifact,
    Decision,
    Option,
    Stage,
    StageSpec,
    check_finite,
    check_number,
    probability_or_released,
)
from littlekit.filter.file_checks import table_problem
from littlekit.text import word_tokens

REASON = "frequency_blocklist"
# The released layout keeps the table at data/word_log_odds.parquet; a data root pointing at
# that data/ folder (LITTLEKIT_DATA) is found without further configuration.
DEFAULT_TABLE = "word_log_odds.parquet"
MAX_LISTED = 5


class FrequencyStage(Stage):
    """Drop a document holding any word with beyond_score >= `min_beyond_score` (released rule), or,
    with `min_blocked_share`, one whose blocklisted tokens are at least that share of its tokens.

    `table` is a word table (DataFrame with `word, beyond_score`), a word -> score mapping, a
    path to a parquet/csv table, or None for `word_log_odds.parquet` under the data root.
    The scores keep `worst_score` (the document's highest word score, None when none of its
    words is in the table), so a notebook can sweep the cut-off with `decide` alone.
    """

    name = "frequency"

    def __init__(
        self,
        table: pd.DataFrame | Mapping[str, float] | str | os.PathLike | None = None,
        min_beyond_score: float = bl.MIN_BEYOND_SCORE,
        min_blocked_share: float | None = None,
    ) -> None:
        if min_blocked_share is not None and not 0.0 < min_blocked_share <= 1.0:
            raise ValueError(f"min_blocked_share must be in (0, 1] or None, got {min_blocked_share}")
        self.min_beyond_score = float(min_beyond_score)
        self.min_blocked_share = min_blocked_share
        self.scores_by_word = _as_lookup(table)

    @classmethod
    def from_pools(
        cls,
        k5_texts: Iterable[str],
        beyond_texts: Iterable[str],
        *,
        min_count: int = bl.DEFAULT_MIN_COUNT,
        alpha: float = bl.DEFAULT_ALPHA,
        min_beyond_score: float = bl.MIN_BEYOND_SCORE,
        min_documents: int = bl.DEFAULT_MIN_DOCUMENTS,
    ) -> FrequencyStage:
        """Build the word table from a K-5 and a Beyond-K-5 pool, then the stage on it."""
        table = bl.score_words(
            k5_texts, beyond_texts, min_count=min_count, alpha=alpha, min_documents=min_documents
        )
        return cls(table, min_beyond_score=min_beyond_score)

    @property
    def blocked(self) -> frozenset[str]:
        """The words this stage blocks at its cut-off."""
        return frozenset(w for w, s in self.scores_by_word.items() if s >= self.min_beyond_score)

    def score(self, text: str) -> dict[str, Any]:
        lookup = self.scores_by_word
        cut = self.min_beyond_score
        worst_word: str | None = None
        worst_score = -math.inf
        n_blocked_tokens = 0
        blocked: dict[str, float] = {}
        tokens = word_tokens(text)
        for token in tokens:
            score = lookup.get(token)
            if score is None:
                continue
            if worst_word is None or score > worst_score or (score == worst_score and token < worst_word):
                worst_word, worst_score = token, score
            if score >= cut:
                n_blocked_tokens += 1
                blocked[token] = score
        listed = sorted(blocked, key=lambda w: (-blocked[w], w))[:MAX_LISTED]
        return {
            "worst_word": worst_word,
            "worst_score": worst_score if worst_word is not None else None,
            "n_blocked_tokens": n_blocked_tokens,
            "blocked_share": n_blocked_tokens / len(tokens) if tokens else 0.0,
            "blocked_words": listed,
        }

    def decide(self, scores: dict[str, Any]) -> Decision:
        worst = scores.get("worst_score")
        if worst is None or worst < self.min_beyond_score:
            return Decision(True, None, scores)
        if self.min_blocked_share is not None and scores["blocked_share"] < self.min_blocked_share:
            return Decision(True, None, scores)
        return Decision(False, REASON, scores)


def _as_lookup(table: pd.DataFrame | Mapping[str, float] | str | os.PathLike | None) -> dict[str, float]:
    if table is None:
        table = data_path(DEFAULT_TABLE)
    if isinstance(table, str | os.PathLike):
        table = bl.load_word_scores(Path(table))
    if isinstance(table, pd.DataFrame):
        return bl.score_lookup(table)
    return {str(w): float(s) for w, s in table.items() if not math.isnan(float(s))}


# ---------------------------------------------------------------------------------------------
# The paper's mode: sample to a token budget, preferring documents without high-scoring words.


@dataclass(frozen=True)
class Tier:
    """What one worst-score tier held and what the sampler took from it."""

    tier: int
    label: str  # "clean", "[lo, hi)" or ">= lo"
    n_docs: int
    tokens: int
    n_taken: int
    tokens_taken: int


@dataclass
class BudgetSample:
    """The sampler's result: selected ids in selection order, and the per-tier account."""

    ids: list[Any]
    budget_tokens: int
    tokens: int
    seed: int
    tiers: list[Tier] = field(default_factory=list)

    def report(self) -> pd.DataFrame:
        """One row per tier: documents and tokens available and taken."""
        return pd.DataFrame([t.__dict__ for t in self.tiers])


def default_tier_edges(min_beyond_score: float = bl.MIN_BEYOND_SCORE) -> tuple[float, ...]:
    """Clean below the cut-off, then [t, t+1), [t+1, t+2), [t+2, t+4), [t+4, inf]."""
    t = min_beyond_score
    return (t, t + 1.0, t + 2.0, t + 4.0)


def sample_to_budget(
    docs: Iterable[tuple[Any, str]] | pd.DataFrame,
    scores: FrequencyStage | pd.DataFrame | Mapping[str, float] | str | os.PathLike,
    budget_tokens: int,
    seed: int = 0,
    *,
    tier_edges: Iterable[float] | None = None,
    within_tier: str = "random",
    count_tokens: Callable[[str], int] | None = None,
    id_col: str = "id",
    text_col: str = "text",
) -> BudgetSample:
    """Select documents up to `budget_tokens`, clean documents first.

    Tiers by the document's worst word score: tier 0 ("clean") holds documents whose worst
    score is below `tier_edges[0]` (default: the stage's cut-off, 4.0) or that have no scored
    word; tier i >= 1 holds worst scores in [edges[i-1], edges[i]), the last tier is open.
    Tiers are used in order, a later one only while budget remains. Within a tier the order
    is a seeded random permutation (`within_tier="random"`, the default: a uniform sample of
    the tier, not skewed toward the plainest documents) or ascending worst score
    (`"ascending"`, ties in input order). A document that would overshoot the budget is
    skipped and smaller ones after it may still fit, so the total never exceeds the budget.
    Documents without tokens add nothing and are never selected (they count in `n_docs`).

    Document length is `count_tokens(text)` (default: the filter's word tokens), or the
    DataFrame's `n_tokens` column when it has one. Same input, seed and options give the
    same ids in the same order.
    """
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must be >= 0, got {budget_tokens}")
    if within_tier not in {"random", "ascending"}:
        raise ValueError(f"within_tier must be 'random' or 'ascending', got {within_tier!r}")
    stage = scores if isinstance(scores, FrequencyStage) else FrequencyStage(scores)
    edges = tuple(tier_edges) if tier_edges is not None else default_tier_edges(stage.min_beyond_score)
    if not edges or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"tier_edges must be non-empty and strictly increasing, got {edges}")

    n_tiers = len(edges) + 1
    members: list[list[tuple[Any, int, float]]] = [[] for _ in range(n_tiers)]
    for doc_id, text, n_tokens in _iter_docs(docs, count_tokens, id_col, text_col):
        worst = stage.score(text)["worst_score"]
        worst = -math.inf if worst is None else worst
        members[bisect.bisect_right(edges, worst)].append((doc_id, n_tokens, worst))

    rng = np.random.default_rng(seed)
    remaining = int(budget_tokens)
    ids: list[Any] = []
    tiers: list[Tier] = []
    for index, tier_docs in enumerate(members):
        if within_tier == "random":
            ordered = [tier_docs[i] for i in rng.permutation(len(tier_docs))]
        else:
            ordered = sorted(tier_docs, key=lambda d: d[2])  # stable: ties keep input order
        n_taken = tokens_taken = 0
        for doc_id, n_tokens, _ in ordered:
            if remaining <= 0:
                break
            if 0 < n_tokens <= remaining:
                ids.append(doc_id)
                remaining -= n_tokens
                n_taken += 1
                tokens_taken += n_tokens
        tiers.append(Tier(
            tier=index,
            label=_tier_label(index, edges),
            n_docs=len(tier_docs),
            tokens=sum(d[1] for d in tier_docs),
            n_taken=n_taken,
            tokens_taken=tokens_taken,
        ))
    return BudgetSample(ids, int(budget_tokens), int(budget_tokens) - remaining, seed, tiers)


def _tier_label(index: int, edges: tuple[float, ...]) -> str:
    if index == 0:
        return "clean"
    if index == len(edges):
        return f">= {edges[-1]:g}"
    return f"[{edges[index - 1]:g}, {edges[index]:g})"


def _iter_docs(
    docs: Iterable[tuple[Any, str]] | pd.DataFrame,
    count_tokens: Callable[[str], int] | None,
    id_col: str,
    text_col: str,
) -> Iterable[tuple[Any, str, int]]:
    counter = count_tokens or (lambda text: len(word_tokens(text)))
    if isinstance(docs, pd.DataFrame):
        missing = [c for c in (id_col, text_col) if c not in docs.columns]
        if missing:
            raise ValueError(f"docs lack column(s) {missing} (found {list(docs.columns)})")
        ids, texts = docs[id_col].tolist(), docs[text_col].tolist()
        use_given = "n_tokens" in docs.columns and count_tokens is None
        lengths = docs["n_tokens"].tolist() if use_given else [None] * len(ids)
        for doc_id, text, n_tokens in zip(ids, texts, lengths, strict=True):
            text = text if isinstance(text, str) else ""  # missing text (None/NaN) is empty
            yield doc_id, text, int(n_tokens) if use_given else counter(text)
        return
    for doc_id, text in docs:
        text = text if isinstance(text, str) else ""
        yield doc_id, text, counter(text)


# --- the stage's declaration (littlekit.filter.base.StageSpec) -----------------------------------


def _build(options: Any) -> FrequencyStage:
    return FrequencyStage(
        options.word_table,
        min_beyond_score=options.min_beyond_score,
        min_blocked_share=options.min_blocked_share,
    )


def _blocked_share(name: str, value: Any) -> float | None:
    if value is not None and not 0.0 < check_number(name, value) <= 1.0:
        raise ValueError(f"min_blocked_share must be in (0, 1] or None, got {value}")
    return None if value is None else float(value)


def _outcome_keeps(frame: Any, kept: np.ndarray, thresholds: Mapping[str, Any]) -> np.ndarray:
    """At a minimum share, a passage the any-word rule dropped with a smaller share of blocklisted
    tokens passes (the run must be at the released any-word rule)."""
    share = thresholds.get("min_blocked_share")
    if share is None:
        return kept
    if "frequency_blocked_share" not in frame.columns:
        raise KeyError("outcomes lack frequency_blocked_share: run the cascade with cascade_outcomes")
    below = frame["frequency_blocked_share"].astype(float).to_numpy() < share
    return kept | (frame["reason"].eq(REASON).to_numpy() & below)


def _outcome_columns(scores: Mapping[str, Any]) -> dict[str, float]:
    share = scores.get("blocked_share")
    return {"frequency_blocked_share": math.nan if share is None else float(share)}


def _describe(thresholds: Mapping[str, Any], details: Mapping[str, Any]) -> str:
    share = thresholds.get("min_blocked_share")
    return "" if share is None else f"frequency: blocklisted tokens < {share:g} of the words"


SPEC = StageSpec(
    name="frequency",
    position=5,
    label="Frequency",
    description="stage 5: blocklisted words (beyond_score >= min_beyond_score) below a share",
    build=_build,
    options=(
        Option(
            "word_table",
            None,
            "frequency stage: word, beyond_score table (word_log_odds.parquet)",
            parse=Path,
            metavar="PATH",
            path=True,
        ),
        Option(
            "min_beyond_score",
            bl.MIN_BEYOND_SCORE,
            "frequency stage cut-off (default: {default})",
            parse=finite,
            metavar="SCORE",
            check=check_finite,
        ),
        Option(
            "min_blocked_share",
            None,
            "frequency stage: drop only when blocklisted tokens are at least SHARE of the words; "
            "'released' = any blocklisted word drops (default: --artifacts DIR's filter_config.json, "
            "else released)",
            parse=probability_or_released,
            metavar="SHARE",
            check=_blocked_share,
            threshold=True,
        ),
    ),
    artifacts=(
        Artifact(
            "word_table",
            "data/word_log_odds.parquet",
            "frequency",
            "word table, columns word, beyond_score = log2(rate_beyond / rate_k5)",
            "`littlekit fit word-table --data DATA --out DIR`, or littlekit.filter.artifacts."
            "export_word_table(littlekit.filter.word_table.score_words(...), DIR)",
            lambda path: table_problem(path, {"word": "string", "beyond_score": "numeric"}),
        ),
    ),
    outcome_columns=_outcome_columns,
    outcome_keeps=_outcome_keeps,
    out_of_corpus=False,  # its word table comes from pools of every corpus
    loosens=True,  # a share lets through documents the any-word rule drops
    describe=_describe,
)
