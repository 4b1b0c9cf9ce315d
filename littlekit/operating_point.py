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
which `littlekit.artifacts.stage_options_from_artifacts` reads, so
`littlekit filter --stages all --artifacts DIR` applies it; without the file the released rules
apply. `apply_operating_point` re-derives a cascade's verdicts under stricter thresholds from the
probabilities a released-rule run stored, without scoring anything again.
"""

from __future__ import annotations

import json
import math
import os
import random
import tempfile
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from littlekit.grades import BANDS
from littlekit.pipeline import DROPPED

FILTER_CONFIG = "filter_config.json"
THRESHOLD_OPTIONS = ("fasttext_min_k5_prob", "encoder_min_k5_prob")
CLASSIFIER_STAGES = {"fasttext": "fasttext_min_k5_prob", "encoder": "encoder_min_k5_prob"}
DEFAULT_TARGET = 0.01
DEFAULT_FOLDS = 5
# The label sources that are CommonCoreText-PD's own kinds of text (its train split and CLEAR's
# training author groups): the benchmark's train side, where its validation side is checked.
COMMONCORETEXT_SOURCES = ("source-label:clear", "source-label:gutenberg", "source-label:openstax")
STEP = 0.001  # thresholds are rounded up to this grid, so the file holds readable numbers


@dataclass(frozen=True)
class OperatingPoint:
    """Minimum P(K5) per classifier stage (None = the released rule) and how it was chosen."""

    fasttext_min_k5_prob: float | None = None
    encoder_min_k5_prob: float | None = None
    chosen_on: str = "released rules (top band K5)"
    target: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in THRESHOLD_OPTIONS:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name} must be a probability between 0 and 1 or null, got {value!r}")

    def options(self) -> dict[str, float | None]:
        """The StageOptions fields this point sets."""
        return {name: getattr(self, name) for name in THRESHOLD_OPTIONS}

    def describe(self) -> str:
        """One line: the thresholds and where they come from."""
        parts = [
            f"{stage}: top band K5" + (" (released rule)" if value is None else f" and P(K5) >= {value:g}")
            for stage, value in zip(CLASSIFIER_STAGES, self.options().values(), strict=True)
        ]
        target = "" if self.target is None else f", target Beyond-K-5 keep rate <= {self.target:g}"
        return "; ".join(parts) + f" (chosen on {self.chosen_on}{target})"

    def save(self, root: str | os.PathLike) -> Path:
        """Write DIR/filter_config.json (or to `root` itself when it ends in .json)."""
        path = config_path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1, default=_json_number) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, root: str | os.PathLike) -> OperatingPoint:
        """Read DIR/filter_config.json; ValueError naming the file when it is malformed."""
        path = config_path(root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            unknown = set(data) - {f.name for f in cls.__dataclass_fields__.values()}
            if unknown:
                raise ValueError(f"unknown key(s) {sorted(unknown)}")
            return cls(**data)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path} is not a valid filter config: {error}") from error


def config_path(root: str | os.PathLike) -> Path:
    """DIR/filter_config.json for an artifacts directory (a .json path is taken as is)."""
    root = Path(root)
    return root if root.suffix == ".json" else root / FILTER_CONFIG


def read_operating_point(root: str | os.PathLike) -> OperatingPoint | None:
    """The operating point stored under an artifacts directory, or None when it holds no config."""
    return OperatingPoint.load(root) if config_path(root).is_file() else None


def _json_number(value: Any) -> Any:
    if isinstance(value, np.integer | np.floating):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


# --- source groups and folds --------------------------------------------------------------------


def label_groups(labels: pd.DataFrame, root: str | os.PathLike | None = None) -> pd.Series:
    """The source unit of each label (index aligned with `labels`), for source-grouped folds.

    CommonCoreText-PD passages take their `split_group` (the unit the train/validation split keeps
    whole: a Gutenberg or CLEAR author, an OpenStax book); other CLEAR excerpts their author group
    (same rule); MathCAMPS problems their CCSS standard; anything else (TinyStories stories, LLM-judge
    labels) is its own group.
    """
    from littlekit import corpora
    from littlekit.databuild.passages import author_key

    passages = corpora.load_commoncoretext(root)
    by_id = dict(zip(passages["id"], passages["split_group"], strict=True))
    ids = labels["id"].astype(str)
    clear_ids = ids[ids.str.startswith("clear-") & ~ids.isin(by_id)]
    if len(clear_ids):
        clear = corpora.load_clear(root)
        authors = dict(zip("clear-" + clear["id"].astype(int).astype(str), clear["author"], strict=True))
        by_id.update({i: "author:" + author_key(authors.get(i) or "") for i in clear_ids})
    return pd.Series([by_id.get(i) or _own_group(i) for i in ids], index=labels.index, name="group")


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
    from littlekit.stages.fasttext_stage import train_fasttext

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
    keep = kept_at(frame["pred"], frame["p_k5"], min_k5_prob)
    k5 = (frame["band"] == "K5").to_numpy()
    return {
        "n_k5": int(k5.sum()),
        "n_beyond": int((~k5).sum()),
        "k5_kept": int(keep[k5].sum()),
        "beyond_kept": int(keep[~k5].sum()),
        "k5_keep_rate": float(keep[k5].mean()) if k5.any() else math.nan,
        "beyond_keep_rate": float(keep[~k5].mean()) if (~k5).any() else math.nan,
    }


def choose_min_k5_prob(
    frame: pd.DataFrame, target: float = DEFAULT_TARGET, step: float = STEP
) -> float | None:
    """The smallest P(K5) minimum (on a `step` grid) keeping at most `target` of the Beyond-K-5 rows.

    `frame` has band, pred (top band) and p_k5. None when the released rule (top band K5) already
    meets the target. The result may still miss the target when Beyond-K-5 rows reach P(K5) = 1.
    """
    if not 0.0 <= target < 1.0:
        raise ValueError(f"target must be a fraction in [0, 1), got {target}")
    beyond = frame[(frame["band"] != "K5") & (frame["pred"] == "K5")]["p_k5"].astype(float)
    n_beyond = int((frame["band"] != "K5").sum())
    if n_beyond == 0:
        raise ValueError("no Beyond-K-5 rows to measure the keep rate on")
    allowed = math.floor(target * n_beyond + 1e-9)
    if len(beyond) <= allowed:
        return None
    # drop every Beyond-K-5 row at or below the (allowed+1)-th highest P(K5): the threshold is the
    # first grid point strictly above it
    worst = np.sort(beyond.to_numpy())[::-1][allowed]
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
    **hyper: Any,
) -> Tuning:
    """Choose fastText's min_k5_prob by source-grouped cross-validation on the training labels.

    Every label is scored out of fold (`out_of_fold_fasttext`); the keep rates that choose the
    threshold are measured on the labels that `first_stage` keeps ("aoa" = the registry's default
    AoA stage, or a Stage; None = no stage) and, when `measure_sources` is given, whose `source`
    is one of them (e.g. COMMONCORETEXT_SOURCES). `groups`: source groups (default
    `label_groups(labels, root)`). The details also hold the rates on every label `first_stage`
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
        passes = np.array([stage(text).keep for text in labels["text"]])
        population = f"the training labels stage '{stage.name}' keeps"
    measured = passes.copy()
    if measure_sources is not None:
        measured &= labels["source"].isin(set(measure_sources)).to_numpy()
        population += f" from {', '.join(sorted(measure_sources))}"
    population += f" ({int(measured.sum()):,} of {len(labels):,})"
    oof["first_stage_keeps"] = passes
    oof["eligible"] = measured
    pool = oof[oof["eligible"]]
    threshold = choose_min_k5_prob(pool, target)
    released, chosen = keep_rates(pool, None), keep_rates(pool, threshold)
    every_source = oof[oof["first_stage_keeps"]]
    details = {
        "method": f"source-grouped {n_folds}-fold cross-validation of fastText (seed {seed})",
        "population": population,
        "n_groups": len(set(groups)),
        "oof_released": released,
        "oof_chosen": chosen,
        "oof_released_every_source": keep_rates(every_source, None),
        "oof_chosen_every_source": keep_rates(every_source, threshold),
    }
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
        from littlekit.stages.registry import build_stages

        return build_stages(spec)[0]
    return spec


# --- applying a point to stored scores ----------------------------------------------------------


def apply_operating_point(
    outcomes: pd.DataFrame, stages: Sequence[str], point: OperatingPoint | Mapping[str, float | None]
) -> pd.DataFrame:
    """A released-rule cascade's outcomes re-decided under stricter P(K5) minimums, without re-scoring.

    `outcomes` is `littlekit.validate.cascade_outcomes`'s frame with `<stage>_p_k5` columns (the
    P(K5) each classifier stage gave a passage; NaN where it did not score it) and must come from a
    run with the released rules at those stages. A threshold only removes documents a stage kept,
    and every later stage scores a document the same whatever came before, so the verdicts equal
    those of the cascade built with the thresholds: a passage now leaves at the first classifier
    stage (before its old exit) whose P(K5) is below its minimum, with reason
    `<stage>_low_k5_prob`. Returns a copy with `status`, `stage`, `reason`, `kept`, `exit_index`
    updated.
    """
    thresholds = point.options() if isinstance(point, OperatingPoint) else dict(point)
    frame = outcomes.copy()
    for position, stage in enumerate(stages):
        option = CLASSIFIER_STAGES.get(stage)
        minimum = thresholds.get(option) if option else None
        if minimum is None:
            continue
        column = f"{stage}_p_k5"
        if column not in frame.columns:
            raise KeyError(f"outcomes lack {column}: run the cascade with validate.cascade_outcomes")
        passed = frame["exit_index"] > position  # the stage kept it under the released rule
        low = passed & (frame[column].astype(float) < minimum)
        frame.loc[low, ["status", "stage", "reason"]] = [DROPPED, stage, f"{stage}_low_k5_prob"]
        frame.loc[low, "exit_index"] = position
    frame["kept"] = frame["exit_index"] >= len(stages)
    return frame
