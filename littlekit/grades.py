"""Grade bands and the maps between school grades, CCSS/Lexile labels and bands.

Bands follow the paper's judge: K5 (kindergarten to grade 5), K8 (grades 6-8),
K12 (grades 9-12) and OOS (out of scope: beyond school).
"""

from __future__ import annotations

BANDS: tuple[str, ...] = ("K5", "K8", "K12", "OOS")
BAND_ORDER: dict[str, int] = {band: rank for rank, band in enumerate(BANDS)}
GRADES: tuple[str, ...] = ("K", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12")


def normalise_grade(grade: str | int) -> str:
    """'K', 'k', '0', 0, '01', 'Grade 3', '3' -> 'K' / '3'; raises ValueError otherwise."""
    text = str(grade).strip().upper().removeprefix("GRADE").strip()
    if text in {"K", "KG", "KINDERGARTEN", "0", "00"}:
        return "K"
    if text.isdigit() and 1 <= int(text) <= 12:
        return str(int(text))
    raise ValueError(f"not a school grade: {grade!r}")


def grade_to_band(grade: str | int) -> str:
    """The band a school grade belongs to."""
    g = normalise_grade(grade)
    number = 0 if g == "K" else int(g)
    if number <= 5:
        return "K5"
    if number <= 8:
        return "K8"
    return "K12"


def is_k5(band: str) -> bool:
    """True for the K-5 band; every other band is Beyond-K-5."""
    return check_band(band) == "K5"


def check_band(band: str) -> str:
    """Return the band unchanged, or raise ValueError naming the allowed bands."""
    if band not in BAND_ORDER:
        raise ValueError(f"unknown band {band!r}; expected one of {', '.join(BANDS)}")
    return band


def higher_band(a: str, b: str) -> str:
    """The higher of two bands (ties in a judge vote go to the higher grade)."""
    return a if BAND_ORDER[check_band(a)] >= BAND_ORDER[check_band(b)] else b


def beyond_label(band: str) -> str:
    """'K-5' or 'Beyond K-5', the two-way split used in the paper's figures."""
    return "K-5" if is_k5(band) else "Beyond K-5"
