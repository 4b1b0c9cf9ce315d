"""A SymPy-verified K-8 math curriculum: problems tied to Common Core standards, derived, not asserted.

    from littlekit.curriculum import generate, select_units
    records = generate(select_units("K5"), per_unit=100, seed=0, register="prose", fmt="scratchpad")

`units` (the Unit declaration and registry), `k5_units` and `beyond_units` (the generators),
`prose` (word lists, SymPy-to-text glue), `arithmetic` (digit-by-digit scratchpads), `sampling`
(balanced or uniform operands), `formats` (answers, plain / reversed / scratchpad), `generate`
(seeded records), `audit` (re-derivation, vocabulary, K-5 rules, degenerate problems, stage 4),
`export` (JSONL, `datasets`, MathCAMPS-shaped records, pretraining mixtures), `command`
(`littlekit curriculum`).
"""

from littlekit.curriculum.generate import generate, make_record, problem_seed
from littlekit.curriculum.registry import UNITS, Unit
from littlekit.curriculum.units import all_units, select_units

all_units()  # importing the package registers every unit, so UNITS is complete

__all__ = ["UNITS", "Unit", "all_units", "generate", "make_record", "problem_seed", "select_units"]
