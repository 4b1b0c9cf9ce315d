"""CLEAR's Lexile band values -> Lexile ranges -> school grade bands (CCSS Appendix A ranges)."""

from __future__ import annotations

import math
import re

# CCSS "stretch" Lexile ranges by grade band (Appendix A, 2012 update).
CCSS_LEXILE_RANGES: dict[str, tuple[int, int]] = {
    "2-3": (420, 820),
    "4-5": (740, 1010),
    "6-8": (925, 1185),
    "9-10": (1050, 1335),
    "11-CCR": (1185, 1385),
}
# The same ranges merged per band. Below grade 2 counts as K5; above the CCR range as K12, because
# every CLEAR excerpt was chosen for readers in grades 3-12.
BAND_LEXILE_RANGES: dict[str, tuple[float, float]] = {
    "K5": (-math.inf, 1010),
    "K8": (925, 1185),
    "K12": (1050, math.inf),
}
_RANGE_RE = re.compile(r"^\s*(\d+)\s*L?\s*-\s*(\d+)\s*L?\s*$", re.IGNORECASE)


def clear_lexile_range(value: object) -> tuple[int, int]:
    """The Lexile range of a CLEAR `Lexile Band` value.

    CLEAR mostly stores a band's centre (100, 300, ..., 1900); 24 rows spell the range out
    ('410L-600L', '610L - 800L', '610L-800'). Centre N stands for the 200L band (N-90)L-(N+100)L:
    centre 500 and '410L-600L' rows have the same mean Flesch-Kincaid grade (3.2 vs 3.3), as do
    700 and '610L-800L' (5.3 vs 5.0).
    """
    text = str(value).strip()
    match = _RANGE_RE.match(text)
    if match:
        return int(match.group(1)), int(match.group(2))
    centre = int(float(text))
    return centre - 90, centre + 100


def lexile_label(low: int, high: int) -> str:
    return f"{low}L-{high}L"


def lexile_to_band(low: int, high: int) -> tuple[str | None, bool]:
    """(band, ambiguous) for a Lexile range.

    The band is the one whose merged CCSS range overlaps the interval most. A range that overlaps
    both K5 and a Beyond-K-5 band is ambiguous: (None, True), because the K-5 / Beyond split is
    exactly what the filters are judged on.
    """
    overlaps = {}
    for band, (band_low, band_high) in BAND_LEXILE_RANGES.items():
        overlap = min(high, band_high) - max(low, band_low)
        if overlap > 0:
            overlaps[band] = overlap
    if not overlaps:
        raise ValueError(f"Lexile range {low}-{high} overlaps no band")
    if "K5" in overlaps and len(overlaps) > 1:
        return None, True
    return max(overlaps, key=lambda band: overlaps[band]), False
