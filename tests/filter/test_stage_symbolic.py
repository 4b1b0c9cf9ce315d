"""Stage 4 (symbolic notation): Table 3's families in unicode, LaTeX and text forms, K-5
arithmetic that must pass, the borderline choices of the module docstring, the stage API,
linear time on 1 MB adversarial strings, and hit rates on the embedded MathCAMPS and GSM8K."""

from __future__ import annotations

import json
import random
import re
import time
from collections import Counter

import pytest

from littlekit import config
from littlekit.analysis.throughput import best_cpu_seconds
from littlekit.filter.symbolic import engine
from littlekit.filter.symbolic.adversarial import ADVERSARIAL_UNITS, adversarial_inputs, adversarial_text
from littlekit.filter.symbolic.engine import _reach, gate_opens, needles
from littlekit.filter.symbolic.rules import (
    DIGITS,
    FAMILIES,
    MAX_MATCH_CHARS,
    RULES,
    is_chemical_formula,
    is_formula_with_coefficient,
)
from littlekit.filter.symbolic.stage import SymbolicStage, first_match, match_all, match_spans

STAGE = SymbolicStage()


def family_of(text: str) -> str | None:
    return STAGE.score(text)["family"]


# Table 3's examples (and the released filter's extra families), each in the forms that occur.
POSITIVES = {
    "equations": [
        "2x + 3 = 7", "Solve 2x + 3 = 7 for x.", "$2x + 3 = 7$", "3n - 4 = 11", "2x = 8", "5 = 2x - 1",
        "ax + by = c", "x + y = 10", "a + b = b + a", "4 * b + 44 * m = 180", "50c + 12f = 92",
        "x^2 + 2x", "x² + 2x", "$x^{2} + 2x$", "x^2 - x", "y = 3x + 1", "y = 3x.", "2(x + 3) = 10",
        "61 = ((5 * d) - 7)", "3x + 2x = 5x",
    ],
    "exponents": [
        "x^2", "x²", "x^n", "xⁿ", "5³", "5^3", "$x^{n}$", "x^{-1}", "x⁻¹", "x^-2", "2^-3", "2**10",
        "x ** 2", "x**n", "(a+b)^2", "x^(n+1)", "e^{i\\pi}", "a^b", "2^n", "A^2", "x<sup>2</sup>",
        "x squared", "5 cubed", "2 to the power of 5", "x to the 4th power", "3 to the third power",
        "5 is raised to the power of 2", "10^-3", "10^12", "10⁻³", "E = mc^2",
    ],
    "roots": [
        "√x", "ⁿ√x", "√(x+1)", "√ 16", "√25 = 5", "∛8", "∜16", "\\sqrt{x}", "\\sqrt[3]{x}", "\\sqrt2",
        "cbrt(27)", "sqrt(2)", "Math.sqrt(x)", "x^{1/3}", "x^(1/2)", "x^{1/n}", "8**(1/3)",
        "the cube root of 27", "the square root of x", "Find the Square Root.", "the nth root",
    ],
    "inequalities": [
        "a < x < b", "a ≤ x ≤ b", "0 < x < 1", "b > x > a", "1 ≥ y ≥ 0", "a \\le x \\le b",
        "a \\leq x \\leq b", "-3 <= x <= 3", "0 < 2x < 10", "x ≥ 3", "x \\geq 0", "3 ≤ x", "y >= 2",
        "n > 5", "x < -1",
    ],
    "calculus": [
        "∑", "Σ a_i", "∫ f", "∂f", "∞", "∬", "∇f", "\\frac{a}{b}", "\\lim", "\\int_0^1", "\\sum_{i=1} a_i",
        "\\partial", "\\infty", "d/dx", "dy/dx", "df/dt", "lim x→0", "lim_{x \\to 0}",
        "lim (x -> 0)",
    ],
    "functions": [
        "f(x)", "g(y)", "h(z)", "f (x)", "f(x, y)", "Let f(x) = 7.", "f of x", "sin(x)", "cos(θ)",
        "tan(45°)", "log(100)", "ln(x)", "exp(-x)", "arcsin(0.5)", "sinh(x)", "asin(x)", "log_2(8)",
        "log₂(8)", "log10(x)", "\\sin x", "\\log n", "\\ln 2", "cos θ",
    ],
    "chemical_formulas": [
        "H2O", "CO2", "NaCl", "C6H12O6", "H₂O", "CO₂", "Ca(OH)2", "(NH4)2SO4", "KCl", "NaOH",
        "CaCO3", "H2SO4", "O₂", "CCl4", "Al2(SO4)3", "water (H2O).", "CO2-rich air", "HCl", "GaAs",
        # after a stoichiometric coefficient
        "6CO2 + 6H2O", "2H2O", "6O2", "2H2 + O2 → 2H2O", "3H₂", "2NaCl", "10H2O", "2C12H22O11",
    ],
}

# Ordinary K-5 mathematics and prose that no rule may match.
K5_NEGATIVES = [
    "8 + 6 = 14", "3 × 4 = 12", "1/2 of 10", "$3.50", "10:30", "2nd grade", "3 + ? = 7", "12 - 5 = 7",
    "5 < 8", "3 > 2", "4 x 3 = 12", "3x4=12", "__ + 4 = 9", "x = 5", "n + 3 = 7", "4 × n = 24",
    "2 × n + 3 = 11", "n + n = 8", "1st, 2nd, 3rd", "Chapter 3: Life", "Room 101", "5:45 p.m.",
    "$12.75", "50%", "3/4/2020", "555-123-4567", "(555) 123-4567", "21-14", "A+ grade", "Vitamin C",
    "Type 2", "COVID-19", "MP3", "4x4 truck", "2x faster", "Speed = 2x as much", "Section 2(a)",
    "f (stop)", "page 12 (see figure 3)", "3 < 5 < 8", "(1 / 8) _ (4 / 1)", "(<, >, or =)",
    "Fill in the blank with <, >, or =.", "3 × (4 + 5) = 27", "(8 + 2) × 3", "0.5 + 0.25 = 0.75",
    "2 1/2 cups", "I <3 my dog", "Plan A + Plan B = success",
]

UNIT_AND_POWER_OF_TEN_NEGATIVES = [
    # area and volume units are K-5 measurement (3.MD.C, 5.MD.C), not exponents
    "54.58 cm²", "5 m²", "12 m^2", "1000 mm^3", "20 in²", "3 ft³", "4 km² of forest", "6 yd^2",
    # a number with a unit letter is not a coefficient
    "5m = 500 cm", "1m = 100cm", "483g of sugar", "3h + 2h = 5h", "5m + 3m = 8m", "5p + 3p = 8p",
    # powers of ten with a one-digit whole exponent are grade 5 (5.NBT.A.2)
    "10^3", "10³", "10^{3}", "2.5 × 10^3", "10 to the third power", "10 raised to the power of 3",
    "10 squared", "10<sup>2</sup>",
]

TYPESETTING_NEGATIVES = [
    "M^r. Bennet", "M^{rs.} Bennet", "y^e King", "w^{ch} was", "the 1^{st} of May", "the 2^d day",
    "S^t Paul", "T^T so sad", "**Note:** read this", "***START**THE SMALL PRINT", "text[^1]",
    "Washington² said", "1 ^ Lesnar 's reign", "^_^", "the sin(s) of the father",
    "a reading log (see page 3)", "tan(ned) skin", "√ Done", "√Done", "the root of the plant",
    "ΣΧ fraternity", "ΑΣΦ",
]

FORMULA_NEGATIVES = [
    "USA", "NASA", "TV", "OK", "I", "A1", "CO", "NO", "HI", "IV", "UFOs", "PCs", "(ICTs)", "McK",
    "HeLa", "LuPS", "CoV", "GaGa", "NaN", "W3C", "PC2", "NW25", "UC83", "PS4", "Y2K", "B2B", "P2P",
    "H1N1", "H5N8", "(H3N2)", "K12", "K5", "B12", "N95", "V8", "O2", "C3PO", "SARS-CoV-2",
    "VO2 max", "KOH", "Hello", "The", "In", "He", "CNN", "FBI",
    # a number glued to capitals that are not a formula on their own
    "6CO", "5KW", "100HP", "3BHK", "a 4HB pencil", "6PK", "2CV", "1UP", "4PCS", "2K12", "3B12", "12PM",
    "2Co", "1ST", "2ND", "3D", "4K", "5G", 'Use code "50OFF699"',
]


@pytest.mark.parametrize(
    ("family", "text"), [(family, text) for family, texts in POSITIVES.items() for text in texts]
)
def test_table_3_notation_is_found_in_its_family(family, text):
    assert family_of(text) == family, (text, STAGE.score(text))


def test_every_family_has_positives_and_rules():
    assert set(POSITIVES) == set(FAMILIES)
    assert {rule.family for rule in RULES} == set(FAMILIES)


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.name)
def test_each_rule_matches_its_example_and_the_example_lands_in_its_family(rule):
    assert list(rule.finditer(rule.example)), rule.example
    assert family_of(rule.example) == rule.family


@pytest.mark.parametrize(
    "text", K5_NEGATIVES + UNIT_AND_POWER_OF_TEN_NEGATIVES + TYPESETTING_NEGATIVES + FORMULA_NEGATIVES
)
def test_k5_arithmetic_units_prose_and_names_are_kept(text):
    assert STAGE.score(text) == {"family": None, "match": None}
    assert STAGE(text).keep


@pytest.mark.parametrize("token", ["H2O", "CO2", "NaCl", "C6H12O6", "H₂O", "Ca(OH)2", "O₂", "KBr"])
def test_is_chemical_formula_accepts_formulas(token):
    assert is_chemical_formula(token)


@pytest.mark.parametrize("token", ["McK", "HeLa", "W3C", "PS4", "H1N1", "H5N8", "K12", "UFOs", "GaGa", "Xx2"])
def test_is_chemical_formula_rejects_names_and_codes(token):
    assert not is_chemical_formula(token)


def test_a_coefficient_needs_a_formula_or_a_molecular_element_after_it():
    for token in ["6CO2", "6H2O", "2NaCl", "6O2", "3H2", "2Cl2", "3O3", "2O₂", "2(NH4)2SO4"]:
        assert is_formula_with_coefficient(token), token
    for token in ["6CO", "5KW", "100HP", "3BHK", "2K12", "3B12", "6Co", "50OFF699", "2H1N1", "3O"]:
        assert not is_formula_with_coefficient(token), token


def test_a_balanced_equation_lists_every_formula_with_its_coefficient():
    equation = "6CO2 + 6H2O → C6H12O6 + 6O2"
    assert match_all(equation)["chemical_formulas"] == ["C6H12O6", "6CO2", "6H2O", "6O2"]
    assert STAGE.score("Plants take in 6CO2 + 6H2O.") == {"family": "chemical_formulas", "match": "6CO2"}
    assert match_all("CH3(CH2)14CO2H")["chemical_formulas"] == ["CH3(CH2)14CO2H"]  # 14 is a count


def test_powers_of_ten_pass_but_other_powers_of_ten_forms_do_not():
    assert family_of("Write 1,000 as 10^3.") is None
    assert family_of("3.2 × 10^-4 m") == "exponents"  # negative exponent: grade 8 scientific notation
    assert family_of("6.02 × 10^23") == "exponents"  # beyond a one-digit whole exponent
    assert family_of("100^2") == "exponents"


def test_score_reports_the_first_family_in_table_order_with_its_match():
    text = "Water is H2O. If f(x) = x^2 + 2x then f(3) = 15, and √16 = 4."
    assert STAGE.score(text) == {"family": "equations", "match": "x^2 + 2x"}
    only_later = SymbolicStage(families=["roots", "chemical_formulas"])
    assert only_later.score(text) == {"family": "roots", "match": "√16"}


def test_a_long_match_is_truncated():
    token = "(C10H10C10H10C10H10C10H10)10" * 3  # one 84-character formula
    assert STAGE.score(f"It is {token}.") == {"family": "chemical_formulas", "match": token[:MAX_MATCH_CHARS]}
    assert match_all(token)["chemical_formulas"] == [token[:MAX_MATCH_CHARS]]


def test_decide_drops_with_family_reason_and_keeps_clean_text():
    dropped = STAGE("The area is x² square units.")
    assert (dropped.keep, dropped.reason) == (False, "symbolic_exponents")
    assert dropped.scores == {"family": "exponents", "match": "x²"}
    kept = STAGE("Sam has 8 apples and eats 3. How many are left? 8 - 3 = 5.")
    assert (kept.keep, kept.reason) == (True, None)
    assert kept.scores == {"family": None, "match": None}
    for family in FAMILIES:
        example = POSITIVES[family][0]
        assert STAGE(example).reason == f"symbolic_{family}"


def test_families_option_restricts_and_validates():
    assert SymbolicStage(families=["roots"]).score("2x + 3 = 7")["family"] is None
    assert SymbolicStage(families=["equations"]).score("2x + 3 = 7")["family"] == "equations"
    with pytest.raises(ValueError, match="unknown symbolic families \\['exponent'\\]"):
        SymbolicStage(families=["exponent"])
    assert SymbolicStage.name == "symbolic"


def test_match_all_lists_every_match_per_family():
    text = "x^2 and y^3, CO2 and H2O, sin(x), 8 + 6 = 14"
    found = match_all(text)
    assert list(found) == list(FAMILIES)
    assert found["exponents"] == ["x^2", "y^3"]
    assert found["chemical_formulas"] == ["CO2", "H2O"]
    assert found["functions"] == ["sin("]
    assert found["equations"] == found["roots"] == found["inequalities"] == found["calculus"] == []
    assert list(match_all(text, families=["roots", "functions"])) == ["roots", "functions"]
    # a text can hold several families; score names the first in table order
    second_derivative = match_all("d²y/dx²")
    assert second_derivative["exponents"] == ["d²", "dx²"] and second_derivative["calculus"] == ["d²y/dx²"]
    assert match_all("Sam has 3 cats.") == {family: [] for family in FAMILIES}


def test_first_match_agrees_with_score():
    for texts in POSITIVES.values():
        for text in texts:
            found = first_match(text)
            assert found is not None and found == (STAGE.score(text)["family"], STAGE.score(text)["match"])
    assert first_match("Sam has 3 cats.") is None


ALGEBRA_LESSON = """Solving two-step equations
To solve 3x + 5 = 20, first subtract 5 from both sides to get 3x = 15. Then divide both sides
by 3, so x = 5. Check: 3(5) + 5 = 20."""
CHEMISTRY_NOTE = """Photosynthesis turns carbon dioxide and water into sugar: 6CO2 + 6H2O becomes
C6H12O6 and oxygen."""
K5_LESSON = """Adding two-digit numbers
Maria has 24 stickers. Her brother gives her 13 more. How many stickers does she have now?
Line up the tens and the ones: 24 + 13 = 37. Maria has 37 stickers.
Now compare: is 37 > 30? Yes! Write 37 > 30. Use <, > or = to compare 45 and 54: 45 < 54.
At 10:30 a.m. the class measured a rectangle 5 cm by 3 cm. Its area is 15 cm².
Grade 5 challenge: 10^3 = 1,000 and 4 × 10^2 = 400. What is 10³ ÷ 10?"""
K5_STORY = """Chapter 3: The Big Race
On Saturday, Mia and her dog Max ran in the park. Max ran 2x faster than Mia! They stopped at
Room 101 of the library at 5:45 p.m. to return a book about Vitamin C, and Mia paid $1.50.
"OK," said Mr. Lee, "see page 12 (see figure 3)." The score was 21-14."""


def test_realistic_documents():
    assert family_of(ALGEBRA_LESSON) == "equations"
    assert match_all(ALGEBRA_LESSON)["equations"] == ["3x + 5 = 20", "3x = 15"]
    assert family_of(CHEMISTRY_NOTE) == "chemical_formulas"
    assert family_of(K5_LESSON) is None
    assert family_of(K5_STORY) is None


MEGABYTE = 1_000_000
# CPU seconds for scoring 1 MB, best of 3: the benchmark shows a few to a few tens of
# milliseconds per adversarial string (issue 2's target is 50 ms); this bound leaves room for a
# loaded shared machine and still fails on the 0.2-0.6 s the rules cost before anchors.
SCORE_BUDGET_S = 0.2


# Near misses of the anchors added for speed (not in ADVERSARIAL_UNITS, which chapter 5 and the
# benchmark time): an area unit's caret, capitals after a coefficient, elements before a blank,
# a root sign before a blank, a comparison without its second sign.
ANCHOR_NEAR_MISSES = ["cm^2 ", "6CO ", "Mg Mg ", "He 2 ", "√ ", "2 < x "]


@pytest.mark.parametrize("unit", [*ADVERSARIAL_UNITS, *ANCHOR_NEAR_MISSES])
def test_a_megabyte_of_adversarial_text_is_scored_within_budget(unit):
    text = adversarial_text(unit, MEGABYTE)
    assert best_cpu_seconds(lambda: STAGE.score(text)) < SCORE_BUDGET_S


@pytest.mark.parametrize(
    "unit", ["(", "1 ", " ", "√", "ab1", "CaCl", "f(x", "dy/d", "ABCDEFGH", "M^r ", "10^3 "]
)
def test_a_megabyte_without_notation_is_fully_listed_in_linear_time(unit):
    text = adversarial_text(unit, MEGABYTE)
    start = time.process_time()
    found = match_all(text)
    assert time.process_time() - start < 1.0
    assert not any(found.values())


def test_adversarial_inputs_are_whole_repeats_of_every_unit():
    inputs = adversarial_inputs(1_000)
    assert list(inputs) == list(ADVERSARIAL_UNITS)
    for unit, text in inputs.items():
        assert len(text) == 1_000 // len(unit) * len(unit) and text == unit * (len(text) // len(unit))
    with pytest.raises(ValueError):
        adversarial_text("", 10)


def test_match_spans_give_offsets_in_table_order_and_agree_with_score():
    text = "Water is H2O. Solve 2x + 3 = 7 and x^2 then 3x = 9."
    spans = match_spans(text)
    assert all(text[span.start : span.end] == span.text for span in spans)
    assert (spans[0].family, spans[0].text) == (STAGE.score(text)["family"], STAGE.score(text)["match"])
    assert [span.family for span in spans] == sorted((span.family for span in spans), key=FAMILIES.index)
    equations = [span.text for span in spans if span.rule == "coefficient_equation"]
    assert equations == ["2x + 3 = 7", "3x = 9"]
    assert {span.family: [] for span in spans} | {
        family: [span.text for span in spans if span.family == family] for family in FAMILIES
    } == match_all(text)
    assert match_spans("Sam has 3 cats.") == []
    assert {span.family for span in match_spans(text, families=["chemical_formulas"])} == {
        "chemical_formulas"
    }


def _grade(standard: str) -> str:
    return standard.split(".")[0]


def test_mathcamps_k5_is_kept_and_algebra_is_dropped():
    path = config.data_path("mathcamps/mathcamps.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    hits, totals = Counter(), Counter()
    for row in rows:
        grade = _grade(row["standard"])
        totals[grade] += 1
        hits[grade] += STAGE.score(row["statement"])["family"] is not None
    k5 = [grade for grade in totals if grade in {"K", "1", "2", "3", "4", "5"}]
    assert len(k5) == 6 and sum(totals[grade] for grade in k5) > 5000
    assert sum(hits[grade] for grade in k5) == 0  # every K-5 statement passes
    # 6.EE.A.1 (whole-number exponents) and 8.EE.C.7/8 (linear equations) are found
    assert hits["6"] / totals["6"] > 0.15 and hits["8"] / totals["8"] > 0.4


def test_gsm8k_questions_pass_and_algebraic_solutions_are_found():
    path = config.data_path("gsm8k/test.jsonl")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) > 1000
    assert sum(STAGE.score(row["question"])["family"] is not None for row in rows) == 0
    answer_hits = [STAGE.score(row["answer"]) for row in rows]
    rate = sum(hit["family"] is not None for hit in answer_hits) / len(rows)
    assert 0.005 < rate < 0.05  # the few solutions that set up an equation such as 2x + 10 = 40


# Gates, anchors and windows only make the rules faster: every rule must find exactly what a
# scan of the whole text with its pattern (and check) finds.
MORE_FRAGMENTS = [
    "x^2 + 3x = 5", "M ^ r", "10 ^ 3", "H2O ", "NaCl ", "(NaCl)", "USA ", "2y^e", "x ≥ 3 ", "3 <= x ",
    "a < x < b", "f (x)", "Ca(OH)2 ", "1.5^{th}", "12345^{th}", "ab^2", "abcd^2", "T^T ", "2^d ", "x^{1/2}",
    "\\le x \\leq ", "cm^2 ", "y = 3x", "6CO2 + 6H2O", "√ 16", "dy/dx ", "sin(x) ", "lim x→0",
]  # fmt: skip


def whole_text_scan(rule, text: str) -> list[tuple[int, int]]:
    return [m.span() for m in rule.pattern.finditer(text) if rule.check is None or rule.check(m.group(0))]


def fast_scan(rule, text: str) -> list[tuple[int, int]]:
    return [m.span() for m in rule.matches(text)]


def fragment_mixes(count: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    pieces = list(ADVERSARIAL_UNITS) + MORE_FRAGMENTS
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(count)]


def example_texts() -> list[str]:
    negatives = K5_NEGATIVES + UNIT_AND_POWER_OF_TEN_NEGATIVES + TYPESETTING_NEGATIVES + FORMULA_NEGATIVES
    return [text for texts in POSITIVES.values() for text in texts] + negatives + MORE_FRAGMENTS


def demo_texts() -> list[str]:
    lines = config.data_path("demo_corpus/demo_web.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines if line.strip()]


def test_rules_find_exactly_what_a_whole_text_scan_finds():
    demo = demo_texts()
    texts = example_texts() + fragment_mixes(1500) + random.Random(0).sample(demo, 300)
    for rule in RULES:
        for text in texts:
            assert fast_scan(rule, text) == whole_text_scan(rule, text), (rule.name, text[:200])


@pytest.mark.slow
def test_rules_find_exactly_what_a_whole_text_scan_finds_on_every_embedded_text():
    texts = demo_texts() + fragment_mixes(5000, seed=1)
    sources = [("mathcamps/mathcamps.jsonl", ["statement"]), ("gsm8k/test.jsonl", ["question", "answer"])]
    for relative, fields in sources:
        for line in config.data_path(relative).read_text(encoding="utf-8").splitlines():
            if line.strip():
                texts.extend(json.loads(line)[field] for field in fields)
    for rule in RULES:
        for text in texts:
            assert fast_scan(rule, text) == whole_text_scan(rule, text), (rule.name, text[:200])


def test_after_many_missed_anchor_hits_a_rule_scans_the_rest_of_the_text(monkeypatch):
    text = "USA 1 " * 50 + "H2O and NaCl"  # every "USA" is an anchor hit for formulas, none matches
    formula = next(rule for rule in RULES if rule.name == "formula")
    monkeypatch.setattr(engine, "MAX_MISSED_HITS", 3)  # the engine reads it, not the package
    assert fast_scan(formula, text) == whole_text_scan(formula, text) == [(300, 303), (308, 312)]


def test_every_anchored_rule_hits_its_own_example():
    for rule in RULES:
        text = f"So {rule.example}."  # an anchor may sit on the character before a match
        if rule.anchors:
            anchor = rule._anchor_for(text)  # the first anchor whose gate opens
            assert any(pattern.search(text) for pattern in anchor.patterns), rule.name


def test_gates_need_one_needle_of_every_group():
    gate = needles("=", DIGITS)
    assert gate_opens(gate, "x = 5") and not gate_opens(gate, "x = y") and not gate_opens(gate, "x 5")
    assert gate_opens(needles(("squared", "cubed")), "5 cubed")
    assert not gate_opens(needles(("cubed",)), "cube d")
    capital_then_digit = needles((re.compile(r"[A-Z][0-9]"),))
    assert gate_opens(capital_then_digit, "H2") and not gate_opens(capital_then_digit, "2H")
    assert gate_opens(needles(), "anything")


def test_reach_is_the_longest_match_plus_the_longest_look_ahead():
    assert _reach(re.compile(r"ab{1,3}(?=xyz)")) == 4 + 3
    assert _reach(re.compile(r"a(?!b)")) == 1 + 1
    assert _reach(re.compile(r"a(?=b(?=cd))")) == 1 + 3
    assert _reach(re.compile(r"abc")) == 3 + 1  # one character past the match
    with pytest.raises(ValueError, match="unbounded"):
        _reach(re.compile(r"a+"))
