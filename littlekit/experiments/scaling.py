"""Scaling: one recipe at several model sizes, and what size changes on each side of the K-5
boundary (the paper's Figures 7 and 17).

The paper trains LittleLearner and UNFILTERED at 0.6B, 1.3B and 5B parameters on the same data
and asks whether size carries LittleLearner past what pretraining showed it. Here the sizes are
`littlekit.lm.sizes` names (`DEFAULT_SIZES`: pico, nano, micro, 0.25M to 1.3M parameters), and
every run repeats a trained run's recipe (`recipe_at_size`: its data, tokenizer, token budget,
schedule, learning rates and seed), so size is the only change.

The question is asked of three grade groups (`GRADE_GROUPS`): inside K-5, at the boundary (grades
6-7) and at grade 8. `size_lifts` measures, per model and group, how accuracy on the same held-out
problems changes from the smallest size to the largest, with a paired bootstrap interval over
problems; `compare.change_verdict` says in words what the interval shows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from littlekit.experiments.compare import paired_changes
from littlekit.lm.train.config import CONFIG_JSON, TrainConfig

DEFAULT_SIZES: tuple[str, ...] = ("pico", "nano", "micro")
GRADE_GROUPS: dict[str, tuple[str, ...]] = {
    "K-5": ("K", "1", "2", "3", "4", "5"),
    "boundary (6-7)": ("6", "7"),
    "grade 8": ("8",),
}
# The paper (Figure 17 and its Appendix C.3): size helps LittleLearner inside K-5 and somewhat at the
# fuzzy boundary (grades 6-7), and shows no effect at grade 8, well beyond K-5.
PAPER_FINDING = (
    "larger LittleLearners do better inside K-5 and somewhat at the boundary (grades 6-7), but size "
    "shows no effect at grade 8"
)


def read_recipe(run_dir: str | os.PathLike) -> TrainConfig:
    """The TrainConfig a finished run wrote to its `train_config.json`."""
    path = Path(run_dir) / CONFIG_JSON
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: {run_dir} is not a finished training run")
    try:
        return TrainConfig(**json.loads(path.read_text(encoding="utf-8")))
    except (json.JSONDecodeError, TypeError) as exc:
        raise ValueError(f"{path}: not a train config ({exc})") from None


def recipe_at_size(recipe: TrainConfig, size: str, run_dir: str | os.PathLike) -> TrainConfig:
    """`recipe` with another model size, written to `run_dir`, trained from scratch."""
    return replace(recipe, size=size, run_dir=str(run_dir), init_from=None, resume=None, stop_at=None)


def grade_group(grade: str) -> str:
    """The `GRADE_GROUPS` name a grade (K..8) belongs to."""
    for name, grades in GRADE_GROUPS.items():
        if str(grade) in grades:
            return name
    raise ValueError(f"grade {grade!r} is not one of K..8")


def size_lifts(
    results: pd.DataFrame, sizes: Sequence[str], n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per model and grade group: accuracy at the smallest and the largest of `sizes` on the same
    problems, the change and its 95% paired bootstrap interval (`compare.paired_changes`).

    `results` are `evals.curriculum` rows (id, grade, n, c) with `model` and `size` columns.
    """
    grouped = results.assign(group=results["grade"].map(grade_group))
    table = paired_changes(grouped, "size", sizes[0], sizes[-1], ("model", "group"), n_boot, seed)
    order = list(GRADE_GROUPS)
    return table.assign(at=table["group"].map(order.index)).sort_values(["model", "at"]).drop(columns="at")
