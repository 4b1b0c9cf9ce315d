"""`filter_config.json`: the operating point the stages apply, stored beside the artifacts.

An `OperatingPoint` maps each stage to the thresholds it sets (a minimum P(K5) for the classifier
stages, stage 1's maximum 95th-percentile AoA, stage 5's blocked share; each stage declares its
own), with a note of how it was chosen; a threshold not set is the released rule.
`littlekit.filter.artifacts.stage_options_from_artifacts` reads it, so
`littlekit filter --stages all --artifacts DIR` applies it; `littlekit.fit.operating_point` chooses
it out of fold on training labels.

A point also states the precision each model stage's scores were computed in when its thresholds
were fitted (`fitted_precision`, stage -> "DEVICE_TYPE/DTYPE"; the encoder's: CPU fp32, where
every fit so far ran, and what a file written before the field existed is taken to mean). The
encoder reads it as its `encoder_fitted_precision` option and warns when it scores in another
precision (bf16 on CUDA moves P(K5) by about 0.01: `littlekit.filter.encoder_device`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from littlekit.filter.base import Option, StageSpec
from littlekit.filter.encoder_device import PRECISION_CPU, check_precision
from littlekit.filter.registry import stage_specs

FILTER_CONFIG = "filter_config.json"
POINT_FIELDS = ("thresholds", "chosen_on", "target", "details", "fitted_precision")
FITTED_PRECISION = {"encoder": PRECISION_CPU}  # where the thresholds were fitted, unless a point says
PRECISION_OPTION = "{stage}_fitted_precision"  # the stage option that receives a stage's precision


@dataclass(frozen=True, init=False)
class OperatingPoint:
    """The thresholds an operating point sets, stage -> {option: value}, and how they were chosen.

    Each stage declares which of its options are thresholds (`Option(threshold=True)`), and reads
    its own: `point.for_stage("fasttext")` is {"fasttext_min_k5_prob": 0.4}. A threshold not set
    (or None) is the stage's default, the released rule. Built from the mapping or from the
    options by name, which finds each option's stage:

        OperatingPoint({"fasttext": {"fasttext_min_k5_prob": 0.4}}, chosen_on="...")
        OperatingPoint(fasttext_min_k5_prob=0.4, max_aoa=11.0, chosen_on="...")

    and a threshold reads as an attribute by its option name (`point.max_aoa`, None when not set).
    filter_config.json stores the mapping; a file in the earlier flat layout (one key per option)
    still loads.
    """

    thresholds: dict[str, dict[str, float | None]]
    chosen_on: str
    target: float | None
    details: dict[str, Any]
    fitted_precision: dict[str, str]

    def __init__(
        self,
        thresholds: Mapping[str, Mapping[str, float | None]] | None = None,
        chosen_on: str = "released rules (top band K5)",
        target: float | None = None,
        details: Mapping[str, Any] | None = None,
        fitted_precision: Mapping[str, str] | None = None,
        **by_option: float | None,
    ) -> None:
        specs = stage_specs()
        merged: dict[str, dict[str, float | None]] = {
            stage: dict(values) for stage, values in (thresholds or {}).items()
        }
        for option, value in by_option.items():
            merged.setdefault(_stage_of_threshold(option, specs), {})[option] = value
        cleaned = {}
        for stage, values in merged.items():
            if stage not in specs:
                raise ValueError(f"thresholds for unknown stage {stage!r}; known: {', '.join(specs)}")
            declared = {option.name: option for option in specs[stage].options if option.threshold}
            unknown = sorted(set(values) - set(declared))
            if unknown:
                raise ValueError(
                    f"stage {stage!r} has no threshold {', '.join(unknown)}; its thresholds: "
                    f"{', '.join(declared) or 'none'}"
                )
            checked = {name: _checked(declared[name], value) for name, value in values.items()}
            checked = {name: value for name, value in checked.items() if value is not None}
            if checked:
                cleaned[stage] = checked
        if target is not None and not _is_number(target):
            raise ValueError(f"target must be a number or null, got {target!r}")
        if not isinstance(chosen_on, str):
            raise ValueError(f"chosen_on must be a string, got {chosen_on!r}")
        if details is not None and not isinstance(details, Mapping):
            raise ValueError(f"details must be an object, got {details!r}")
        object.__setattr__(self, "thresholds", cleaned)
        object.__setattr__(self, "chosen_on", chosen_on)
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "details", dict(details or {}))
        precision = FITTED_PRECISION if fitted_precision is None else fitted_precision
        object.__setattr__(self, "fitted_precision", _checked_precision(precision, specs))

    def __getattr__(self, option: str) -> float | None:
        """A threshold by its option name (None: not set, the released rule)."""
        if option.startswith("_"):
            raise AttributeError(option)
        stage = _stage_of_threshold(option, stage_specs(), missing=AttributeError)
        return self.thresholds.get(stage, {}).get(option)

    def for_stage(self, stage: str) -> dict[str, float | None]:
        """The thresholds this point sets for one stage (option -> value)."""
        return dict(self.thresholds.get(stage, {}))

    def options(self) -> dict[str, float | None]:
        """Every threshold option of the registered stages -> this point's value (None: not set)."""
        return {
            option.name: self.thresholds.get(name, {}).get(option.name)
            for name, spec in stage_specs().items()
            for option in spec.options
            if option.threshold
        }

    def stage_options(self, stages: Collection[str]) -> dict[str, Any]:
        """The StageOptions fields this point sets for the named stages: their thresholds and, for
        a stage with thresholds here and a `<stage>_fitted_precision` option, the precision they
        were fitted in."""
        options: dict[str, Any] = {}
        for stage, spec in stage_specs().items():
            if stage not in stages or not self.thresholds.get(stage):
                continue
            options.update(self.thresholds[stage])
            option = PRECISION_OPTION.format(stage=stage)
            if stage in self.fitted_precision and any(o.name == option for o in spec.options):
                options[option] = self.fitted_precision[stage]
        return options

    def describe(self) -> str:
        """One line: the thresholds and where they come from."""
        parts = []
        for name, spec in stage_specs().items():
            if spec.describe is not None:
                line = spec.describe(self.for_stage(name), self.details)
            else:
                line = ", ".join(f"{name}: {k} = {v:g}" for k, v in self.for_stage(name).items())
            if line:
                parts.append(line)
        confidence = self.details.get("confidence")
        bound = "keep rate" if confidence is None else f"keep rate's {confidence:.0%} Wilson upper end"
        target = "" if self.target is None else f", target Beyond-K-5 {bound} <= {self.target:g}"
        return "; ".join(parts) + f" (chosen on {self.chosen_on}{target})"

    def save(self, root: str | os.PathLike) -> Path:
        """Write DIR/filter_config.json (or to `root` itself when it ends in .json)."""
        path = config_path(root)
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {name: getattr(self, name) for name in POINT_FIELDS}
        path.write_text(json.dumps(data, indent=1, default=_json_number) + "\n", encoding="utf-8")
        return path

    @classmethod
    def load(cls, root: str | os.PathLike) -> OperatingPoint:
        """Read DIR/filter_config.json; ValueError naming the file when it is malformed."""
        path = config_path(root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_unique_keys)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            thresholds = data.pop("thresholds", None)
            if thresholds is not None and not (
                isinstance(thresholds, dict) and all(isinstance(v, dict) for v in thresholds.values())
            ):
                raise ValueError("thresholds must be an object of stage -> {option: value}")
            flat = {key: data.pop(key) for key in list(data) if key not in POINT_FIELDS}
            unknown = [key for key in flat if not _is_threshold(key)]
            if unknown:
                raise ValueError(f"unknown key(s) {sorted(unknown)}")
            return cls(thresholds, **data, **flat)  # flat keys: the earlier layout
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path} is not a valid filter config: {error}") from error


def _stage_of_threshold(
    option: str, specs: Mapping[str, StageSpec], missing: type[Exception] = ValueError
) -> str:
    for name, spec in specs.items():
        if option in spec.thresholds:
            return name
    known = [threshold for spec in specs.values() for threshold in spec.thresholds]
    raise missing(f"no stage has a threshold {option!r}; known: {', '.join(known)}")


def _is_threshold(option: str) -> bool:
    return any(option in spec.thresholds for spec in stage_specs().values())


def _checked(option: Option, value: Any) -> float | None:
    """A threshold's value as an operating point holds it: None, or a finite number that passes
    the option's own check and its point check."""
    if value is None:
        return None
    if not _is_number(value):
        raise ValueError(f"{option.name} must be a number or null, got {value!r}")
    value = option.checked(value)
    return value if option.point_check is None else option.point_check(option.name, value)


def _checked_precision(precision: Any, specs: Mapping[str, StageSpec]) -> dict[str, str]:
    """fitted_precision as a point holds it: stage -> "DEVICE_TYPE/DTYPE", each stage known."""
    if not isinstance(precision, Mapping):
        raise ValueError(f"fitted_precision must be an object of stage -> precision, got {precision!r}")
    unknown = sorted(set(precision) - set(specs))
    if unknown:
        raise ValueError(f"fitted_precision names unknown stage(s) {', '.join(unknown)}")
    checked = {stage: check_precision(f"fitted_precision of {stage}", v) for stage, v in precision.items()}
    return {stage: value for stage, value in checked.items() if value is not None}


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; ValueError for a key given twice (json keeps the last one
    silently, so a hand edit that adds a line instead of changing one would pass unseen)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"key {key!r} is given twice")
        found[key] = value
    return found


def _is_number(value: Any) -> bool:
    """A finite real number: not a bool (true is not 1), not a string ("0.5" is not 0.5), not NaN
    or infinity (which JSON does not have, but Python's json module reads)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        return False
    return math.isfinite(value)


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
