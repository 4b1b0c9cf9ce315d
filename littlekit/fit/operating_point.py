"""A precision-first operating point for the classifier stages, chosen on training sources only.

"Score, then threshold": the released filter keeps a document when a classifier's top band is K5.
The paper's design is precision-first (it would rather lose K-5 text than let Beyond-K-5 text in),
so littlekit can also require P(K5) >= a minimum (`FastTextStage(min_k5_prob=...)`,
`EncoderStage(min_k5_prob=...)`). This module chooses that minimum without ever looking at the
CommonCoreText-PD validation sources:

1. `label_groups` gives every training label the source unit it came from (a Gutenberg author,
   a CLEAR author, an OpenStax book, a MathCAMPS standard; one group per TinyStories story and per
   label of unknown origin), the same units the validation split keeps whole.
2. `grouped_folds` deals the groups into k folds, so a held-out fold holds only unseen sources,
   as the validation split does.
3. `out_of_fold_fasttext` trains fastText on k-1 folds and scores the held-out one, giving each
   labelled document an out-of-fold P(K5) from a model that never saw its source.
4. `choose_min_k5_prob` picks the smallest threshold whose out-of-fold Beyond-K-5 keep rate is
   at most a target (say 1%), and reports the K-5 keep rate it costs.

By default the rates are measured on the labelled documents that pass stage 1 (the AoA stage),
because in the cascade stage 2 only ever sees those; `tune_fasttext` says which population it used.

The chosen point is stored beside the artifacts as `filter_config.json` (`OperatingPoint.save`),
which `littlekit.filter.artifacts.stage_options_from_artifacts` reads, so
`littlekit filter --stages all --artifacts DIR` applies it; without the file the released rules
apply. `apply_operating_point` re-derives a cascade's verdicts under stricter thresholds from the
probabilities a released-rule run stored, without scoring anything again.
"""

from __future__ import annotations

import math
import os
import random
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from littlekit.filter.cascade import DROPPED, KEPT
from littlekit.filter.filter_config import (
    CLASSIFIER_STAGES,
    OperatingPoint,
)
from littlekit.grades import BANDS

DEFAULT_TARGET = 0.01
DEFAULT_FOLDS = 5
# The label sources that are CommonCoreText-PD's own kinds of text (its train split and CLEAR's
# training author groups): the benchmark's train side, where its validation side is checked.
COMMONCORETEXT_SOURCES = ("source-label:clear", "source-label:gutenberg", "source-label:openstax")
# The label sources whose rates choose a point by default: CommonCoreText-PD's kinds of text and the
# graded_informational school books (K-5 exposition, which no other source holds enough of).
# TinyStories (all K5, trivially kept), MathCAMPS (one-sentence math problems, stage 4's business)
# and ARC (question stems of 10-20 words) train the classifiers but do not set the point.
GRADED_SOURCES = (*COMMONCORETEXT_SOURCES, "source-label:informational")
TUNING_SOURCES = {"graded": GRADED_SOURCES, "commoncoretext": COMMONCORETEXT_SOURCES, "all": None}
# "judge": every LLM-judge-labelled source (the item-graded ARC and MathCAMPS train but do not set
# the point); "auto": "judge" when the labels hold judge labels, else "graded"
TUNING_CHOICES = (*TUNING_SOURCES, "judge", "auto")
JUDGE_PREFIX = "llm-judge:"
# source labels that set the point beside the judge's: passages graded by their text, as the judge grades
TUNED_WITH_JUDGE = ("source-label:commoncoretext",)
DEFAULT_MIN_PRECISION = 0.9
MIN_KIND_BEYOND = 10  # a kind's own Beyond-K-5 rate is tested only with at least this many rows
INFORMATIONAL_PREFIX = "gi-"  # ids of graded_informational passages (littlekit.databuild.informational)
STEP = 0.001  # thresholds are rounded up to this grid, so the file holds readable numbers


# --- source groups and folds --------------------------------------------------------------------


def tuning_sources(tune_on: str, labels: pd.DataFrame) -> tuple[str, ...] | None:
    """The label sources whose rates set a point (`TUNING_CHOICES`; None: every source)."""
    if tune_on not in TUNING_CHOICES:
        raise ValueError(f"tune_on must be one of {', '.join(TUNING_CHOICES)}, got {tune_on!r}")
    sources = set(labels["source"])
    judged = {s for s in sources if str(s).startswith(JUDGE_PREFIX)}
    if tune_on == "auto":
        tune_on = "judge" if judged else "graded"
    if tune_on == "judge":
        if not judged:
            raise ValueError("tune_on='judge' but the labels hold no LLM-judge labels")
        return tuple(sorted(judged | (sources & set(TUNED_WITH_JUDGE))))
    return TUNING_SOURCES[tune_on]


def label_groups(labels: pd.DataFrame, root: str | os.PathLike | None = None) -> pd.Series:
    """The source unit of each label (index aligned with `labels`), for source-grouped folds.

    CommonCoreText-PD passages take their `split_group` (the unit the train/validation split keeps
    whole: a Gutenberg or CLEAR author, an OpenStax book); other CLEAR excerpts their author group
    (same rule); MathCAMPS problems their CCSS standard; a label with a `group` of its own (judge
    labels: a web site, a children's book) that group; anything else (TinyStories stories) is its
    own group.
    """
    from littlekit.databuild import corpora
    from littlekit.databuild.passages import author_key

    passages = corpora.load_commoncoretext(root)
    by_id = dict(zip(passages["id"], passages["split_group"], strict=True))
    ids = labels["id"].astype(str)
    clear_ids = ids[ids.str.startswith("clear-") & ~ids.isin(by_id)]
    if len(clear_ids):
        clear = corpora.load_clear(root)
        authors = dict(zip("clear-" + clear["id"].astype(int).astype(str), clear["author"], strict=True))
        by_id.update({i: "author:" + author_key(authors.get(i) or "") for i in clear_ids})
    if ids.str.startswith(INFORMATIONAL_PREFIX).any():
        books = corpora.load_graded_informational(root)
        by_id.update(zip(books["id"], "informational:" + books["split_group"], strict=True))
    given = labels["group"] if "group" in labels.columns else pd.Series(None, index=labels.index)
    return pd.Series(
        [
            g if isinstance(g, str) and g else by_id.get(i) or _own_group(i)
            for i, g in zip(ids, given, strict=True)
        ],
        index=labels.index,
        name="group",
    )


def _own_group(label_id: str) -> str:
    if label_id.startswith("mathcamps-"):
        # mathcamps-<standard>-<problem>-<variant>, e.g. mathcamps-4.NF.A.2-0-0
        return "mathcamps:" + label_id.removeprefix("mathcamps-").rsplit("-", 2)[0]
    return "doc:" + label_id


def grouped_folds(
    groups: Sequence[str], bands: Sequence[str], n_folds: int = DEFAULT_FOLDS, seed: int = 0
) -> np.ndarray:
    """A fold number (0..n_folds-1) per document; every group falls whole into one fold.

    Groups are dealt largest first (ties in a seeded order) to the fold holding the fewest
    documents of the group's most common band, then the fewest documents, so each band spreads
    over the folds as evenly as whole groups allow.
    """
    if n_folds < 2:
        raise ValueError(f"n_folds must be at least 2, got {n_folds}")
    frame = pd.DataFrame({"group": list(groups), "band": list(bands)})
    if frame["group"].nunique() < n_folds:
        raise ValueError(f"{frame['group'].nunique()} groups cannot fill {n_folds} folds")
    sizes = frame.groupby("group").size()
    main_band = frame.groupby("group")["band"].agg(lambda b: b.value_counts().index[0])
    order = sorted(sizes.index)
    random.Random(f"{seed}:folds").shuffle(order)
    order.sort(key=lambda g: -sizes[g])  # stable: equal sizes stay in the seeded order
    per_band = {band: [0] * n_folds for band in frame["band"].unique()}
    totals = [0] * n_folds
    fold_of: dict[str, int] = {}
    for group in order:
        band = main_band[group]
        fold = min(range(n_folds), key=lambda f: (per_band[band][f], totals[f], f))
        fold_of[group] = fold
        per_band[band][fold] += int(sizes[group])
        totals[fold] += int(sizes[group])
    return frame["group"].map(fold_of).to_numpy()


# --- out-of-fold scores and the threshold -------------------------------------------------------


def out_of_fold_fasttext(
    labels: pd.DataFrame,
    groups: Sequence[str],
    n_folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    **hyper: Any,
) -> pd.DataFrame:
    """Each labelled document scored by a fastText model trained without its fold's sources.

    Returns `labels`' id, source and band with `group`, `fold`, `pred` (top band) and `p_k5`.
    `hyper` goes to `train_fasttext` (its defaults otherwise).
    """
    from littlekit.fit.fasttext import train_fasttext

    folds = grouped_folds(groups, labels["band"], n_folds, seed)
    out = labels[["id", "source", "band"]].reset_index(drop=True).assign(group=list(groups), fold=folds)
    pred = np.empty(len(out), dtype=object)
    p_k5 = np.full(len(out), np.nan)
    texts = labels["text"].reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        for fold in range(n_folds):
            held = folds == fold
            train = labels.reset_index(drop=True)[~held]
            stage = train_fasttext(train, Path(tmp) / f"fold{fold}.bin", **{"seed": seed, **hyper})
            scores = stage.score_batch(texts[held].tolist())
            pred[held] = [s["band"] for s in scores]
            p_k5[held] = [s["probs"].get("K5", 0.0) for s in scores]
    return out.assign(pred=pred, p_k5=p_k5)


def kept_at(pred: Sequence[str], p_k5: Sequence[float], min_k5_prob: float | None) -> np.ndarray:
    """The keep rule on stored scores: top band K5, and P(K5) >= min_k5_prob when it is set."""
    keep = np.asarray(pred, dtype=object) == "K5"
    if min_k5_prob is not None:
        keep &= np.asarray(p_k5, dtype=float) >= min_k5_prob
    return keep


def keep_rates(frame: pd.DataFrame, min_k5_prob: float | None) -> dict[str, float]:
    """K-5 and Beyond-K-5 keep rates (and counts) of a frame with band, pred, p_k5 at a threshold."""
    return rates_of(frame, kept_at(frame["pred"], frame["p_k5"], min_k5_prob))


def rates_of(frame: pd.DataFrame, keep: Sequence[bool]) -> dict[str, float]:
    """K-5 and Beyond-K-5 keep rates (and counts) of a frame with band, for a keep mask."""
    keep = np.asarray(keep, dtype=bool)
    k5 = (frame["band"] == "K5").to_numpy()
    return {
        "n_k5": int(k5.sum()),
        "n_beyond": int((~k5).sum()),
        "k5_kept": int(keep[k5].sum()),
        "beyond_kept": int(keep[~k5].sum()),
        "k5_keep_rate": float(keep[k5].mean()) if k5.any() else math.nan,
        "beyond_keep_rate": float(keep[~k5].mean()) if (~k5).any() else math.nan,
    }


def allowed_beyond(n_beyond: int, target: float, confidence: float | None = None) -> int:
    """How many of `n_beyond` Beyond-K-5 rows a point may keep and still meet `target`.

    Without `confidence`: floor(target * n_beyond), the point estimate at most `target`. With it
    (say 0.95): the largest count whose Wilson interval at that confidence ends at or below
    `target`, so the keep rate is within the target even allowing for the sampling error of the
    out-of-fold estimate (a precision-first margin that shrinks as the sample grows). -1 when even
    keeping none cannot show it (too few rows).
    """
    if not 0.0 <= target < 1.0:
        raise ValueError(f"target must be a fraction in [0, 1), got {target}")
    if n_beyond < 1:
        raise ValueError("no Beyond-K-5 rows to measure the keep rate on")
    allowed = math.floor(target * n_beyond + 1e-9)
    if confidence is None:
        return allowed
    from littlekit.stats import wilson_interval

    while allowed >= 0 and wilson_interval(allowed, n_beyond, confidence)[1] > target + 1e-12:
        allowed -= 1
    return allowed


def choose_min_k5_prob(
    frame: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    step: float = STEP,
    confidence: float | None = None,
    later_keeps: Sequence[bool] | None = None,
    kinds: Sequence[str] | None = None,
    precision_rows: Sequence[bool] | None = None,
    min_precision: float | None = None,
) -> float | None:
    """The smallest P(K5) minimum (on a `step` grid) keeping at most `target` of the Beyond-K-5 rows.

    `frame` has band, pred (top band) and p_k5. `confidence`: meet the target with that confidence
    (`allowed_beyond`). `later_keeps`: whether a later stage keeps each row (the rate is then that
    of both stages together). `kinds`: a kind of text per row (e.g. its label source); the
    Beyond-K-5 keep rate of every kind must then also be at most `target` (point estimate), so a
    kind that leaks cannot hide behind a larger kind that does not. `precision_rows` and
    `min_precision`: of the rows of `precision_rows` kept, at least `min_precision` must be K-5
    at this minimum and every stricter one (`_threshold_precise`): where K-5 text is rare (web
    text), a small Beyond-K-5 keep rate can still leave the kept text mostly Beyond-K-5.
    None when the released rule
    (top band K5) already meets the target. The result may still miss the target when Beyond-K-5
    rows reach P(K5) = 1; when even keeping no Beyond-K-5 row cannot show the target
    (`allowed_beyond` < 0), every one of them is dropped.
    """
    beyond_rows = (frame["band"] != "K5").to_numpy()
    candidates = beyond_rows & (frame["pred"] == "K5").to_numpy()
    if later_keeps is not None:
        candidates &= np.asarray(later_keeps, dtype=bool)
    p_k5 = frame["p_k5"].astype(float).to_numpy()
    allowed = max(allowed_beyond(int(beyond_rows.sum()), target, confidence), 0)
    thresholds = [_threshold_keeping(p_k5[candidates], allowed, step)]
    if kinds is not None:
        kinds = np.asarray(kinds, dtype=object)
        for kind in testable_kinds(kinds, beyond_rows):
            of_kind = kinds == kind
            allowed_here = allowed_beyond(int((beyond_rows & of_kind).sum()), target)
            thresholds.append(_threshold_keeping(p_k5[candidates & of_kind], allowed_here, step))
    if precision_rows is not None and min_precision is not None:
        open_rows = (frame["pred"] == "K5").to_numpy() & np.asarray(precision_rows, dtype=bool)
        if later_keeps is not None:
            open_rows &= np.asarray(later_keeps, dtype=bool)
        thresholds.append(_threshold_precise(p_k5[open_rows], ~beyond_rows[open_rows], min_precision, step))
    chosen = [t for t in thresholds if t is not None]
    return max(chosen) if chosen else None


def testable_kinds(kinds: np.ndarray, beyond_rows: np.ndarray, min_rows: int | None = None) -> list:
    """The kinds holding at least `min_rows` Beyond-K-5 rows (default MIN_KIND_BEYOND): a kind of
    three Beyond-K-5 labels says nothing about a rate of 2% (one kept label is 33%), yet would veto
    every point that keeps one of them."""
    needed = MIN_KIND_BEYOND if min_rows is None else min_rows
    counts = pd.Series(np.asarray(kinds, dtype=object)[np.asarray(beyond_rows, dtype=bool)]).value_counts()
    return [kind for kind, n in counts.items() if n >= needed]


def _threshold_precise(
    p_k5: np.ndarray, is_k5: np.ndarray, min_precision: float, step: float
) -> float | None:
    """The smallest grid minimum at which, and at every stricter one, at least `min_precision` of
    the rows kept (P(K5) >= minimum) are K-5 (keeping none counts as precise); None when every
    minimum is precise already. Requiring it of every stricter minimum too keeps the choice off a
    lucky dip in a noisy curve."""
    if not 0.0 < min_precision <= 1.0:
        raise ValueError(f"min_precision must be in (0, 1], got {min_precision}")
    grid = np.round(np.arange(0.0, 1.0 + step / 2, step), 10)
    p_k5 = np.asarray(p_k5, dtype=float)
    is_k5 = np.asarray(is_k5, dtype=bool)
    kept = len(p_k5) - np.searchsorted(np.sort(p_k5), grid, side="left")
    kept_k5 = int(is_k5.sum()) - np.searchsorted(np.sort(p_k5[is_k5]), grid, side="left")
    precise = (kept == 0) | (kept_k5 >= min_precision * kept - 1e-9)
    if precise.all():
        return None
    last_imprecise = int(np.flatnonzero(~precise).max())
    return round(min(grid[min(last_imprecise + 1, len(grid) - 1)], 1.0), 10)


def precision_of(frame: pd.DataFrame, keep: Sequence[bool], rows: Sequence[bool]) -> dict[str, float]:
    """Of `rows` kept: how many, how many are K-5, and that share (NaN when none is kept)."""
    kept = np.asarray(keep, dtype=bool) & np.asarray(rows, dtype=bool)
    k5 = (frame["band"] == "K5").to_numpy()
    n, n_k5 = int(kept.sum()), int((kept & k5).sum())
    return {"precise_kept": n, "precise_k5_kept": n_k5, "precision": n_k5 / n if n else math.nan}


def _threshold_keeping(beyond: np.ndarray, allowed: int, step: float) -> float | None:
    """The smallest grid minimum keeping at most `allowed` of these Beyond-K-5 P(K5) values."""
    if len(beyond) <= allowed:
        return None
    # drop every Beyond-K-5 row at or below the (allowed+1)-th highest P(K5): the threshold is the
    # first grid point strictly above it
    worst = np.sort(beyond)[::-1][allowed]
    threshold = (math.floor(worst / step + 1e-9) + 1) * step
    return round(min(threshold, 1.0), 10)


def threshold_sweep(frame: pd.DataFrame, thresholds: Sequence[float | None]) -> pd.DataFrame:
    """keep_rates at each threshold (None = the released rule), one row each."""
    rows = [{"min_k5_prob": t, **keep_rates(frame, t)} for t in thresholds]
    return pd.DataFrame(rows)


def rates_by_source(frame: pd.DataFrame, min_k5_prob: float | None) -> pd.DataFrame:
    """Keep rate per label source and band at a threshold (where the leaks come from)."""
    keep = kept_at(frame["pred"], frame["p_k5"], min_k5_prob)
    table = (
        frame.assign(kept=keep).groupby(["band", "source"], observed=True)["kept"].agg(n="size", kept="sum")
    )
    table["keep_rate"] = table["kept"] / table["n"]
    return table.reindex([b for b in BANDS if b in table.index.get_level_values(0)], level=0)


@dataclass
class Tuning:
    """What `tune_fasttext` found: the point, the out-of-fold scores and the rates around it."""

    point: OperatingPoint
    oof: pd.DataFrame  # out_of_fold_fasttext's frame + first_stage_keeps, eligible (rates measured on)
    released: dict[str, float]  # keep rates under the released rule, same population
    chosen: dict[str, float]  # keep rates at the chosen threshold


def tune_fasttext(
    labels: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    n_folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    groups: Sequence[str] | None = None,
    first_stage: Any | None = "aoa",
    measure_sources: Collection[str] | None = None,
    root: str | os.PathLike | None = None,
    confidence: float | None = None,
    precision_sources: Collection[str] | None = None,
    min_precision: float | None = None,
    **hyper: Any,
) -> Tuning:
    """Choose fastText's min_k5_prob by source-grouped cross-validation on the training labels.

    Every label is scored out of fold (`out_of_fold_fasttext`); the keep rates that choose the
    threshold are measured on the labels that `first_stage` keeps ("aoa" = the registry's default
    AoA stage, or a Stage; None = no stage) and, when `measure_sources` is given, whose `source`
    is one of them (e.g. COMMONCORETEXT_SOURCES). `groups`: source groups (default
    `label_groups(labels, root)`). `confidence`: meet the target with that confidence
    (`allowed_beyond`; None: the point estimate). `precision_sources`, `min_precision`: of the
    measured labels from those sources kept, at least that share must be K-5 (`choose_min_k5_prob`).
    The details also hold the rates on every label `first_stage`
    keeps, whatever its source, so a restriction's effect is visible.
    """
    labels = labels.reset_index(drop=True)
    groups = list(label_groups(labels, root) if groups is None else groups)
    oof = out_of_fold_fasttext(labels, groups, n_folds, seed, **hyper)
    if first_stage is None:
        passes = np.ones(len(labels), dtype=bool)
        population = "all training labels"
    else:
        stage = _stage(first_stage)
        decisions = [stage(text) for text in labels["text"]]
        passes = np.array([d.keep for d in decisions])
        if all("p95_aoa" in d.scores for d in decisions):  # stage 1's score, for a stricter max_aoa
            oof["aoa_p95"] = [float(d.scores["p95_aoa"]) for d in decisions]
        population = f"the training labels stage '{stage.name}' keeps"
    measured = passes.copy()
    if measure_sources is not None:
        measured &= labels["source"].isin(set(measure_sources)).to_numpy()
        population += f" from {', '.join(sorted(measure_sources))}"
    population += f" ({int(measured.sum()):,} of {len(labels):,})"
    oof["first_stage_keeps"] = passes
    oof["eligible"] = measured
    pool = oof[oof["eligible"]]
    precise = _precision_rows(pool, precision_sources, min_precision)
    threshold = choose_min_k5_prob(
        pool, target, confidence=confidence, precision_rows=precise, min_precision=min_precision
    )
    released, chosen = keep_rates(pool, None), keep_rates(pool, threshold)
    every_source = oof[oof["first_stage_keeps"]]
    details = {
        "method": f"source-grouped {n_folds}-fold cross-validation of fastText (seed {seed})",
        "rule": _rule(target, confidence, "fastText's minimum P(K5)"),
        "confidence": confidence,
        "allowed_beyond": max(allowed_beyond(released["n_beyond"], target, confidence), 0),
        "population": population,
        "n_groups": len(set(groups)),
        "oof_released": released,
        "oof_chosen": chosen,
        "oof_released_every_source": keep_rates(every_source, None),
        "oof_chosen_every_source": keep_rates(every_source, threshold),
    }
    if precise is not None:
        details["min_precision"] = {"sources": sorted(precision_sources), "min": min_precision}
        kept = kept_at(pool["pred"], pool["p_k5"], threshold)
        details["oof_chosen_precision"] = precision_of(pool, kept, precise)
    point = OperatingPoint(
        fasttext_min_k5_prob=threshold,
        encoder_min_k5_prob=None,
        chosen_on=f"out-of-fold fastText P(K5) on {population}, never on validation sources",
        target=target,
        details=details,
    )
    return Tuning(point, oof, released, chosen)


def _precision_rows(
    pool: pd.DataFrame, sources: Collection[str] | None, min_precision: float | None
) -> np.ndarray | None:
    """The rows whose kept share must be K-5 (those from `sources`), or None without the rule."""
    if min_precision is None or not sources:
        return None
    return pool["source"].isin(set(sources)).to_numpy()


def _rule(target: float, confidence: float | None, what: str) -> str:
    bound = (
        "its out-of-fold Beyond-K-5 keep rate"
        if confidence is None
        else f"the upper end of the {confidence:.0%} Wilson interval of its out-of-fold Beyond-K-5 keep rate"
    )
    return (
        f"{what}: the choice keeping the most K-5 labels out of fold such that {bound} is at most {target:g}"
    )


# --- stages 2 and 3 together --------------------------------------------------------------------

# Encoder minimums tried beside the released rule (argmax K5, which already implies P(K5) > 0.25).
ENCODER_GRID: tuple[float, ...] = tuple(round(0.30 + 0.01 * i, 2) for i in range(70))


def out_of_fold_encoder(
    labels: pd.DataFrame,
    folds: Sequence[int],
    score: Sequence[bool] | None = None,
    train_sample_size: int = 1200,
    dev_size: int = 200,
    config: Any | None = None,
    vocab_size: int = 8000,
    start_from: str | os.PathLike | None = None,
    seed: int = 0,
    frozen: Any | None = None,
) -> pd.DataFrame:
    """Each labelled document (where `score` holds) scored by an encoder that never saw its fold.

    Per fold, stage 3's training recipe on the other folds' labels: a stratified sample of at most
    `train_sample_size` to train on, up to `dev_size` of the rest to pick the best epoch, then
    either (`frozen` given, an `encoder_train.FrozenStates` of a pretrained BERT) `train_top` on
    its frozen states, or a tiny ModernBERT and WordPiece tokenizer built on their texts (or
    `start_from`, a model directory to fine-tune) and `fine_tune`, with `config` (an
    EncoderTrainConfig). Returns a frame aligned with `labels` with `enc_pred` (top band; None
    where not scored) and `enc_p_k5` (NaN there).
    """
    from littlekit.filter.encoder import LABELS, EncoderStage
    from littlekit.fit.encoder import (
        EncoderTrainConfig,
        build_tiny_modernbert,
        fine_tune,
        top_probs,
        train_top,
    )

    config = config or EncoderTrainConfig(seed=seed)
    labels = labels.reset_index(drop=True)
    folds = np.asarray(folds)
    wanted = np.ones(len(labels), dtype=bool) if score is None else np.asarray(score, dtype=bool)
    if len(folds) != len(labels) or len(wanted) != len(labels):
        raise ValueError(f"folds ({len(folds)}) and score ({len(wanted)}) must match labels ({len(labels)})")
    pred = np.full(len(labels), None, dtype=object)
    p_k5 = np.full(len(labels), np.nan)
    with tempfile.TemporaryDirectory(prefix="oof-encoder-") as tmp:
        for fold in sorted(set(folds[wanted].tolist())):
            train_all = labels[folds != fold]
            share = min(1.0, train_sample_size / len(train_all))
            train = train_all.groupby("band").sample(frac=share, random_state=seed)
            rest = train_all.drop(index=train.index)
            dev = (
                rest.groupby("band").sample(frac=min(1.0, dev_size / len(rest)), random_state=seed)
                if len(rest)
                else None
            )
            held = np.flatnonzero((folds == fold) & wanted)
            texts = labels.loc[held, "text"].tolist()
            if frozen is not None:
                _, top = train_top(frozen, train.reset_index(drop=True), dev, None, config)
                probs = top_probs(top, frozen, texts)
                pred[held] = [LABELS[i] for i in probs.argmax(axis=1)]
                p_k5[held] = probs[:, LABELS.index("K5")]
                continue
            start = start_from
            if start is None:
                start = build_tiny_modernbert(
                    train_all["text"], Path(tmp) / f"init{fold}", vocab_size=vocab_size, seed=seed
                )
            model_dir = Path(tmp) / f"fold{fold}"
            fine_tune(start, train.reset_index(drop=True), dev, model_dir, config)
            stage = EncoderStage(model_dir, max_length=config.max_length, device=config.device)
            scores = stage.score_batch(texts)
            pred[held] = [s["band"] for s in scores]
            p_k5[held] = [s["probs"]["K5"] if s["probs"] else np.nan for s in scores]
    return pd.DataFrame({"enc_pred": pred, "enc_p_k5": p_k5}, index=labels.index)


def joint_sweep(
    frame: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    confidence: float | None = None,
    encoder_grid: Sequence[float] = ENCODER_GRID,
    step: float = STEP,
    aoa_grid: Sequence[float | None] = (None,),
    kinds: Sequence[str] | None = None,
    precision_rows: Sequence[bool] | None = None,
    min_precision: float | None = None,
) -> pd.DataFrame:
    """For each stage-1 maximum in `aoa_grid` (None = the stage's own) and each encoder minimum
    (None = its released rule, then `encoder_grid`), the smallest fastText minimum meeting the
    target for stages 1-3 together, and the rates the triple gives.

    `frame` has band, pred and p_k5 (fastText, out of fold), enc_pred and enc_p_k5 (encoder, out of
    fold), and `aoa_p95` when `aoa_grid` holds a number. `kinds`: see `choose_min_k5_prob` (every
    kind's rate must meet the target too; column `kinds_meet` says whether it does).
    `precision_rows`, `min_precision`: see `choose_min_k5_prob` (columns `precise_kept`,
    `precise_k5_kept`, `precision` give the result). For fixed
    stage-1 and encoder settings both rates fall as fastText's minimum rises, so the smallest one
    meeting the target keeps the most K-5 rows for them. The encoder's agreement gate needs no
    modelling here: rows that pass stage 1 have AoA band K5, so every row fastText keeps (band K5)
    opens it.
    """
    if any(a is not None for a in aoa_grid) and "aoa_p95" not in frame.columns:
        raise KeyError("a stage-1 grid needs the aoa_p95 column (tune_fasttext adds it)")
    # each kind's Beyond-K-5 rows and how many of them the target lets through (point estimate)
    kind_limits = []
    if kinds is not None:
        kinds = np.asarray(kinds, dtype=object)
        beyond_rows = (frame["band"] != "K5").to_numpy()
        for kind in testable_kinds(kinds, beyond_rows):
            rows_of_kind = beyond_rows & (kinds == kind)
            kind_limits.append((rows_of_kind, allowed_beyond(int(rows_of_kind.sum()), target)))
    rows = []
    for max_aoa in aoa_grid:
        first_keep = np.ones(len(frame), dtype=bool)
        if max_aoa is not None:
            first_keep = frame["aoa_p95"].astype(float).to_numpy() <= max_aoa
        for enc_min in [None, *encoder_grid]:
            later = kept_at(frame["enc_pred"], frame["enc_p_k5"], enc_min) & first_keep
            ft_min = choose_min_k5_prob(
                frame, target, step, confidence, later_keeps=later, kinds=kinds,
                precision_rows=precision_rows, min_precision=min_precision,
            )
            keep = kept_at(frame["pred"], frame["p_k5"], ft_min) & later
            row = {"max_aoa": max_aoa, "fasttext_min_k5_prob": ft_min, "encoder_min_k5_prob": enc_min}
            row.update(rates_of(frame, keep))
            if precision_rows is not None:
                row.update(precision_of(frame, keep, precision_rows))
            if kinds is not None:
                row["kinds_meet"] = all(int(keep[m].sum()) <= limit for m, limit in kind_limits)
            rows.append(row)
    return pd.DataFrame(rows)


def kind_rates(frame: pd.DataFrame, keep: Sequence[bool], kinds: Sequence[str]) -> pd.DataFrame:
    """K-5 and Beyond-K-5 keep rates (and counts) per kind of text, one row per kind."""
    keep = np.asarray(keep, dtype=bool)
    kinds = np.asarray(kinds, dtype=object)
    table = {kind: rates_of(frame[kinds == kind], keep[kinds == kind]) for kind in sorted(set(kinds))}
    return pd.DataFrame(table).T


def best_joint(
    sweep: pd.DataFrame, allowed: int, also_meets: Callable[[pd.Series], bool] | None = None
) -> pd.Series:
    """The sweep row keeping the most K-5 rows among those keeping at most `allowed` Beyond-K-5 rows
    (and, when the sweep has `kinds_meet`, meeting the target in every kind, and `also_meets(row)`
    when given); ties: fewer Beyond-K-5 rows, then the earlier row, i.e. the laxer stage-1 and
    encoder settings. When none meets the target, the row keeping the fewest Beyond-K-5 rows; when
    rows meet it but none `also_meets`, the best of them (`also_met` False says so)."""
    meets = sweep[sweep["beyond_kept"] <= allowed]
    if "kinds_meet" in sweep.columns:
        meets = meets[meets["kinds_meet"].astype(bool)]
    if meets.empty:
        return sweep.loc[sweep["beyond_kept"].idxmin()]
    order = meets.assign(_row=np.arange(len(meets))).sort_values(
        ["k5_kept", "beyond_kept", "_row"], ascending=[False, True, True], kind="stable"
    )
    if also_meets is None:
        return order.iloc[0].drop("_row")
    for _, row in order.iterrows():  # best first: usually only a few rows are tried
        if also_meets(row):
            return pd.concat([row.drop("_row"), pd.Series({"also_met": True})])
    return pd.concat([order.iloc[0].drop("_row"), pd.Series({"also_met": False})])


@dataclass
class JointTuning:
    """What `tune_joint` found: the point, the out-of-fold scores, the sweep and rates around it."""

    point: OperatingPoint
    oof: pd.DataFrame  # the fastText out-of-fold frame (eligible rows) + enc_pred, enc_p_k5
    sweep: pd.DataFrame  # joint_sweep over the encoder grid
    released: dict[str, float]  # both stages at their released rules
    fasttext_only: dict[str, float]  # the encoder at its released rule, fastText's minimum chosen alone
    chosen: dict[str, float]


def tune_joint(
    fasttext_oof: pd.DataFrame,
    labels: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    confidence: float | None = None,
    encoder_grid: Sequence[float] = ENCODER_GRID,
    every_kind: bool = False,
    aoa_grid: Sequence[float | None] = (None,),
    precision: Mapping[str, Any] | None = None,
    **encoder: Any,
) -> JointTuning:
    """Choose fastText's and the encoder's minimum P(K5) together, by source-grouped cross-validation.

    `fasttext_oof` is `tune_fasttext`'s `oof` frame (stage 2's `oof_scores.parquet`: id, band,
    fold, pred, p_k5, eligible); `labels` gives each id its text. The encoder is fine-tuned once per
    fold on the other folds (`out_of_fold_encoder`, `encoder` keywords go there) and scores the
    eligible rows of its fold, so both scores of a row come from models that never saw its source.
    The point keeps the most K-5 rows of stages 2-3 among the pairs meeting the target;
    `every_kind`, `aoa_grid` and `precision` (`precision_sources`, `min_precision`) as in `choose_joint`.
    """
    missing = {"id", "band", "fold", "pred", "p_k5", "eligible"} - set(fasttext_oof.columns)
    if missing:
        raise KeyError(f"the fastText out-of-fold frame lacks {sorted(missing)}")
    texts = labels.drop_duplicates("id").set_index("id")["text"]
    unknown = set(fasttext_oof["id"]) - set(texts.index)
    if unknown:
        raise KeyError(f"{len(unknown)} out-of-fold ids have no label text, e.g. {sorted(unknown)[:3]}")
    frame = fasttext_oof.reset_index(drop=True).assign(text=lambda f: f["id"].map(texts))
    scored = out_of_fold_encoder(frame, frame["fold"], score=frame["eligible"], **encoder)
    pool = pd.concat([frame, scored], axis=1)[lambda f: f["eligible"].astype(bool)].drop(columns="text")
    return choose_joint(
        pool.reset_index(drop=True),
        target,
        confidence,
        encoder_grid,
        every_kind,
        aoa_grid,
        **(precision or {}),
    )


def choose_joint(
    pool: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    confidence: float | None = None,
    encoder_grid: Sequence[float] = ENCODER_GRID,
    every_kind: bool = False,
    aoa_grid: Sequence[float | None] = (None,),
    also_meets: Callable[[pd.Series], bool] | None = None,
    also_rule: str = "",
    precision_sources: Collection[str] | None = None,
    min_precision: float | None = None,
) -> JointTuning:
    """The point for stages (1-)2-3 from out-of-fold scores (`tune_joint`'s `oof`, or any frame with
    band, source, fold, pred, p_k5, enc_pred, enc_p_k5 and, for `aoa_grid`, aoa_p95).

    The rule: the most K-5 rows kept such that the Beyond-K-5 keep rate meets `target` (its Wilson
    upper end at `confidence`, when given). `every_kind`: the rate of every label source must also
    be at most `target`, so one kind of text (say Gutenberg novels, a small share of the labels)
    cannot leak behind a large kind that does not. `aoa_grid`: stage 1's 95th-percentile AoA
    maxima to try besides the three classifier settings (None = stage 1 as configured).
    `also_meets`: a further test a candidate row must pass (e.g.
    `littlekit.fit.generalisation.loco_holds`: the targets on held-out corpora), `also_rule` its words.
    `precision_sources`, `min_precision`: of the rows from those sources kept, at least that share
    K-5 (`choose_min_k5_prob`).
    """
    kinds = pool["source"].to_numpy() if every_kind else None
    precise = _precision_rows(pool, precision_sources, min_precision)
    sweep = joint_sweep(
        pool, target, confidence, encoder_grid, aoa_grid=aoa_grid, kinds=kinds,
        precision_rows=precise, min_precision=min_precision,
    )
    allowed = max(allowed_beyond(int((pool["band"] != "K5").sum()), target, confidence), 0)
    best = best_joint(sweep, allowed, also_meets)
    also_met = bool(best.pop("also_met")) if "also_met" in best.index else None
    ft_min, enc_min, max_aoa = (
        None if pd.isna(best[name]) else float(best[name])
        for name in ("fasttext_min_k5_prob", "encoder_min_k5_prob", "max_aoa")
    )
    enc_released = kept_at(pool["enc_pred"], pool["enc_p_k5"], None)
    released = rates_of(pool, kept_at(pool["pred"], pool["p_k5"], None) & enc_released)
    first = sweep.iloc[0]
    fasttext_only = first[list(released)].to_dict()
    chosen = best[list(released)].to_dict()
    n_folds = int(pool["fold"].nunique())
    what = "fastText's and the encoder's minimum P(K5)" + (
        "" if list(aoa_grid) == [None] else " and stage 1's maximum 95th-percentile AoA"
    )
    rule = _rule(target, confidence, what + ", together")
    if every_kind:
        rule += f", and the out-of-fold Beyond-K-5 keep rate of every label source is at most {target:g}"
    if precise is not None:
        rule += (
            f", and at least {min_precision:g} of the labels from {', '.join(sorted(precision_sources))} "
            "kept are K-5 (at that fastText minimum and every stricter one)"
        )
    if also_meets is not None:
        rule += f", and {also_rule}" + ("" if also_met else " (no candidate met it: the best without it)")
    keep = _keep_of(pool, max_aoa, ft_min, enc_min)
    details = {
        "method": f"source-grouped {n_folds}-fold cross-validation of fastText and the encoder together",
        "rule": rule,
        "confidence": confidence,
        "every_kind": every_kind,
        "aoa_grid": [None if a is None else float(a) for a in aoa_grid],
        "population": f"{len(pool):,} training labels: those stage 2's point was measured on",
        "allowed_beyond": allowed,
        "oof_released": released,
        "oof_fasttext_only": fasttext_only,
        "oof_chosen": chosen,
        "oof_chosen_by_source": kind_rates(pool, keep, pool["source"]).to_dict(orient="index"),
    }
    if also_meets is not None:
        details["also_met"] = also_met
    if precise is not None:
        details["min_precision"] = {"sources": sorted(precision_sources), "min": min_precision}
        details["oof_chosen_precision"] = precision_of(pool, keep, precise)
    point = OperatingPoint(
        fasttext_min_k5_prob=ft_min,
        encoder_min_k5_prob=enc_min,
        chosen_on="out-of-fold fastText and encoder P(K5) on training labels, never on validation sources",
        target=target,
        max_aoa=max_aoa,
        details=details,
    )
    return JointTuning(point, pool, sweep, released, fasttext_only, chosen)


def _keep_of(
    pool: pd.DataFrame, max_aoa: float | None, ft_min: float | None, enc_min: float | None
) -> np.ndarray:
    keep = kept_at(pool["pred"], pool["p_k5"], ft_min) & kept_at(pool["enc_pred"], pool["enc_p_k5"], enc_min)
    if max_aoa is not None:
        keep &= pool["aoa_p95"].astype(float).to_numpy() <= max_aoa
    return keep


# Stage-1 maxima `choose_joint` may try besides the released 12 years: 11.75 down to 8.5 by a quarter
# year (pass `aoa_grid=(None, *AOA_GRID)`).
AOA_GRID: tuple[float, ...] = tuple(11.75 - 0.25 * i for i in range(14))


def _stage(spec: Any):
    if isinstance(spec, str):
        from littlekit.filter.registry import build_stages

        return build_stages(spec)[0]
    return spec


# --- applying a point to stored scores ----------------------------------------------------------


def apply_operating_point(
    outcomes: pd.DataFrame, stages: Sequence[str], point: OperatingPoint | Mapping[str, float | None]
) -> pd.DataFrame:
    """A released-rule cascade's outcomes re-decided under stricter P(K5) minimums, without re-scoring.

    `outcomes` is `littlekit.filter.cascade.cascade_outcomes`'s frame with `<stage>_p_k5` columns (the
    P(K5) each classifier stage gave a passage; NaN where it did not score it) and must come from a
    run with the released rules at those stages. A threshold only removes documents a stage kept,
    and every later stage scores a document the same whatever came before, so the verdicts equal
    those of the cascade built with the thresholds: a passage now leaves at the first classifier
    stage (before its old exit) whose P(K5) is below its minimum, with reason
    `<stage>_low_k5_prob`. A point's `min_blocked_share` (stage 5, which must be last and have run
    at the released any-word rule) lets through the passages stage 5 dropped with a smaller share of
    blocklisted tokens. Returns a copy with `status`, `stage`, `reason`, `kept`, `exit_index` updated.
    """
    thresholds = point.options() if isinstance(point, OperatingPoint) else dict(point)
    max_aoa = point.max_aoa if isinstance(point, OperatingPoint) else thresholds.pop("max_aoa", None)
    frame = outcomes.copy()
    if max_aoa is not None and "aoa" in stages:
        if "aoa_p95" not in frame.columns:
            raise KeyError("outcomes lack aoa_p95: run the cascade with cascade_outcomes")
        position = list(stages).index("aoa")
        high = (frame["exit_index"] > position) & (frame["aoa_p95"].astype(float) > max_aoa)
        frame.loc[high, ["status", "stage", "reason"]] = [DROPPED, "aoa", "aoa_p95"]
        frame.loc[high, "exit_index"] = position
    for position, stage in enumerate(stages):
        option = CLASSIFIER_STAGES.get(stage)
        minimum = thresholds.get(option) if option else None
        if minimum is None:
            continue
        column = f"{stage}_p_k5"
        if column not in frame.columns:
            raise KeyError(f"outcomes lack {column}: run the cascade with cascade_outcomes")
        passed = frame["exit_index"] > position  # the stage kept it under the released rule
        low = passed & (frame[column].astype(float) < minimum)
        frame.loc[low, ["status", "stage", "reason"]] = [DROPPED, stage, f"{stage}_low_k5_prob"]
        frame.loc[low, "exit_index"] = position
    if isinstance(point, OperatingPoint):
        share = point.min_blocked_share
    else:
        share = thresholds.pop("min_blocked_share", None)
    if share is not None and "frequency" in stages:
        frame = _keep_below_blocked_share(frame, list(stages), share)
    frame["kept"] = frame["exit_index"] >= len(stages)
    return frame


def _keep_below_blocked_share(frame: pd.DataFrame, stages: list[str], share: float) -> pd.DataFrame:
    """Stage 5 at a minimum blocklisted-token share, from a run at the released any-word rule: a
    passage that rule dropped with a share below the minimum passes stage 5 instead. Stage 5 must
    be the last stage (nothing after it scored the passage)."""
    if stages[-1] != "frequency":
        raise ValueError("a blocked-token share applies to stored outcomes only with frequency last")
    if "frequency_blocked_share" not in frame.columns:
        raise KeyError("outcomes lack frequency_blocked_share: run the cascade with cascade_outcomes")
    below = frame["frequency_blocked_share"].astype(float) < share
    passes = frame["reason"].eq("frequency_blocklist") & below
    frame.loc[passes, ["status", "stage", "reason"]] = [KEPT, None, None]
    frame.loc[passes, "exit_index"] = len(stages)
    return frame


# --- in hindsight: what no rule chosen on training labels could beat --------------------------


def best_in_hindsight(
    outcomes: pd.DataFrame,
    max_beyond_share: float,
    aoa_grid: Sequence[float] = (12.0, *AOA_GRID),
    encoder_grid: Sequence[float] = tuple(round(0.02 * i, 2) for i in range(50)),
    fasttext_grid: Sequence[float] = tuple(round(0.01 * i, 2) for i in range(100)),
) -> pd.Series:
    """The stage-1 maximum and classifier minimums that keep the most K-5 passages of `outcomes`
    while keeping at most `max_beyond_share` of its Beyond-K-5 ones, found on those passages.

    A diagnostic, never a choice: it is tuned on the very passages it is scored on, so it is an
    upper bound on what any operating point could reach there with these classifiers. `outcomes`
    comes from a released-rule run (`cascade_outcomes`: band, kept, aoa_p95,
    fasttext_p_k5, encoder_p_k5); a passage the released rules dropped stays dropped. Returns
    max_aoa, encoder_min_k5_prob, fasttext_min_k5_prob, and k5_kept, n_k5, beyond_kept, n_beyond
    with their shares; ties go to the laxest settings.
    """
    missing = {"band", "kept", "aoa_p95", "fasttext_p_k5", "encoder_p_k5"} - set(outcomes.columns)
    if missing:
        raise KeyError(f"outcomes lack {sorted(missing)}: run the cascade with cascade_outcomes")
    k5 = (outcomes["band"] == "K5").to_numpy()
    kept = outcomes["kept"].to_numpy(dtype=bool)
    aoa = outcomes["aoa_p95"].to_numpy(dtype=float)
    p_ft = np.nan_to_num(outcomes["fasttext_p_k5"].to_numpy(dtype=float))
    p_enc = np.nan_to_num(outcomes["encoder_p_k5"].to_numpy(dtype=float))
    ft_grid = np.asarray(fasttext_grid, dtype=float)
    allowed = math.floor(max_beyond_share * int((~k5).sum()) + 1e-9)
    best: tuple | None = None
    for max_aoa in sorted(aoa_grid, reverse=True):
        for enc_min in sorted(encoder_grid):
            open_rows = kept & (aoa <= max_aoa) & (p_enc >= enc_min)
            # kept counts for every fastText minimum at once: rows x grid
            passes = open_rows[:, None] & (p_ft[:, None] >= ft_grid[None, :])
            k5_kept = passes[k5].sum(axis=0)
            beyond_kept = passes[~k5].sum(axis=0)
            for i in np.flatnonzero(beyond_kept <= allowed):
                key = (int(k5_kept[i]), -int(beyond_kept[i]))
                if best is None or key > best[0]:
                    best = (key, max_aoa, enc_min, float(ft_grid[i]))
    if best is None:
        raise ValueError("no setting on the grids meets the share")
    (k5_kept, minus_beyond), max_aoa, enc_min, ft_min = best
    n_k5, n_beyond = int(k5.sum()), int((~k5).sum())
    return pd.Series(
        {
            "max_aoa": max_aoa,
            "encoder_min_k5_prob": enc_min,
            "fasttext_min_k5_prob": ft_min,
            "k5_kept": k5_kept,
            "n_k5": n_k5,
            "k5_share": k5_kept / n_k5 if n_k5 else math.nan,
            "beyond_kept": -minus_beyond,
            "n_beyond": n_beyond,
            "beyond_share": -minus_beyond / n_beyond if n_beyond else math.nan,
        }
    )
