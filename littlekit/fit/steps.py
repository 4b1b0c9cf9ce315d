"""What each `littlekit fit` step makes, what it is made from, and what a refit makes stale.

    labels           the run's labels file
    aoa              stage 1's AoA table
    fasttext         stage 2's model and its own point (from the labels)
    encoder          stage 3's model (from the labels)
    operating-point  the joint point: max_aoa and both classifiers' minimum P(K5) (from all of the above)
    word-table       stage 5's word table and blocklisted share (from the models and the point)

A step has finished when its product is there; refitting it replaces that product, so every
step made from it no longer matches and is taken out of the folder (`remove_step`), with a line
saying which command makes it again. The filter then refuses what is missing instead of mixing an
old choice with a new model.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

from littlekit import runs
from littlekit.filter.artifacts import artifact_path
from littlekit.filter.filter_config import OperatingPoint, config_path, read_operating_point
from littlekit.fit.operating_point import JOINT_POINT

MADE_FROM: dict[str, tuple[str, ...]] = {
    "labels": (),
    "aoa": (),
    "fasttext": ("labels",),
    "encoder": ("labels",),
    "operating-point": ("labels", "aoa", "fasttext", "encoder"),
    "word-table": ("aoa", "fasttext", "encoder", "operating-point"),
}
FASTTEXT_POINT = "operating_point.json"  # stage 2's own point, kept in the run's fasttext_fit folder


def made_from_any(steps: tuple[str, ...]) -> list[str]:
    """The steps made, directly or not, from any of `steps` (not those themselves), in fit order."""
    stale: set[str] = set()
    for step, sources in MADE_FROM.items():  # fit order: a step's sources come before it
        if step not in steps and any(s in steps or s in stale for s in sources):
            stale.add(step)
    return [step for step in MADE_FROM if step in stale]


def finished(step: str, artifacts: str | os.PathLike, run: str | os.PathLike) -> bool:
    """Whether the folder (or the run, for the labels) already holds what `step` makes."""
    if step == "labels":
        return runs.path(run, "labels").exists()
    if step in ("aoa", "fasttext", "encoder", "word-table"):
        return _product(artifacts, step).exists()
    point = read_operating_point(artifacts) if config_path(artifacts).is_file() else None
    return point is not None and point.chosen_on == JOINT_POINT


def remove_step(step: str, artifacts: str | os.PathLike, run: str | os.PathLike) -> None:
    """Take what `step` made out of the artifacts folder (the labels are the run's and stay)."""
    artifacts = Path(artifacts)
    if step in ("aoa", "fasttext", "encoder", "word-table"):
        product = _product(artifacts, step)
        shutil.rmtree(product) if product.is_dir() else product.unlink(missing_ok=True)
    point = read_operating_point(artifacts)
    if point is None:
        return
    if step == "fasttext":
        config_path(artifacts).unlink()
    elif step == "operating-point":
        own = runs.path(run, "fasttext_fit") / FASTTEXT_POINT
        if own.is_file():
            OperatingPoint.load(own).save(artifacts)
        else:  # no stage-2 point to go back to: the joint one cannot be kept either
            config_path(artifacts).unlink()
    elif step == "word-table":
        details = {k: v for k, v in point.details.items() if k != "stage5"}
        replace(point, min_blocked_share=None, details=details).save(artifacts)


def _product(artifacts: str | os.PathLike, step: str) -> Path:
    option = {"aoa": "aoa_table", "fasttext": "fasttext_model", "encoder": "encoder_model"}
    return artifact_path(artifacts, option.get(step, "word_table"))
