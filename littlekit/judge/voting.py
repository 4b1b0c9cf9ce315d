"""Combine the prompt variants' bands into one label.

"majority": the most frequent band among the valid votes; ties go to the higher grade, since
under-classification (showing high-school text to a K-5 learner) is the worse mistake.
"unanimous": a band only when every prompt answered and all agree (the released classifiers
were trained only on such labels); None otherwise.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from littlekit.grades import BAND_ORDER, check_band

VOTE_MODES: tuple[str, ...] = ("majority", "unanimous")


def vote(votes: Mapping[str, str | None], mode: str = "majority") -> str | None:
    """The voted band of {prompt_name: band or None (no valid answer)}, or None."""
    if mode not in VOTE_MODES:
        raise ValueError(f"unknown vote mode {mode!r}; expected one of {', '.join(VOTE_MODES)}")
    valid = [check_band(band) for band in votes.values() if band is not None]
    if mode == "unanimous":
        if not votes or len(valid) != len(votes) or len(set(valid)) != 1:
            return None
        return valid[0]
    if not valid:
        return None
    counts = Counter(valid)
    return max(counts, key=lambda band: (counts[band], BAND_ORDER[band]))


def revote(record: Mapping[str, Any], mode: str) -> dict[str, Any]:
    """A judge label record with its band decided again from its votes under `mode`.

    One annotation serves both modes: e.g. majority labels to inspect and unanimous labels to
    train on, without asking the model twice. `judge.vote` records the new mode.
    """
    judge = record.get("judge")
    if judge is None:
        raise ValueError(f"label {record.get('id')!r} was not made by the judge; it has no votes to recount")
    return {**record, "band": vote(record["votes"], mode), "judge": {**judge, "vote": mode}}
