"""Leave one corpus out: does the classifiers' operating point hold on a kind of text they never saw?

Source-grouped folds (`littlekit.fit.operating_point`) hold out unseen books, authors and
textbooks, but every fold still trains on every corpus of the labels, so a held-out CLEAR author
is scored by a model that has read hundreds of other CLEAR excerpts. Here each corpus is held out
whole instead:

1. `label_corpora` gives every label its corpus: its `source`, named by `CORPUS_NAMES` where a
   source needs a reader's name (or several sources form one corpus); any other source is its
   own corpus, so corpora added to the labels later (new `source-label:...` sources) enter as
   they come.
2. `leave_one_corpus_out_fasttext` trains fastText (a `FastTextRecipe`'s hyper-parameters) on
   every corpus but one and scores the held-out corpus, once per corpus, with
   `out_of_fold_fasttext` (one corpus per fold), and adds stage 1's verdict and its 95th-percentile
   AoA so a point's stage-1 maximum can be applied, as `tune_fasttext`'s out-of-fold frame does.
   `leave_one_corpus_out_encoder` does the same for stage 3 (`out_of_fold_encoder`, one top per
   held-out corpus on frozen states with the default recipe).
3. `corpus_check` applies an operating point to those scores and gives, per held-out corpus, the
   K-5 and Beyond-K-5 keep shares with Wilson intervals and whether the targets hold: at least
   `min_k5` of the K-5 labels of every corpus holding K-5 labels, at most `max_beyond` of the
   Beyond-K-5 labels of every corpus holding Beyond-K-5 labels.

A corpus with a single band (TinyStories: all K5; OpenStax: all OOS) tests one side only, and a
held-out corpus can take a band out of training with it (without OpenStax no label is OOS), which
is part of what "a kind of text never seen" means.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from littlekit.filter.filter_config import OperatingPoint
from littlekit.filter.registry import stage_specs
from littlekit.fit.labels import JUDGE_PREFIX, REWRITE_PREFIX, SOURCE_PREFIX, training_only
from littlekit.fit.operating_point import _stage, out_of_fold_encoder, out_of_fold_fasttext
from littlekit.fit.thresholds import MIN_KIND_BEYOND, TARGET_MIN_K5, rates_of
from littlekit.stats import wilson_interval
from littlekit.text import shingles

# The one place a label's source is mapped to its corpus. A source not named here is its own
# corpus, called by its name without "source-label:".
CORPUS_NAMES: dict[str, str] = {
    SOURCE_PREFIX + "clear": "CLEAR",
    SOURCE_PREFIX + "gutenberg": "CCSS exemplar books",
    SOURCE_PREFIX + "openstax": "OpenStax",
    SOURCE_PREFIX + "tinystories": "TinyStories",
    SOURCE_PREFIX + "mathcamps": "MathCAMPS",
    SOURCE_PREFIX + "gsm8k": "GSM8K",
    SOURCE_PREFIX + "onestopenglish": "OneStopEnglish",
    SOURCE_PREFIX + "informational": "informational books",
    SOURCE_PREFIX + "arc": "ARC",
    SOURCE_PREFIX + "commoncoretext": "CommonCoreText-PD train",
    # the LLM judge's label groups (`littlekit.fit.labels.JUDGE_GROUPS`)
    JUDGE_PREFIX + "web": "web",
    JUDGE_PREFIX + "simplewiki": "Simple Wikipedia",
    JUDGE_PREFIX + "informational": "informational books",
    JUDGE_PREFIX + "kids:storyweaver": "StoryWeaver",
    JUDGE_PREFIX + "kids:africanstorybook": "African Storybook",
    JUDGE_PREFIX + "kids:bookdash": "Book Dash",
    JUDGE_PREFIX + "kids:gdl": "Global Digital Library",
    JUDGE_PREFIX + "kids:letsread": "Let's Read",
}
# The targets a held-out corpus is checked against: chapter 7's K-5 acceptance target, and the
# issue's ceiling on Beyond-K-5 text kept from a corpus no model saw (the in-distribution
# acceptance ceiling, `littlekit.fit.thresholds.TARGET_MAX_BEYOND`, is 3% too).
MIN_K5_KEPT = TARGET_MIN_K5
MAX_BEYOND_KEPT = 0.03
POPULATIONS = ("all", "first_stage")


def corpus_of(source: str) -> str:
    """The corpus a label source belongs to (a rewrite's is its original's)."""
    source = str(source)
    if source.startswith(REWRITE_PREFIX):
        source = JUDGE_PREFIX + source.removeprefix(REWRITE_PREFIX)
    return CORPUS_NAMES.get(source, source.removeprefix(SOURCE_PREFIX).removeprefix(JUDGE_PREFIX))


def label_corpora(labels: pd.DataFrame) -> pd.Series:
    """The corpus of each label (index aligned with `labels`), from its `source`."""
    return labels["source"].map(corpus_of).rename("corpus")


# --- out-of-corpus scores -----------------------------------------------------------------------


def leave_one_corpus_out_fasttext(
    labels: pd.DataFrame,
    recipe: Any,
    corpora: Sequence[str] | None = None,
    first_stage: Any | None = "aoa",
    overlap: bool = True,
) -> pd.DataFrame:
    """Every label scored by a fastText model trained on the labels of every other corpus.

    `recipe`: a `littlekit.fit.recipe_fasttext.FastTextRecipe` (its `hyper()` and seed). `corpora`: a
    corpus per label (default `label_corpora(labels)`). `first_stage`: "aoa" (the registry's AoA
    stage), a Stage, or None (no stage 1). Returns one row per label but the training-only ones (the
    rewrites), in `labels`' order: id, source, band, corpus, fold (one per corpus: the model that
    scored the row was trained on the rows of the other folds), pred, p_k5 (that model's top band
    and P(K5)), first_stage_keeps, aoa_p95 (stage 1's score, NaN without one) and, with
    `overlap`, shares_text_with_training (the label shares its text or an 8-word sequence with a
    label of another corpus, i.e. with its model's training data).
    """
    labels = labels.reset_index(drop=True)
    corpora = label_corpora(labels) if corpora is None else pd.Series(list(corpora), name="corpus")
    if len(corpora) != len(labels):
        raise ValueError(f"corpora ({len(corpora)}) must match labels ({len(labels)})")
    names = sorted(set(corpora))
    if len(names) < 2:
        raise ValueError(f"leaving one corpus out needs at least two corpora, the labels hold {names}")
    hyper = {name: value for name, value in recipe.hyper().items() if name != "seed"}
    # with as many folds as groups, grouped_folds gives every corpus a fold of its own
    processes = getattr(recipe, "processes", 1)
    scores = out_of_fold_fasttext(
        labels, list(corpora), n_folds=len(names), seed=recipe.seed, processes=processes, **hyper
    )
    scores = scores.rename(columns={"group": "corpus"})
    folds_of = scores.groupby("corpus")["fold"].nunique()
    if folds_of.ne(1).any() or scores["fold"].nunique() != len(names):
        raise AssertionError("every corpus must fall whole into a fold of its own")
    keeps, aoa_p95 = first_stage_scores(labels, first_stage)
    scores["first_stage_keeps"] = keeps
    scores["aoa_p95"] = aoa_p95
    if overlap:
        scores["shares_text_with_training"] = shares_text_across(labels["text"], corpora)
    # the rewrites trained the models of the other corpora; no figure is measured on them
    return scores[~training_only(scores["source"])].reset_index(drop=True)


def first_stage_scores(
    labels: pd.DataFrame, first_stage: Any | None = "aoa"
) -> tuple[np.ndarray, np.ndarray]:
    """(whether stage 1 keeps each label, its 95th-percentile AoA or NaN), as `tune_fasttext` has
    them; without a stage every label passes."""
    if first_stage is None:
        return np.ones(len(labels), dtype=bool), np.full(len(labels), np.nan)
    stage = _stage(first_stage)
    decisions = [stage(text) for text in labels["text"]]
    p95 = [d.scores.get("p95_aoa") for d in decisions]
    return (
        np.array([d.keep for d in decisions], dtype=bool),
        np.array([np.nan if v is None else float(v) for v in p95], dtype=float),
    )


def shares_text_across(texts: Sequence[str], corpora: Sequence[str]) -> np.ndarray:
    """Per text: whether it shares itself or an 8-word sequence (`littlekit.text.shingles`) with a text of
    another corpus."""
    corpora = list(corpora)
    owner: dict[int, Any] = {}  # shingle hash -> its corpus, or None when several corpora hold it
    per_text = []
    for text, corpus in zip(texts, corpora, strict=True):
        keys = {hash(s) for s in shingles(text)} | {hash(("<text>", " ".join(str(text).lower().split())))}
        per_text.append(keys)
        for key in keys:
            if owner.setdefault(key, corpus) != corpus:
                owner[key] = None
    return np.array([any(owner[key] is None for key in keys) for keys in per_text], dtype=bool)


def leave_one_corpus_out_encoder(
    scores: pd.DataFrame,
    labels: pd.DataFrame,
    recipe: Any,
    start: Any,
    train_config: Any,
    score: Sequence[bool] | None = None,
) -> pd.DataFrame:
    """`leave_one_corpus_out_fasttext`'s frame with stage 3's out-of-corpus scores added.

    One encoder per held-out corpus, trained as `tune_encoder_points` trains one per fold
    (`out_of_fold_encoder` with the frame's `fold` column, so the folds are the corpora): `recipe`
    an `EncoderRecipe`, `start` its `encoder_start` (with `FrozenStates`, one top per corpus on
    cached states), `train_config` its `encoder_train_config`. `score`: the rows to score (default
    all). Adds enc_pred and enc_p_k5 (None and NaN where not scored). With `recipe.grade_head`
    these are stage 3's grade head's, cross-fitted by corpus too (each corpus scored by a head
    fitted on the other corpora's out-of-corpus encoder scores), and enc_model_pred and
    enc_model_p_k5 hold the encoder's own.
    """
    texts = labels.drop_duplicates("id").set_index("id")["text"]
    frame = scores.reset_index(drop=True).assign(text=lambda f: f["id"].map(texts))
    if frame["text"].isna().any():
        raise KeyError("some scored ids have no label text")
    encoded = out_of_fold_encoder(
        frame,
        frame["fold"],
        score=score,
        train_sample_size=recipe.train_sample_size,
        dev_size=recipe.dev_size,
        config=train_config,
        vocab_size=recipe.vocab_size,
        start_from=recipe.encoder_model,
        seed=recipe.seed,
        frozen=start.frozen,
    )
    if getattr(recipe, "grade_head", False):
        from littlekit.filter.grade_head import stack_on_encoder

        encoded = stack_on_encoder(encoded, frame["text"], frame["band"].eq("K5"), frame["fold"]).scores
    return pd.concat([frame.drop(columns="text"), encoded], axis=1)


# --- the check ----------------------------------------------------------------------------------


def stage_thresholds(
    point: OperatingPoint | Mapping[str, float | None] | None,
) -> OperatingPoint:
    """A point as an OperatingPoint: a mapping of threshold options (`fasttext_min_k5_prob`,
    `encoder_min_k5_prob`, `max_aoa`, any registered stage's; missing or None: the released
    rule), or None (the released rules). KeyError names an option no stage declares."""
    if isinstance(point, OperatingPoint):
        return point
    try:
        return OperatingPoint(**dict(point or {}))
    except ValueError as error:
        raise KeyError(f"unknown thresholds: {error}") from error


def add_stage_scores(scores: pd.DataFrame, labels: pd.DataFrame, stage: Any) -> pd.DataFrame:
    """`scores` with the columns a stage's rule on stored scores reads (`StageSpec.store`; a stage
    without its own: `<name>_keeps`, its verdict), from a built stage (or a registered name) run on
    each row's label text. A stage that learns nothing from labels (stage 4) gives as
    out-of-corpus a verdict on a held-out corpus as stage 1; one whose declaration says
    `out_of_corpus=False` (stage 5: its word table comes from pools of every corpus) does not:
    say so where it is shown."""
    stage = _stage(stage)
    spec = stage_specs()[stage.name]
    texts = labels.drop_duplicates("id").set_index("id")["text"]
    rows = []
    for text in scores["id"].map(texts):
        values = stage.score(text)
        rows.append(spec.stored(values, stage.decide(values)))
    stored = pd.DataFrame(rows, index=scores.index)
    return scores.assign(**{column: stored[column] for column in stored.columns})


def default_stages(scores: pd.DataFrame) -> tuple[str, ...]:
    """The registered stages whose stored scores the frame holds (aoa and fasttext, encoder when it
    has enc_pred, symbolic when it has symbolic_keeps, ...), in cascade order, leaving out the
    stages whose verdict on a held-out corpus is not out of corpus (stage 5)."""
    return tuple(
        name
        for name, spec in stage_specs().items()
        if spec.out_of_corpus and all(column in scores.columns for column in spec.columns)
    )


def first_stage_mask(scores: pd.DataFrame, max_aoa: float | None = None) -> np.ndarray:
    """Whether stage 1 keeps each row: its verdict, and aoa_p95 <= max_aoa when that is set."""
    return stage_specs()["aoa"].keeps(scores, {"max_aoa": max_aoa})


def corpus_keeps(
    scores: pd.DataFrame,
    point: OperatingPoint | Mapping[str, float | None] | None = None,
    stages: Sequence[str] | None = None,
) -> np.ndarray:
    """Whether the stages (default `default_stages`) keep each row at the point's thresholds: each
    stage's own rule on stored scores (`StageSpec.keeps`) at the thresholds the point gives it."""
    point = stage_thresholds(point)
    stages = tuple(default_stages(scores) if stages is None else stages)
    specs = stage_specs()
    unknown = set(stages) - set(specs)
    if unknown:
        raise ValueError(f"unknown stages {sorted(unknown)}; registered: {', '.join(specs)}")
    keep = np.ones(len(scores), dtype=bool)
    for name in stages:
        keep &= specs[name].keeps(scores, point.for_stage(name))
    return keep


@dataclass
class CorpusCheck:
    """`corpus_check`'s answer: one row per held-out corpus and whether the targets hold."""

    table: pd.DataFrame
    min_k5: float
    max_beyond: float
    stages: tuple[str, ...]
    population: str
    confidence: float

    @property
    def failures(self) -> list[str]:
        """One line per target a corpus misses."""
        lines = []
        for corpus, row in self.table.iterrows():
            if _missed(row["k5_holds"]):
                lines.append(f"{corpus}: keeps {row['k5_share']:.1%} of its K-5 labels (< {self.min_k5:.0%})")
            if _missed(row["beyond_holds"]):
                share, ceiling = row["beyond_share"], self.max_beyond
                lines.append(f"{corpus}: keeps {share:.1%} of its Beyond-K-5 labels (> {ceiling:.0%})")
        return lines

    @property
    def holds(self) -> bool:
        """Whether every K-5-bearing corpus meets min_k5 and every Beyond-bearing one max_beyond."""
        return not self.failures

    def verdict(self) -> str:
        """A sentence saying whether the targets hold on every held-out corpus, and where not."""
        targets = (
            f"at least {self.min_k5:.0%} of every held-out corpus's K-5 labels kept and at most "
            f"{self.max_beyond:.0%} of its Beyond-K-5 labels"
        )
        if self.holds:
            return f"The targets hold on every held-out corpus ({targets})."
        return f"The targets ({targets}) do not hold: " + "; ".join(self.failures) + "."


def _missed(holds: Any) -> bool:
    return holds is not None and not pd.isna(holds) and not bool(holds)


def corpus_check(
    scores: pd.DataFrame,
    point: OperatingPoint | Mapping[str, float | None] | None = None,
    stages: Sequence[str] | None = None,
    min_k5: float = MIN_K5_KEPT,
    max_beyond: float = MAX_BEYOND_KEPT,
    population: str = "all",
    confidence: float = 0.95,
) -> CorpusCheck:
    """Per held-out corpus of out-of-corpus `scores`: how many K-5 and Beyond-K-5 labels it holds,
    the share of each the stages keep at `point` (a `littlekit.filter.filter_config.OperatingPoint`,
    a mapping of thresholds, or None: the released rules) with `confidence` Wilson intervals, and
    whether the targets hold (point estimates: K-5 share >= `min_k5` where the corpus holds K-5
    labels, Beyond-K-5 share <= `max_beyond` where it holds Beyond-K-5 labels; None where it holds
    none).

    `population`: "all" (every label of the corpus; one stage 1 drops counts as dropped, so the
    shares are what stages 1-2 (-3) retain) or "first_stage" (only the labels stage 1 keeps, the
    population the operating point is chosen on).
    """
    if population not in POPULATIONS:
        raise ValueError(f"population must be one of {POPULATIONS}, got {population!r}")
    stages = tuple(default_stages(scores) if stages is None else stages)
    keep = corpus_keeps(scores, point, stages)
    rows_in = np.ones(len(scores), dtype=bool)
    if population == "first_stage":
        rows_in = first_stage_mask(scores, stage_thresholds(point).max_aoa)
    corpora = scores["corpus"].to_numpy(dtype=object)
    rows = {}
    for corpus in sorted(set(corpora)):
        mask = (corpora == corpus) & rows_in
        rates = rates_of(scores[mask], keep[mask])
        row: dict[str, Any] = {}
        for side, n, kept in (("k5", "n_k5", "k5_kept"), ("beyond", "n_beyond", "beyond_kept")):
            row[n] = rates[n]
            row[kept] = rates[kept]
            share = rates[kept] / rates[n] if rates[n] else math.nan
            low, high = (
                wilson_interval(rates[kept], rates[n], confidence) if rates[n] else (math.nan, math.nan)
            )
            row.update({f"{side}_share": share, f"{side}_low": low, f"{side}_high": high})
        row["k5_holds"] = bool(row["k5_share"] >= min_k5) if row["n_k5"] else None
        row["beyond_holds"] = bool(row["beyond_share"] <= max_beyond) if row["n_beyond"] else None
        rows[corpus] = row
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("held-out corpus")
    table[["k5_holds", "beyond_holds"]] = table[["k5_holds", "beyond_holds"]].astype(object)
    return CorpusCheck(table, min_k5, max_beyond, stages, population, confidence)


def check_display(check: CorpusCheck) -> pd.DataFrame:
    """A corpus check as a reader's table: counts, shares with their intervals, and the verdicts."""

    def share(row: pd.Series, side: str) -> str:
        if not row[f"n_{side}"]:
            return "—"
        return f"{row[f'{side}_share']:.1%} [{row[f'{side}_low']:.1%}, {row[f'{side}_high']:.1%}]"

    def mark(value: Any) -> str:
        return "—" if value is None or pd.isna(value) else ("yes" if value else "NO")

    table = check.table
    interval = f"{check.confidence:.0%} Wilson"
    return pd.DataFrame(
        {
            "n K-5": table["n_k5"].astype(int),
            f"K-5 kept [{interval}]": [share(r, "k5") for _, r in table.iterrows()],
            f"K-5 >= {check.min_k5:.0%}": table["k5_holds"].map(mark),
            "n Beyond": table["n_beyond"].astype(int),
            f"Beyond kept [{interval}]": [share(r, "beyond") for _, r in table.iterrows()],
            f"Beyond <= {check.max_beyond:.0%}": table["beyond_holds"].map(mark),
        },
        index=table.index,
    )


def side_by_side(checks: Mapping[str, CorpusCheck]) -> pd.DataFrame:
    """Corpus checks of several label sets (or stage lists) in one table: a row per held-out corpus
    of any of them, the K-5 and Beyond-K-5 shares kept under each name (NaN where a set has no such
    corpus or labels), with the counts they rest on."""
    parts = {
        name: check.table[["n_k5", "k5_share", "n_beyond", "beyond_share"]].rename(
            columns={
                "n_k5": "n K-5", "k5_share": "K-5 kept", "n_beyond": "n Beyond", "beyond_share": "Beyond kept"
            }
        )
        for name, check in checks.items()
    }
    return pd.concat(parts, axis=1).sort_index()


def side_by_side_display(table: pd.DataFrame) -> pd.DataFrame:
    """`side_by_side`'s table for a reader: shares as percentages, counts as whole numbers, a dash
    where a label set has no such corpus or band."""

    def cell(value: Any, share: bool) -> str:
        if pd.isna(value):
            return "—"
        return f"{value:.1%}" if share else f"{int(value):,}"

    shown = table.astype(object).copy()
    for column in table.columns:
        share = str(column[-1]).endswith("kept")
        shown[column] = [cell(v, share) for v in table[column]]
    return shown


# --- the check as a rule for choosing a point ---------------------------------------------------


def loco_holds(
    scores: pd.DataFrame,
    corpora: Sequence[str],
    max_beyond: float = MAX_BEYOND_KEPT,
    stages: Sequence[str] | None = None,
    min_rows: int = MIN_KIND_BEYOND,
):
    """A test for `littlekit.fit.operating_point.choose_joint(also_meets=...)`: does a candidate
    point (a sweep row with max_aoa, fasttext_min_k5_prob, encoder_min_k5_prob) keep at most
    `max_beyond` of the Beyond-K-5 labels of each of `corpora`, each held out of the models that
    scored it (`scores`: leave-one-corpus-out scores)? Corpora outside `corpora` (e.g. MathCAMPS,
    whose held-out problems no other corpus teaches the classifiers to grade) are not tested, nor
    corpora with fewer than `min_rows` Beyond-K-5 labels (too few for a rate)."""
    beyond = (scores["band"] != "K5").to_numpy()
    masks = [m for m in ((scores["corpus"] == c).to_numpy() & beyond for c in corpora) if m.sum() >= min_rows]

    def holds(row: pd.Series) -> bool:
        point = {
            name: None if pd.isna(row[name]) else float(row[name])
            for name in ("fasttext_min_k5_prob", "encoder_min_k5_prob", "max_aoa")
        }
        keep = corpus_keeps(scores, point, stages)
        return all(keep[mask].mean() <= max_beyond for mask in masks)

    return holds


def loco_rule(corpora: Sequence[str], max_beyond: float = MAX_BEYOND_KEPT) -> str:
    """The words for `loco_holds` in a point's rule."""
    return (
        f"with each corpus left out of the models that score it, at most {max_beyond:g} of the Beyond-K-5 "
        f"labels of {', '.join(corpora)} kept"
    )


# --- the point on the training labels, out of fold ----------------------------------------------


def out_of_fold_cascade(
    fasttext_oof: pd.DataFrame,
    encoder_oof: pd.DataFrame,
    labels: pd.DataFrame,
    point: OperatingPoint | Mapping[str, float | None] | None,
) -> pd.DataFrame:
    """Whether stages 1-4 keep each training label at `point` with both classifiers' scores out of
    fold (stage 2's `oof_scores.parquet`, every label; stage 3's, the labels its point was measured
    on). A label stage 1 drops is dropped; one stage 1 keeps but stage 3 never scored out of fold
    (a source the point is not measured on) is left out. Returns id, source, corpus, band and
    `kept`, one row per label scored."""
    scores = fasttext_oof.drop(columns=["enc_pred", "enc_p_k5"], errors="ignore").merge(
        encoder_oof[["id", "enc_pred", "enc_p_k5"]], on="id", how="left"
    )
    scored = ~scores["first_stage_keeps"].astype(bool) | scores["enc_pred"].notna()
    scores = add_stage_scores(scores[scored].reset_index(drop=True), labels, "symbolic")
    keep = corpus_keeps(scores, point, ("aoa", "fasttext", "encoder", "symbolic"))
    corpus = labels.drop_duplicates("id").set_index("id")["corpus"]
    return scores[["id", "source", "band"]].assign(corpus=scores["id"].map(corpus).to_numpy(), kept=keep)


def kept_precision(frame: pd.DataFrame, by: str = "corpus") -> pd.DataFrame:
    """Per value of `by`: labels, K-5 labels, how many are kept, how many of those are K-5, and the
    precision (K-5 share of what is kept, with a 95% Wilson interval). `frame` has band and kept."""
    rows = {}
    for value, group in frame.groupby(by, sort=True):
        kept = group["kept"].astype(bool)
        n_kept, k5_kept = int(kept.sum()), int((kept & group["band"].eq("K5")).sum())
        low, high = wilson_interval(k5_kept, n_kept) if n_kept else (math.nan, math.nan)
        rows[value] = {
            "labels": len(group),
            "K5 labels": int(group["band"].eq("K5").sum()),
            "kept": n_kept,
            "K5 kept": k5_kept,
            "precision": k5_kept / n_kept if n_kept else math.nan,
            "precision_low": low,
            "precision_high": high,
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(by)


# --- ranking ------------------------------------------------------------------------------------

# The scores `loco_ranking` compares: stage 2's P(K5), stage 3's, and both together as the sum of
# their log-odds (a label both rank high ranks highest; the cascade's thresholds keep such labels)
RANKED_SCORES = {"fastText": ("p_k5",), "stage 3": ("enc_p_k5",), "stages 2+3": ("p_k5", "enc_p_k5")}


def ranking_auc(is_k5: Sequence[bool], score: Sequence[float]) -> float:
    """The area under the ROC curve of ranking K-5 labels above Beyond-K-5 ones (ties count half):
    the chance a random K-5 label outscores a random Beyond-K-5 one. NaN when a side is empty."""
    is_k5 = np.asarray(is_k5, dtype=bool)
    n_k5, n_beyond = int(is_k5.sum()), int((~is_k5).sum())
    if not n_k5 or not n_beyond:
        return math.nan
    ranks = pd.Series(np.asarray(score, dtype=float)).rank(method="average").to_numpy()
    return float((ranks[is_k5].sum() - n_k5 * (n_k5 + 1) / 2) / (n_k5 * n_beyond))


def _log_odds(p: pd.Series) -> np.ndarray:
    clipped = np.clip(p.astype(float).to_numpy(), 1e-6, 1 - 1e-6)
    return np.log(clipped / (1 - clipped))


def loco_ranking(loco: pd.DataFrame) -> pd.DataFrame:
    """Per held-out corpus holding both K-5 and Beyond-K-5 labels, and pooled over all of them: the
    ranking AUC of each of `RANKED_SCORES` on leave-one-corpus-out scores (every label scored by
    models that never saw its corpus), with the label counts. Rows with a score missing (stage 3
    unscored) are left out of every column, so the three are compared on the same labels. When
    stage 3 has a grade head (enc_model_p_k5 holds the encoder's own P(K5)), an "encoder alone"
    column is added."""
    frame = loco.dropna(subset=["p_k5", "enc_p_k5"]).reset_index(drop=True)
    ranked = dict(RANKED_SCORES)
    if "enc_model_p_k5" in frame.columns:  # stage 3 has a grade head: show the encoder it stacks on too
        ranked["encoder alone"] = ("enc_model_p_k5",)
    combined = {name: sum(_log_odds(frame[c]) for c in columns) for name, columns in ranked.items()}
    return ranking_table(frame, combined)


def ranking_table(frame: pd.DataFrame, scores: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """`ranking_auc` of each score (aligned with `frame`, which has band and corpus), pooled and per
    corpus holding both K-5 and Beyond-K-5 rows, with the row counts."""
    is_k5 = frame["band"].eq("K5").to_numpy()
    rows = {}
    for corpus in ["pooled", *sorted(frame["corpus"].unique())]:
        rows_of = np.ones(len(frame), bool) if corpus == "pooled" else frame["corpus"].eq(corpus).to_numpy()
        k5 = is_k5[rows_of]
        if k5.all() or not k5.any():
            continue
        rows[corpus] = {
            "K-5 labels": int(k5.sum()),
            "Beyond-K-5 labels": int((~k5).sum()),
            **{name: ranking_auc(k5, np.asarray(score)[rows_of]) for name, score in scores.items()},
        }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("held-out corpus")
