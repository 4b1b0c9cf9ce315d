"""littlekit.analysis.symbolic_report: the tables chapter 5 is built from agree with the stage itself."""

from __future__ import annotations

import time

import pandas as pd
import pytest

from littlekit.analysis.symbolic_report import (
    PAPER_TABLE3,
    examples,
    family_table,
    growth_exponent,
    hit_rates,
    hits_frame,
    in_context,
    mathcamps_grade,
    rule_table,
    spans_frame,
    time_scoring,
)
from littlekit.filter.symbolic.rules import FAMILIES, RULES
from littlekit.filter.symbolic.stage import SymbolicStage

TEXTS = [
    "Sam has 3 cats and 8 + 6 = 14.",
    "Solve 2x + 3 = 7, then compute x^2 and H2O.",
    "Water is H2O; carbon dioxide is CO2.",
    "",
    "Powers of ten: 10^3 = 1,000. But f(x) = 2x is a function.",
]


def test_family_table_lists_every_family_and_table3():
    table = family_table()
    assert list(table.index) == list(FAMILIES)
    assert set(table.index[table["in_table3"]]) == set(PAPER_TABLE3)
    assert not table.loc["chemical_formulas", "in_table3"]
    assert table["rules"].sum() == len(RULES)
    assert table["examples_fire"].all()


def test_rule_table_has_one_row_per_rule_and_each_example_fires():
    rules = rule_table()
    assert len(rules) == len(RULES)
    assert rules["own_family_fires"].all()


def test_hits_frame_agrees_with_the_stage():
    stage = SymbolicStage()
    hits = hits_frame(TEXTS)
    for text, row in zip(TEXTS, hits.itertuples(index=False), strict=True):
        score = stage.score(text)
        assert (row.family if row.dropped else None) == score["family"]
        assert (row.match if row.dropped else None) == score["match"]
    assert hits["dropped"].tolist() == [False, True, True, False, True]
    assert hits.loc[1, "family"] == "equations" and hits.loc[1, "n_exponents"] == 1
    assert hits.loc[1, "n_chemical_formulas"] == 1 and hits.loc[2, "n_chemical_formulas"] == 2
    count_columns = [f"n_{family}" for family in FAMILIES]
    assert (hits[count_columns].sum(axis=1) == hits["n_matches"]).all()


def test_spans_frame_offsets_point_at_the_matched_text():
    spans = spans_frame(TEXTS, index=list("abcde"))
    assert set(spans["doc"]) == {"b", "c", "e"}
    by_label = dict(zip("abcde", TEXTS, strict=True))
    for row in spans.itertuples(index=False):
        assert by_label[row.doc][row.start : row.end] == row.match
    assert len(spans) == hits_frame(TEXTS)["n_matches"].sum()


def test_hit_rates_add_up_per_group():
    hits = hits_frame(TEXTS).assign(group=["k5", "beyond", "beyond", "k5", "beyond"])
    table = hit_rates(hits, by="group")
    assert table.loc["beyond", "n"] == 3 and table.loc["beyond", "dropped"] == 3
    assert table.loc["k5", "dropped"] == 0 and table.loc["k5", "share"] == 0.0
    assert (table[list(FAMILIES)].sum(axis=1) == table["dropped"]).all()
    assert table.loc["beyond", "any_chemical_formulas"] == pytest.approx(2 / 3)
    assert (table["ci_low"] <= table["share"] + 1e-12).all() and (table["share"] <= table["ci_high"]).all()
    overall = hit_rates(hits)
    assert overall.index.tolist() == ["all"] and overall.loc["all", "dropped"] == 3


def test_in_context_marks_the_span_and_cuts_long_sides():
    text = "a" * 100 + "x^2" + "\n" + "b" * 100
    shown = in_context(text, 100, 103, width=5)
    assert shown == "…aaaaa«x^2» bbbb…"
    assert in_context("x^2", 0, 3) == "«x^2»"
    with pytest.raises(ValueError):
        in_context("abc", 2, 5)


def test_examples_are_drawn_per_family_and_repeat_with_the_seed():
    texts = {i: f"Case {i}: water is H2O and 2x + {i} = 9." for i in range(20)}
    spans = spans_frame(list(texts.values()), index=list(texts))
    first = examples(spans, texts, per_family=3, seed=1)
    assert first.groupby("family").size().to_dict() == {"chemical_formulas": 3, "equations": 3}
    assert first.equals(examples(spans, texts, per_family=3, seed=1))
    assert all("«" in context for context in first["context"])
    assert len(examples(spans, texts, per_family=50, seed=1)) == 40


def test_mathcamps_grade():
    assert mathcamps_grade("K.CC.A.1") == "K"
    assert mathcamps_grade("3.MD.D.8-polygon") == "3"
    assert mathcamps_grade("8.EE.C.7") == "8"
    with pytest.raises(ValueError):
        mathcamps_grade("HSA.REI.B.3")


def test_time_scoring_and_growth_exponent():
    timing = time_scoring(len, {"short": "ab", "long": "abcd"}, repeats=2, clock=time.perf_counter)
    assert timing["input"].tolist() == ["short", "long"] and timing["chars"].tolist() == [2, 4]
    assert (timing["seconds"] >= 0).all()
    assert growth_exponent([1e3, 2e3, 4e3], [1.0, 2.0, 4.0]) == pytest.approx(1.0)
    assert growth_exponent([1e3, 2e3, 4e3], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        growth_exponent([5, 5], [1.0, 2.0])


def test_hits_frame_of_nothing_has_the_columns():
    empty = hits_frame([])
    assert isinstance(empty, pd.DataFrame) and len(empty) == 0 and "n_equations" in empty
