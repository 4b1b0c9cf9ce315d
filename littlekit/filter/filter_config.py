"""`filter_config.json`: the operating point the classifier stages apply, stored beside the artifacts.

An `OperatingPoint` holds a minimum P(K5) per classifier stage (None: the released rule, top band
K5) and, optionally, stage 1's maximum 95th-percentile AoA, with a note of how it was chosen.
`littlekit.filter.artifacts.stage_options_from_artifacts` reads it, so
`littlekit filter --stages all --artifacts DIR` applies it; `littlekit.fit.operating_point` chooses
it out of fold on training labels.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from littlekit.filter.aoa import P95_MAX_AOA

FILTER_CONFIG = "filter_config.json"
THRESHOLD_OPTIONS = ("fasttext_min_k5_prob", "encoder_min_k5_prob")
CLASSIFIER_STAGES = {"fasttext": "fasttext_min_k5_prob", "encoder": "encoder_min_k5_prob"}


@dataclass(frozen=True)
class OperatingPoint:
    """Minimum P(K5) per classifier stage (None = the released rule) and how it was chosen."""

    fasttext_min_k5_prob: float | None = None
    encoder_min_k5_prob: float | None = None
    chosen_on: str = "released rules (top band K5)"
    target: float | None = None
    details: dict[str, Any] = field(default_factory=dict)
    max_aoa: float | None = None  # stage 1's maximum 95th-percentile AoA; None: aoa.P95_MAX_AOA
    min_blocked_share: float | None = None  # stage 5's blocklisted-token share; None: any word drops

    def __post_init__(self) -> None:
        for name in THRESHOLD_OPTIONS:
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and 0.0 <= value <= 1.0):
                raise ValueError(f"{name} must be a probability between 0 and 1 or null, got {value!r}")
        aoa = self.max_aoa
        if aoa is not None and not (_is_number(aoa) and 0 < aoa <= P95_MAX_AOA):
            raise ValueError(
                f"max_aoa must be a number of years in (0, {P95_MAX_AOA:g}] or null, got {aoa!r} (an "
                f"operating point only tightens stage 1's released maximum, {P95_MAX_AOA:g}; --max-aoa "
                "sets any other)"
            )
        share = self.min_blocked_share
        if share is not None and not (_is_number(share) and 0.0 < share <= 1.0):
            raise ValueError(f"min_blocked_share must be a share in (0, 1] or null, got {share!r}")
        if self.target is not None and not _is_number(self.target):
            raise ValueError(f"target must be a number or null, got {self.target!r}")
        if not isinstance(self.chosen_on, str):
            raise ValueError(f"chosen_on must be a string, got {self.chosen_on!r}")
        if not isinstance(self.details, dict):
            raise ValueError(f"details must be an object, got {self.details!r}")

    def options(self) -> dict[str, float | None]:
        """The classifier stages' StageOptions fields this point sets (None: the released rule)."""
        return {name: getattr(self, name) for name in THRESHOLD_OPTIONS}

    def stage_options(self, stages: Collection[str]) -> dict[str, float | None]:
        """The StageOptions fields for the named stages: the classifiers' minimums, and stage 1's
        max_aoa when this point sets one."""
        thresholds = self.options()
        fields = {
            option: thresholds[option] for stage, option in CLASSIFIER_STAGES.items() if stage in stages
        }
        if self.max_aoa is not None and "aoa" in stages:
            fields["max_aoa"] = float(self.max_aoa)
        if self.min_blocked_share is not None and "frequency" in stages:
            fields["min_blocked_share"] = float(self.min_blocked_share)
        return fields

    def describe(self) -> str:
        """One line: the thresholds and where they come from."""
        parts = [] if self.max_aoa is None else [f"aoa: 95th-percentile AoA <= {self.max_aoa:g}"]
        parts += [
            f"{stage}: top band K5" + (" (released rule)" if value is None else f" and P(K5) >= {value:g}")
            for stage, value in zip(CLASSIFIER_STAGES, self.options().values(), strict=True)
        ]
        if "stage_3_score" in self.details:  # stage 3 keeps on its grade head's P3(K5), not the argmax
            value = self.encoder_min_k5_prob
            minimum = "0.5" if value is None else f"{max(value, 0.5):g}"
            parts[-1] = f"encoder: grade head P3(K5) >= {minimum}"
        if self.min_blocked_share is not None:
            parts.append(f"frequency: blocklisted tokens < {self.min_blocked_share:g} of the words")
        confidence = self.details.get("confidence")
        bound = "keep rate" if confidence is None else f"keep rate's {confidence:.0%} Wilson upper end"
        target = "" if self.target is None else f", target Beyond-K-5 {bound} <= {self.target:g}"
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
            data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_unique_keys)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            unknown = set(data) - {f.name for f in cls.__dataclass_fields__.values()}
            if unknown:
                raise ValueError(f"unknown key(s) {sorted(unknown)}")
            return cls(**data)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{path} is not a valid filter config: {error}") from error


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
