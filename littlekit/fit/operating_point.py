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
   as the validation split does (both in `littlekit.fit.folds`).
3. `out_of_fold_fasttext` trains fastText on k-1 folds and scores the held-out one, giving each
   labelled document an out-of-fold P(K5) from a model that never saw its source.
4. `choose_min_k5_prob` (`littlekit.fit.thresholds`, with the keep rule and the rates) picks the
   smallest threshold whose out-of-fold Beyond-K-5 keep rate is at most a target (say 1%), and
   reports the K-5 keep rate it costs.

By default the rates are measured on the labelled documents that pass stage 1 (the AoA stage),
because in the cascade stage 2 only ever sees those; `tune_fasttext` says which population it used.

The chosen point is stored beside the artifacts as `filter_config.json` (`OperatingPoint.save`),
which `littlekit.filter.artifacts.stage_options_from_artifacts` reads, so
`littlekit filter --stages all --artifacts DIR` applies it; without the file the released rules
apply. `apply_operating_point` (`littlekit.fit.apply_point`) re-derives a cascade's verdicts
under stricter thresholds from the probabilities a released-rule run stored, without scoring
anything again.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from littlekit.filter.filter_config import OperatingPoint

# the folds, the keep rule and applying a point live in their own modules (folds, thresholds, apply_point)
from littlekit.fit.folds import DEFAULT_FOLDS, grouped_folds, label_groups
from littlekit.fit.labels import training_only
from littlekit.fit.thresholds import (
    DEFAULT_TARGET,
    STEP,
    _precision_rows,
    _rule,
    allowed_beyond,
    choose_min_k5_prob,
    keep_rates,
    kept_at,
    kind_rates,
    precision_of,
    rates_of,
    testable_kinds,
)
from littlekit.progress import Progress, quiet

# --- stage 2 alone: fastText's minimum ------------------------------------------------------------

# how a joint point (stage 1 and both classifiers, chosen together) says where it comes from
JOINT_POINT = "out-of-fold fastText and encoder P(K5) on training labels, never on validation sources"


def out_of_fold_fasttext(
    labels: pd.DataFrame,
    groups: Sequence[str],
    n_folds: int = DEFAULT_FOLDS,
    seed: int = 0,
    processes: int = 1,
    **hyper: Any,
) -> pd.DataFrame:
    """Each labelled document scored by a fastText model trained without its fold's sources.

    Returns `labels`' id, source and band with `group`, `fold`, `pred` (top band) and `p_k5`.
    `hyper` goes to `train_fasttext` (its defaults otherwise). `processes` > 1 trains that many
    folds at once, each in a process of its own: one-thread fastText training is deterministic,
    so the scores are the same as one fold after another.
    """
    folds = grouped_folds(groups, labels["band"], n_folds, seed)
    out = labels[["id", "source", "band"]].reset_index(drop=True).assign(group=list(groups), fold=folds)
    pred = np.empty(len(out), dtype=object)
    p_k5 = np.full(len(out), np.nan)
    frame = labels.reset_index(drop=True)
    jobs = [(frame[folds != fold], frame["text"][folds == fold].tolist(), {"seed": seed, **hyper})
            for fold in range(n_folds)]  # fmt: skip
    for fold, (bands, k5) in enumerate(_map_folds(_train_and_score, jobs, processes)):
        held = folds == fold
        pred[held], p_k5[held] = bands, k5
    return out.assign(pred=pred, p_k5=p_k5)


def _train_and_score(train: pd.DataFrame, texts: list[str], hyper: dict[str, Any]) -> tuple[list, list]:
    """(top band, P(K5)) of each text, by a fastText model trained on `train` (in a temporary file)."""
    from littlekit.fit.fasttext import train_fasttext

    with tempfile.TemporaryDirectory() as tmp:
        scores = train_fasttext(train, Path(tmp) / "fold.bin", **hyper).score_batch(texts)
    return [s["band"] for s in scores], [s["probs"].get("K5", 0.0) for s in scores]


def _map_folds(work: Callable, jobs: list[tuple], processes: int) -> list:
    """work(*job) for every job, in order: here, or in up to `processes` forked processes."""
    if processes < 1:
        raise ValueError(f"processes must be at least 1, got {processes}")
    if processes == 1 or len(jobs) < 2:
        return [work(*job) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # fork: the children inherit the imported modules; each fold's training is one thread anyway
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=min(processes, len(jobs)), mp_context=context) as pool:
        return list(pool.map(work, *zip(*jobs, strict=True)))


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
    processes: int = 1,
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
    oof = out_of_fold_fasttext(labels, groups, n_folds, seed, processes, **hyper)
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


def _stage(spec: Any):
    if isinstance(spec, str):
        from littlekit.filter.registry import build_stages

        return build_stages(spec)[0]
    return spec


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
    from littlekit.fit.encoder import build_tiny_modernbert
    from littlekit.fit.encoder_top import top_probs, train_top
    from littlekit.fit.encoder_training import EncoderTrainConfig, fine_tune

    config = config or EncoderTrainConfig(seed=seed)
    labels = labels.reset_index(drop=True)
    folds = np.asarray(folds)
    wanted = np.ones(len(labels), dtype=bool) if score is None else np.asarray(score, dtype=bool)
    if len(folds) != len(labels) or len(wanted) != len(labels):
        raise ValueError(f"folds ({len(folds)}) and score ({len(wanted)}) must match labels ({len(labels)})")
    pred = np.full(len(labels), None, dtype=object)
    p_k5 = np.full(len(labels), np.nan)
    precision = np.full(len(labels), None, dtype=object)  # what the thresholds will be fitted in
    fold_names = sorted(set(folds[wanted].tolist()))
    # One line per fold, not ten per fold's training run (a chapter cross-fits dozens of them)
    progress = Progress(len(fold_names), "cross-fitting the encoder", "folds")
    with tempfile.TemporaryDirectory(prefix="oof-encoder-") as tmp:
        for fold in fold_names:
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
            with quiet():
                if frozen is not None:
                    _, top = train_top(frozen, train.reset_index(drop=True), dev, None, config)
                    probs = top_probs(top, frozen, texts)
                    pred[held] = [LABELS[i] for i in probs.argmax(axis=1)]
                    p_k5[held] = probs[:, LABELS.index("K5")]
                    precision[held] = f"{torch_device_type(frozen.device)}/float32"  # no autocast there
                else:
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
                    precision[held] = stage.precision
            progress.update(fold=fold)
    return pd.DataFrame({"enc_pred": pred, "enc_p_k5": p_k5, "enc_precision": precision}, index=labels.index)


def torch_device_type(device: Any) -> str:
    """The type of a device: "cuda" for "cuda:1" or torch.device("cuda", 1)."""
    return str(device).split(":")[0]


def encoder_precision(pool: pd.DataFrame) -> dict[str, str] | None:
    """The precision the encoder scored `pool` in ({"encoder": "cpu/float32"}), from the
    enc_precision column out_of_fold_encoder writes; None for scores stored without it (taken as
    CPU fp32, where every earlier fit ran). Scores of two precisions mixed are refused."""
    if "enc_precision" not in pool.columns:
        return None
    seen = sorted(set(pool["enc_precision"].dropna()))
    if len(seen) > 1:
        raise ValueError(f"the encoder's scores mix precisions {seen}: fit the point on scores of one")
    return {"encoder": seen[0]} if seen else None


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
        for enc_min in [None, *encoder_grid]:  # None first: choose_joint reads row 0 as fastText alone
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
    # _row makes the last tie-break explicit: the earlier row, i.e. the laxer stage-1 and encoder settings
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
    # every label stage 1 passes but the training-only ones, both scores out of fold (`tune_joint`),
    # so another point's population (`littlekit.fit.points`) or a web-stream estimate can be read off
    scored: pd.DataFrame | None = None
    # stage 3's grade head fitted on every scored row, when stage 3 has one (`tune_joint`)
    head: Any | None = None


def tune_joint(
    fasttext_oof: pd.DataFrame,
    labels: pd.DataFrame,
    target: float = DEFAULT_TARGET,
    confidence: float | None = None,
    encoder_grid: Sequence[float] = ENCODER_GRID,
    every_kind: bool = False,
    aoa_grid: Sequence[float | None] = (None,),
    precision: Mapping[str, Any] | None = None,
    grade_head: bool = False,
    **encoder: Any,
) -> JointTuning:
    """Choose fastText's and the encoder's minimum P(K5) together, by source-grouped cross-validation.

    `fasttext_oof` is `tune_fasttext`'s `oof` frame (stage 2's `oof_scores.parquet`: id, band,
    fold, pred, p_k5, eligible); `labels` gives each id its text. The encoder is fine-tuned once per
    fold on the other folds (`out_of_fold_encoder`, `encoder` keywords go there) and scores the
    eligible rows of its fold, so both scores of a row come from models that never saw its source.
    The point keeps the most K-5 rows of stages 2-3 among the pairs meeting the target;
    `every_kind`, `aoa_grid` and `precision` (`precision_sources`, `min_precision`) as in `choose_joint`.
    `grade_head`: stage 3 is the encoder with a grade head (`littlekit.filter.grade_head`): its
    scores are the head's, cross-fitted over the same folds (`stack_on_encoder`), and the head
    fitted on every scored row comes back as `head`.
    """
    missing = {"id", "band", "fold", "pred", "p_k5", "eligible"} - set(fasttext_oof.columns)
    if missing:
        raise KeyError(f"the fastText out-of-fold frame lacks {sorted(missing)}")
    texts = labels.drop_duplicates("id").set_index("id")["text"]
    unknown = set(fasttext_oof["id"]) - set(texts.index)
    if unknown:
        raise KeyError(f"{len(unknown)} out-of-fold ids have no label text, e.g. {sorted(unknown)[:3]}")
    frame = fasttext_oof.reset_index(drop=True).assign(text=lambda f: f["id"].map(texts))
    # every row trains the other folds' encoders; every row stage 1 passes is scored (the rewrites,
    # training-only, are not), and the point is chosen on the rows stage 2's point was measured on
    wanted = ~training_only(frame["source"]).to_numpy()
    if "first_stage_keeps" in frame.columns:
        wanted &= frame["first_stage_keeps"].astype(bool).to_numpy()
    encoded = out_of_fold_encoder(frame, frame["fold"], score=wanted | frame["eligible"], **encoder)
    head = None
    if grade_head:
        from littlekit.filter.grade_head import stack_on_encoder

        stacked = stack_on_encoder(encoded, frame["text"], frame["band"].eq("K5"), frame["fold"])
        encoded, head = stacked.scores, stacked.head
    scored = pd.concat([frame, encoded], axis=1).drop(columns="text")
    pool = scored[scored["eligible"].astype(bool)]
    tuned = choose_joint(
        pool.reset_index(drop=True),
        target,
        confidence,
        encoder_grid,
        every_kind,
        aoa_grid,
        **(precision or {}),
    )
    tuned.scored = scored[scored["enc_p_k5"].notna()].reset_index(drop=True)
    tuned.head = head
    return tuned


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
    # with a grade head, enc_* are the head's and enc_model_* the encoder's own (its released rule)
    has_head = "enc_model_pred" in pool.columns
    model_pred, model_p = ("enc_model_pred", "enc_model_p_k5") if has_head else ("enc_pred", "enc_p_k5")
    enc_released = kept_at(pool[model_pred], pool[model_p], None)
    released = rates_of(pool, kept_at(pool["pred"], pool["p_k5"], None) & enc_released)
    first = sweep.iloc[0]  # aoa_grid's first setting, the encoder at its released rule
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
    if has_head:
        details["stage_3_score"] = (
            "the grade head's P3(K5) (littlekit.filter.grade_head: the encoder's log-odds plus readability "
            "and AoA features); the released rules column uses the encoder's argmax"
        )
    if also_meets is not None:
        details["also_met"] = also_met
    if precise is not None:
        details["min_precision"] = {"sources": sorted(precision_sources), "min": min_precision}
        details["oof_chosen_precision"] = precision_of(pool, keep, precise)
    point = OperatingPoint(
        fasttext_min_k5_prob=ft_min,
        encoder_min_k5_prob=enc_min,
        chosen_on=JOINT_POINT,
        target=target,
        max_aoa=max_aoa,
        details=details,
        fitted_precision=encoder_precision(pool),
    )
    return JointTuning(point, pool, sweep, released, fasttext_only, chosen)


def _keep_of(
    pool: pd.DataFrame, max_aoa: float | None, ft_min: float | None, enc_min: float | None
) -> np.ndarray:
    keep = kept_at(pool["pred"], pool["p_k5"], ft_min) & kept_at(pool["enc_pred"], pool["enc_p_k5"], enc_min)
    if max_aoa is not None:
        keep &= pool["aoa_p95"].astype(float).to_numpy() <= max_aoa
    return keep
