"""The unit catalogue: every registered unit, by band or by id, and its table.

What a unit is and how one is declared (`Unit`, `Problem`, the `unit` decorator, `vocab`) lives in
`littlekit.curriculum.registry`, below the unit modules that use it; import them from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from littlekit.curriculum.registry import BANDS, GRADE_ORDER, UNITS, Unit


def _load() -> None:
    """Import the unit modules (they register themselves)."""
    from littlekit.curriculum import beyond_units, k5_units  # noqa: F401


def all_units() -> list[Unit]:
    """Every unit, in grade order (K..8), then in registration order."""
    _load()
    return sorted(UNITS.values(), key=lambda u: GRADE_ORDER.index(u.grade))


def select_units(spec: str | Sequence[str]) -> list[Unit]:
    """`K5`, `BEYOND`, `all`, or unit ids (a comma-separated string or a list), in grade order.

    Unknown ids raise KeyError naming them and the known ids.
    """
    units = all_units()
    if isinstance(spec, str):
        key = spec.strip()
        if key.lower() == "all":
            return units
        if key.upper() in BANDS:
            return [u for u in units if u.band == key.upper()]
        spec = [part.strip() for part in key.split(",") if part.strip()]
    if not spec:
        raise KeyError("no unit named; give K5, BEYOND, all or unit ids")
    unknown = [name for name in spec if name not in UNITS]
    if unknown:
        known = ", ".join(u.id for u in units)
        raise KeyError(f"unknown unit(s) {', '.join(unknown)}; known units: {known}")
    wanted = list(dict.fromkeys(spec))
    return [UNITS[name] for name in wanted]


def check_standards(units: Iterable[Unit], codes: Iterable[str]) -> list[str]:
    """Problems: every CCSS code of every unit must be one of `codes` (the standards table)."""
    known = set(codes)
    return [f"{u.id}: {code} is not a CCSS code" for u in units for code in u.ccss if code not in known]


def units_table(units: Iterable[Unit] | None = None) -> list[dict[str, Any]]:
    """One row per unit: id, grade, band, ccss, title, symbols, allows, families."""
    return [
        {
            "id": u.id,
            "grade": u.grade,
            "band": u.band,
            "ccss": ", ".join(u.ccss),
            "title": u.title,
            "symbols": "".join(sorted(u.symbols)),
            "allows": ", ".join(sorted(u.allows)),
            "families": ", ".join(u.families),
        }
        for u in (all_units() if units is None else units)
    ]
