"""A SymPy-verified K-8 math curriculum: problems tied to Common Core standards, derived, not asserted.

    from littlekit.curriculum.generate import generate
    from littlekit.curriculum.units import select_units
    records = generate(select_units("K5"), per_unit=100, seed=0, register="prose", fmt="scratchpad")

`units` (the Unit declaration and registry), `k5_units` and `beyond_units` (the generators),
`prose` (word lists, SymPy-to-text glue), `arithmetic` (digit-by-digit scratchpads), `sampling`
(balanced or uniform operands), `formats` (answers, plain / reversed / scratchpad), `generate`
(seeded records), `audit` (re-derivation, vocabulary, K-5 rules, degenerate problems, stage 4),
`export` (JSONL, `datasets`, MathCAMPS-shaped records, pretraining mixtures), `command`
(`littlekit curriculum`).
"""


# Importing the package registers every unit, so code that reads registry.UNITS sees them all.
import littlekit.curriculum.units as _units

_units.all_units()
