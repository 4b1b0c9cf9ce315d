"""`littlekit.curriculum`: every audit over 1,000 problems of every unit, and the exports.

One module fixture generates, for each unit, 1,000 problems (seed 0) and writes each in both
registers as a scratchpad (the fullest text: statement, steps, answer), plus every fourth problem
once more in the plain or reversed format; the audits run once per record (`verified`) and the
tests below read their results.
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter

import pytest

from littlekit import config
from littlekit.curriculum import audit as au
from littlekit.curriculum import export as ex
from littlekit.curriculum.answers import answer_in_statement, grade
from littlekit.curriculum.formats import render
from littlekit.curriculum.generate import (
    FIELDS,
    generate,
    generate_unit,
    make_problem,
    make_record,
    problem_seed,
    to_record,
)
from littlekit.curriculum.registry import GRADE_ORDER, UNITS
from littlekit.curriculum.units import all_units, check_standards, select_units

PER_UNIT = 1000


@pytest.fixture(scope="module")
def records():
    out = []
    for unit in all_units():
        for index in range(PER_UNIT):
            seed = problem_seed(0, unit.id, index)
            problem = make_problem(unit, seed)
            common = {"seed": seed, "mode": "balanced"}
            for register in ("compact", "prose"):
                out.append(to_record(unit, problem, record_id=f"{unit.id}-{register}-{index}",
                                     register=register, fmt="scratchpad", **common))  # fmt: skip
            if index % 4:
                continue
            register, fmt = ("compact", "plain") if index % 8 else ("prose", "reversed")
            out.append(to_record(unit, problem, record_id=f"{unit.id}-{fmt}-{index}", register=register,
                                 fmt=fmt, **common))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def scratchpads(records):
    return [r for r in records if r["format"] == "scratchpad"]


@pytest.fixture(scope="module")
def verified(records):
    """Per record: the verification problems, the degenerate reasons, the features."""
    return [(au.verify_record(r), au.degenerate_reasons(r), au.features(r["text"])) for r in records]


def standards_table() -> dict[str, str]:
    with config.data_path("standards/standards.csv").open(encoding="utf-8") as handle:
        return {
            row["code"]: row["grade"] for row in csv.DictReader(handle) if row["framework"] == "CCSS-Math"
        }


def test_enough_units_across_the_domains():
    units = all_units()
    k5 = [u for u in units if u.band == "K5"]
    beyond = [u for u in units if u.band == "BEYOND"]
    assert len(k5) >= 24 and len(beyond) >= 10
    assert len({u.id for u in units}) == len(units)
    domains = {code.split(".")[1] for u in k5 for code in u.ccss}
    assert {"OA", "NBT", "NF", "MD"} <= domains
    assert {"NS", "EE", "RP", "F"} <= {code.split(".")[1] for u in beyond for code in u.ccss}


def test_ccss_codes_and_grades_match_the_standards_table():
    table = standards_table()
    assert check_standards(all_units(), table) == []
    for unit in all_units():
        lowest = min((table[c] for c in unit.ccss), key=GRADE_ORDER.index)
        assert unit.grade == lowest, unit.id
    assert check_standards(all_units()[:1], {}) != []  # the check can fail


def test_select_units():
    assert {u.band for u in select_units("K5")} == {"K5"}
    assert {u.band for u in select_units("beyond")} == {"BEYOND"}
    assert len(select_units("all")) == len(UNITS)
    assert [u.id for u in select_units("perimeter,count_on")] == ["perimeter", "count_on"]
    with pytest.raises(KeyError, match="unknown unit"):
        select_units("count_on,nope")


def test_records_have_every_field(records):
    assert all(tuple(r) == FIELDS for r in records)
    assert len({r["id"] for r in records}) == len(records)
    for r in records[:: len(records) // 200]:
        assert isinstance(r["steps"], list) and isinstance(r["ccss"], list) and r["ccss"]
        assert r["grade"] == UNITS[r["unit"]].grade and r["band"] == UNITS[r["unit"]].band


def test_every_record_passes_every_audit(records, verified):
    assert sum(r["format"] == "scratchpad" for r in records) == 2 * PER_UNIT * len(UNITS)
    failures = Counter()
    examples = {}
    for record, (problems, _, _) in zip(records, verified, strict=True):
        for problem in problems:
            failures[(record["unit"], problem)] += 1
            examples.setdefault((record["unit"], problem), record["text"])
    assert not failures, [(key, count, examples[key]) for key, count in failures.most_common(5)]


def test_every_answer_is_graded_correct_and_rederived(scratchpads):
    for record in scratchpads[::7]:
        assert grade("Answer: " + record["answer"], record["answer"])
        value = au.written(au.rederive(record["expression"]), record["answer"])
        assert grade("Answer: " + value, record["answer"]), record


def test_no_degenerate_problems(records, verified):
    flagged = [
        (r["statement"], reasons) for r, (_, reasons, _) in zip(records, verified, strict=True) if reasons
    ]
    assert flagged == [], flagged[:5]
    assert au.review_log(records[:: len(records) // 500]) == []


def test_degenerate_detector_catches_the_seeds_examples():
    def reasons(statement, answer):
        return au.degenerate_reasons({"statement": statement, "answer": answer})

    assert "solved_equation" in reasons("Solve x = 1 for x.", "1")
    assert "cancels_itself" in reasons("Evaluate 1^2 - 1^2.", "0")
    assert "identity_operand" in reasons("Evaluate 1^2 - 1^2.", "0")
    assert "zero_operand" in reasons("What is 345 + 0?", "345")
    assert "answer_in_statement" in reasons("What is 345 + 0?", "345")
    assert "identity_operand" in reasons("What is 7 × 1?", "7")
    assert "cancels_itself" in reasons("What is 12 ÷ 12?", "1")
    assert "trivial_form" in reasons("Solve 1x + 4 = 9 for x.", "5")
    assert "trivial_form" in reasons("Write 4/4 in lowest terms.", "1")
    assert reasons("What is 345 + 278?", "623") == []
    assert reasons("What is -6 - 6?", "-12") == []  # a negative number is not the same term


def test_units_use_exactly_the_features_they_declare(records, verified):
    """K-5: none (no negative number, exponent, variable or equation to solve, cumulatively over
    every K-5 unit); Beyond: exactly the declared ones (none undeclared, none declared in vain)."""
    found: dict[str, set] = {}
    for record, (_, _, features) in zip(records, verified, strict=True):
        found.setdefault(record["unit"], set()).update(features)
    assert set().union(*(found[u.id] for u in all_units() if u.band == "K5")) == set()
    for unit in all_units():
        assert found[unit.id] == set(unit.allows), unit.id


def test_feature_detection():
    assert au.features("What is 5 - 13?\nAnswer: -8") == {"negative"}
    assert au.features("What is 12 - 5?") == set()
    assert au.features("Evaluate 3^4.") == {"exponent"}
    assert au.features("Evaluate 3x + 2 when x = 4.") == {"variable"}
    assert au.features("Solve x + 3 = 7 for x.") == {"variable", "equation"}
    assert au.features("What is 3 + ? = 7") == {"equation"}
    assert au.features("A pizza is cut into 8 slices. Write <, > or =.") == set()


def test_stage4_keeps_k5_and_flags_the_declared_families(records, scratchpads):
    rows = au.symbolic_matrix(scratchpads)
    assert au.family_problems(rows) == []
    from littlekit.filter.symbolic.stage import SymbolicStage

    stage = SymbolicStage()
    for record in records:  # every K-5 format, including plain and reversed
        if record["band"] == "K5" and record["format"] != "scratchpad":
            assert stage.decide(stage.score(record["text"])).keep, record["text"]
    flagged = {r["unit"] for r in rows if r["register"] == "compact" and r["kept"] < 1}
    assert flagged == {u.id for u in all_units() if u.families}
    print("\nunit x family (compact scratchpads, share of texts matched)")
    for row in rows:
        if row["register"] == "compact":
            shares = {
                k: f"{v:.2f}"
                for k, v in row.items()
                if k not in ("unit", "band", "register", "n", "kept", "declared") and v
            }
            print(f"  {row['unit']:34s} {row['band']:6s} kept {row['kept']:.2f} {shares}")


def test_family_check_can_fail():
    rows = [{"unit": "count_on", "band": "K5", "register": "compact", "kept": 0.99}]
    assert au.family_problems(rows)
    from littlekit.filter.symbolic.rules import FAMILIES

    row = {"unit": "exponent_laws", "band": "BEYOND", "register": "compact", "kept": 0.0}
    row.update({f: 0.0 for f in FAMILIES})
    assert au.family_problems([row])  # declares exponents, none matched


def test_verification_catches_broken_records(scratchpads):
    record = next(r for r in scratchpads if r["unit"] == "add_within_1000")
    assert au.verify_record(record) == []
    wrong = dict(record, answer=str(int(record["answer"]) + 1))
    wrong["text"] = render(wrong["statement"], wrong["steps"], wrong["answer"], "scratchpad")
    assert any("SymPy re-derives" in p for p in au.verify_record(wrong))
    odd = dict(record, text=record["text"] + "\nZebra x is -5")
    problems = au.verify_record(odd)
    assert any("undeclared word 'Zebra'" in p for p in problems)
    assert any("negative" in p for p in problems) and any("variable" in p for p in problems)
    assert any(
        "whitespace" in p for p in au.verify_record(dict(record, text=record["text"].replace(" ", "  ", 1)))
    )
    mismatch = dict(record, expression=record["expression"] + " + 0 * 99999")
    assert any("99999" in p for p in au.verify_record(mismatch))


def test_sympy_derives_what_templates_assert():
    assert au.rederive("Eq(18*x + 22, 20)") == au.rederive("-1/9")  # seed 004's example
    assert au.rederive("sqrt(12) * sqrt(3)") == 6
    assert au.written(au.rederive("RoundTo(345, 10)"), "350") == "350"
    assert au.written(au.rederive("Clock(11, 40) - Clock(9, 15)"), "145") == "145"
    assert au.written(au.rederive("2.45 + 3.7"), "6.15") == "6.15"
    with pytest.raises(ValueError):
        au.rederive("Eq(x**2, 4)")  # not linear: refused, not guessed
    roots = [r for r in generate_unit(UNITS["square_and_cube_roots"], 400, seed=1) if "×" in r["statement"]]
    assert any("√12 = 2√3" in step for r in roots for step in r["steps"])
    assert not any(re.search(r"√(\d+)", r["answer"]) for r in roots)  # answers are whole numbers


def test_balanced_sampling_spreads_carries_and_answers():
    unit = UNITS["add_within_1000"]
    shares = {}
    for mode in ("balanced", "uniform"):
        got = list(generate_unit(unit, 3000, seed=0, mode=mode, verify=False))
        carries = Counter(r["carries"] for r in got)
        widths = Counter(r["digits"][1] for r in got)
        shares[mode] = (max(carries.values()) / min(carries.values()), widths[2] / len(got))
    assert shares["balanced"][0] < 1.15 < shares["uniform"][0]  # carry counts even vs skewed
    assert 0.45 < shares["balanced"][1] < 0.55 and shares["uniform"][1] < 0.25  # 2-digit b
    facts = {
        mode: Counter(
            r["answer"]
            for r in generate_unit(UNITS["multiplication_facts"], 3000, seed=0, mode=mode, verify=False)
        )
        for mode in ("balanced", "uniform")
    }
    spread = {mode: max(c.values()) / min(c.values()) for mode, c in facts.items()}
    assert spread["balanced"] < 1.6 < spread["uniform"]  # products balanced, not factor pairs


def test_same_seed_same_records_and_each_seed_rebuilds_its_record():
    units = select_units("count_on,linear_equations,add_unlike_fractions")
    first = generate(units, 30, seed=4, register="prose", fmt="reversed")
    assert first == generate(units, 30, seed=4, register="prose", fmt="reversed")
    assert first != generate(units, 30, seed=5, register="prose", fmt="reversed")
    for record in first[::7]:
        rebuilt = make_record(
            UNITS[record["unit"]], record["seed"], "prose", "reversed", record_id=record["id"]
        )
        assert rebuilt == record
    # a unit's records do not depend on which other units are generated
    alone = generate(select_units("linear_equations"), 30, seed=4, register="prose", fmt="reversed")
    assert alone == [r for r in first if r["unit"] == "linear_equations"]


def test_answer_in_statement_agrees_with_mathcamps(scratchpads):
    from littlekit.curriculum.answers import answer_in_question

    pairs = [(r["statement"], r["answer"]) for r in scratchpads[::11]]
    pairs += [("What is 7 + 76?", "7"), ("What is 0.7 + 2?", "7"), ("Round 350 to the nearest ten.", "350"),
              ("Write 3/4 in lowest terms.", "3/4"), ("It is -12 degrees.", "12")]  # fmt: skip
    for statement, answer in pairs:
        if answer not in {"<", ">", "="} and not answer.startswith("["):
            assert answer_in_statement(statement, answer) == answer_in_question(statement, answer)


def test_audit_table(scratchpads):
    sample = scratchpads[::20]
    table = au.audit_table(sample)
    assert [row["unit"] for row in table] == [u.id for u in all_units()]
    assert sum(row["records"] for row in table) == len(sample)
    assert all(row["failures"] == 0 and row["degenerate"] == 0 for row in table)


def test_jsonl_is_deterministic_and_never_overwritten(tmp_path):
    units = select_units("add_within_1000,percent")
    records = generate(units, 50, seed=0)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert ex.write_jsonl(records, a) == 100
    ex.write_jsonl(generate(units, 50, seed=0), b)
    assert a.read_bytes() == b.read_bytes()
    with pytest.raises(FileExistsError):
        ex.write_jsonl(records, a)
    ex.write_jsonl(records[:3], a, force=True)
    assert ex.read_jsonl(a) == records[:3]
    assert json.loads(b.read_text(encoding="utf-8").splitlines()[0])["id"] == records[0]["id"]


def test_dataset_export():
    records = generate(select_units("count_on,slope_and_rate_of_change"), 20, seed=0)
    dataset = ex.to_dataset(records)
    assert len(dataset) == 40 and list(dataset.column_names) == list(FIELDS)
    assert dataset[0]["steps"] == records[0]["steps"] and dataset[25]["answer"] == records[25]["answer"]


def test_mathcamps_export_is_read_and_graded_by_the_eval(tmp_path):
    from littlekit.evals import mathcamps as mc

    records = generate(all_units(), 3, seed=0, register="prose", fmt="plain")
    ex.write_mathcamps_root(records, tmp_path)
    frame = mc.load(tmp_path)
    assert len(frame) == len(records) and set(frame["type"]) == {mc.ORIGINAL}
    assert set(frame["band"]) == {"K-5", "Beyond K-5"}
    by_id = {r["id"]: r for r in records}
    for _, row in frame.iterrows():
        record = by_id[row["id"]]
        assert row["band"] == ("K-5" if record["band"] == "K5" else "Beyond K-5")
        assert row["grade"] == record["grade"]
        assert grade("Answer: " + record["answer"], row["answer"])
    prompts = mc.question_prompts(frame.head(3), frame)
    assert all(p.endswith("Answer:") for p in prompts)


def test_mixtures():
    records = generate(all_units(), 5, seed=0)
    curriculum = ex.mixture(records, "curriculum", seed=1)
    ranks = [GRADE_ORDER.index(r["grade"]) for r in curriculum]
    assert ranks == sorted(ranks) and sorted(map(id, curriculum)) == sorted(map(id, records))
    uniform = ex.mixture(records, "uniform", seed=1)
    assert uniform != records and sorted(r["id"] for r in uniform) == sorted(r["id"] for r in records)
    assert uniform == ex.mixture(records, "uniform", seed=1)
    assert [GRADE_ORDER.index(r["grade"]) for r in uniform] != sorted(
        GRADE_ORDER.index(r["grade"]) for r in uniform
    )
    assert ex.mixture(records, "unit") == records
    with pytest.raises(ValueError, match="unknown order"):
        ex.mixture(records, "easy-first")


def test_cancelling_terms_respect_precedence():
    def reasons(statement):
        return au.degenerate_reasons({"statement": statement, "answer": "999"})

    assert reasons("What is 3 × 2 - 2?") == [] and reasons("What is 2 - 2 × 3?") == []
    assert reasons("What is 5 + 2 - 2?") == ["cancels_itself"]
