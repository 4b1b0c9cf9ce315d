"""The two operating points a fit can aim at: the paper's error rates (the default) and precision-first.

A point is the rule that chooses the classifiers' minimum P(K5) (and, for the every-kind rule, stage
1's maximum AoA) out of fold on the training labels (`littlekit.fit.operating_point`):

- `paper` (the default): at most 2.5% of the Beyond-K-5 labels of the graded training sources
  (CommonCoreText-PD's train passages and the informational school books, the kinds of text the
  validation sets hold) kept out of fold, as a point estimate; stage 1 at its released 12 years;
  no condition per kind of text and none on web precision. The paper's released filter
  keeps 42% of WeeBit's K-5 texts at 2.48% of its Beyond-K-5 texts: this point aims at that trade.
- `precision`: the earlier default, for a user who wants a clean web corpus before a large one: the
  95% Wilson upper end of the out-of-fold Beyond-K-5 rate at most 2%, every kind of text held to it
  (with stage 1's maximum AoA searched too and, where measured, each corpus held out), and at
  least 90% judge-K5 among the web labels kept. At a web K-5 prior of a few percent it keeps a
  small share of a grade-4/5 pupil's reading.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PointRule:
    """The settings a point fixes in `FastTextRecipe` and `EncoderRecipe`."""

    name: str
    beyond_keep_target: float  # out-of-fold Beyond-K-5 keep rate allowed
    target_confidence: float | None  # meet it at this Wilson confidence (None: the point estimate)
    min_web_precision: float | None  # of the web labels kept out of fold, at least this share K-5
    operating_rule: str  # "pooled" (all labels together) or "every-kind" (each kind too, stage 1 searched)
    tune_on: str  # the labels whose rates set the point (`littlekit.fit.folds.TUNING_CHOICES`)
    summary: str

    def fasttext_settings(self) -> dict[str, float | None]:
        """The `FastTextRecipe` fields this point sets."""
        return {
            "beyond_keep_target": self.beyond_keep_target,
            "target_confidence": self.target_confidence,
            "min_web_precision": self.min_web_precision,
            "tune_on": self.tune_on,
        }

    def encoder_settings(self) -> dict[str, float | str | None]:
        """The `EncoderRecipe` fields this point sets."""
        return {"operating_rule": self.operating_rule, "min_web_precision": self.min_web_precision}


POINTS: dict[str, PointRule] = {
    "paper": PointRule(
        "paper",
        beyond_keep_target=0.025,
        target_confidence=None,
        min_web_precision=None,
        operating_rule="pooled",
        tune_on="graded",
        summary=(
            "the paper's error rates: at most 2.5% of the graded sources' Beyond-K-5 labels kept out of "
            "fold, stage 1 at 12"
        ),
    ),
    "precision": PointRule(
        "precision",
        beyond_keep_target=0.02,
        target_confidence=0.95,
        min_web_precision=0.9,
        operating_rule="every-kind",
        tune_on="auto",
        summary=(
            "precision-first: Beyond-K-5 at most 2% with 95% confidence in every kind of text, stage 1 "
            "searched, at least 90% judge-K5 among the web labels kept"
        ),
    ),
}
DEFAULT_POINT = "paper"


def point_rule(name: str) -> PointRule:
    """The point called `name` (`POINTS`), with an error naming the choices."""
    if name not in POINTS:
        raise ValueError(f"unknown operating point {name!r}: choose one of {', '.join(POINTS)}")
    return POINTS[name]
