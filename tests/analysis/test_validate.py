import math

import pandas as pd
import pytest

from littlekit.analysis import validate as v
from littlekit.databuild.corpora import load_standards
from littlekit.filter.cascade import Cascade, cascade_outcomes
from littlekit.filter.frequency import FrequencyStage
from littlekit.filter.symbolic.stage import SymbolicStage
from littlekit.grades import beyond_label
from littlekit.stats import wilson_interval

# symbolic drops "x^2"-style exponents; frequency (a one-word table) drops "photosynthesis".
PASSAGES = pd.DataFrame(
    {
        "id": ["k1", "k2", "k3", "b1", "b2", "b3", "b4"],
        "band": ["K5", "K5", "K5", "K8", "K12", "OOS", "K8"],
        "text": [
            "The cat sat on the mat. It was warm.",
            "Square it: x^2 is big.",
            "Plants use photosynthesis to grow.",
            "We found that 5^3 = 125.",
            "Photosynthesis happens in leaves.",
            "Photosynthesis and y^2 here.",
            "A dog ran home.",
        ],
    }
)
STAGES = ["symbolic", "frequency"]


@pytest.fixture
def outcomes():
    cascade = Cascade([SymbolicStage(), FrequencyStage({"photosynthesis": 6.0, "cat": 0.0})])
    frame, report = cascade_outcomes(cascade, PASSAGES)
    frame["group"] = frame["band"].map(beyond_label)
    assert report.read == len(PASSAGES)
    return frame


def test_outcomes_record_where_each_passage_left(outcomes):
    left = [stage if isinstance(stage, str) else None for stage in outcomes["stage"]]
    assert list(left) == [None, "symbolic", "frequency", "symbolic", "frequency", "symbolic", None]
    assert list(outcomes["exit_index"]) == [2, 0, 1, 0, 1, 0, 2]
    assert list(outcomes["kept"]) == [True, False, False, False, False, False, True]
    assert outcomes.loc[1, "reason"] == "symbolic_exponents"
    assert list(outcomes["band"]) == list(PASSAGES["band"])  # the frame's columns travel along


def test_duplicate_ids_are_refused():
    with pytest.raises(ValueError, match="duplicate"):
        cascade_outcomes(Cascade([SymbolicStage()]), pd.concat([PASSAGES, PASSAGES]))


def test_retention_is_cumulative_per_group(outcomes):
    table = v.retention_table(outcomes, STAGES)
    assert list(table["stage"].unique()) == ["raw", "symbolic", "frequency"]
    assert list(table["label"].unique()) == ["Raw", "Symbolic", "Frequency"]
    counts = table.set_index(["stage", "group"])["retained"]
    # K-5: 3 raw, k2 leaves at symbolic, k3 at frequency; Beyond: 4 raw, b1 and b3 at symbolic, b2 after
    assert counts.to_dict() == {
        ("raw", "Beyond K-5"): 4,
        ("raw", "K-5"): 3,
        ("symbolic", "Beyond K-5"): 2,
        ("symbolic", "K-5"): 2,
        ("frequency", "Beyond K-5"): 1,
        ("frequency", "K-5"): 1,
    }
    row = table[(table["stage"] == "frequency") & (table["group"] == "K-5")].iloc[0]
    assert row["share"] == pytest.approx(1 / 3)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson_interval(1, 3))
    wide = v.retention_wide(table)
    assert list(wide.index) == ["Raw", "Symbolic", "Frequency"]
    assert wide.loc["Symbolic", "Beyond K-5"] == pytest.approx(0.5)


def test_retention_per_band(outcomes):
    table = v.retention_table(outcomes, STAGES, by="band")
    final = table[table["stage"] == "frequency"].set_index("band")
    assert final["n"].to_dict() == {"K12": 1, "K5": 3, "K8": 2, "OOS": 1}
    assert final["retained"].to_dict() == {"K12": 0, "K5": 1, "K8": 1, "OOS": 0}


def test_target_check_computes_both_verdicts(outcomes):
    table = v.retention_table(outcomes, STAGES)
    check = v.target_check(table)
    assert check.loc["K-5", "share"] == pytest.approx(1 / 3)
    assert not check.loc["K-5", "holds"]  # 33% < 35%
    assert not check.loc["Beyond K-5", "holds"]  # 25% > 2%
    loose = v.target_check(table, min_k5=0.3, max_beyond=0.25)
    assert loose["holds"].all()
    with pytest.raises(ValueError, match="Beyond K-5"):
        v.target_check(table[table["group"] == "K-5"])


def test_retained_vs_removed_by_hand():
    texts = ["One two three four. Five six.", "Elephants gathered.", "A b c d e f g h i j"]
    table = v.retained_vs_removed(texts, [True, True, False])
    assert table.loc["Word count (median)", "Retained"] == pytest.approx(4.0)  # 6 and 2 words
    assert table.loc["Word count (mean)", "Removed"] == pytest.approx(10.0)
    # sentence lengths: 3 (4 then 2 tokens) and 2
    assert table.loc["Avg. sentence length (words)", "Retained"] == pytest.approx(2.5)
    # long words: 0/6 and 2/2 ("elephants", "gathered")
    assert table.loc[v.TABLE4_ROWS[3], "Retained"] == pytest.approx(0.5)
    # the removed text has no word token of two letters or more
    assert math.isnan(table.loc["Avg. sentence length (words)", "Removed"])
    assert table.loc["n"].tolist() == [2.0, 1.0]
    assert list(v.PAPER_TABLE4.index) == list(v.TABLE4_ROWS)


SMALL_STANDARDS = pd.DataFrame(
    {
        "framework": ["NGSS", "NGSS", "NGSS", "NGSS", "CCSS-ELA", "CCSS-ELA", "NGSS"],
        "code": ["a", "b", "c", "d", "W.6.1", "RL.6.1", "e"],
        "grade": ["2", "6", "7", "9", "6", "6", "K-12"],
        "text": [
            "Describe how plants grow in sunlight.",
            "Describe kinetic energy of moving objects, and thermal energy in the system.",
            "Explain how kinetic energy changes; use plate tectonics theory.",
            "Model thermal energy with cellular respiration data.",
            "Write essays while avoiding plagiarism.",
            "Cite textual evidence from the story.",
            "Anchor standard about kinetic energy and magnetic fields.",
        ],
    }
)


def test_standards_terms_rules_and_ranking():
    terms = v.standards_terms(SMALL_STANDARDS, n_terms=20)
    found = list(terms["term"])
    # most statements first: kinetic energy (b, c) and thermal energy (b, d), rarer words first
    assert found[:2] == ["kinetic energy", "thermal energy"]
    assert terms.set_index("term").loc["kinetic energy", "statements"] == 2
    assert "textual evidence" in found  # after "cite", a lead verb: no longer phrase
    # "cellular respiration" is always followed by "data": only the longer phrase is a term
    assert "cellular respiration" not in found and "cellular respiration data" in found
    assert "plants grow" not in found  # only in a K-5 statement
    assert "avoiding plagiarism" not in found  # writing strand: a skill, not mined
    assert "magnetic fields" not in found  # only in a cross-grade anchor
    assert not any(t.startswith(("describe ", "explain ", "cite ")) for t in found)  # lead verbs
    assert "moving objects" not in found  # starts with an "-ing" word
    # "plate tectonics" is always followed by "theory": only "plate tectonics theory" is a term
    assert "plate tectonics" not in found and "plate tectonics theory" in found
    assert all(2 <= len(t.split()) <= 3 for t in found)


def test_standards_terms_exclude_blocklist_vocabulary_and_stop_at_n():
    terms = v.standards_terms(SMALL_STANDARDS, n_terms=20, excluded_words={"energy"})
    assert not any("energy" in t.split() for t in terms["term"])
    assert len(v.standards_terms(SMALL_STANDARDS, n_terms=2)) == 2


def test_embedded_standards_give_the_papers_count_of_grade_six_plus_terms():
    standards = load_standards()
    terms = v.standards_terms(standards, excluded_words={"rational"})
    assert len(terms) == v.PAPER_N_TERMS
    assert {"kinetic energy", "textual evidence", "pythagorean theorem"} <= set(terms["term"])
    assert not any("rational" in t.split() for t in terms["term"])
    k5_text = standards[standards["grade"].isin(v.LOWER_GRADES)]["text"]
    assert not any(v.term_hits(k5_text, terms["term"]))  # none occurs in a K-5 statement
    assert terms["statements"].is_monotonic_decreasing


def test_term_hits_stay_inside_punctuation():
    hits = v.term_hits(
        [
            "Kinetic  energy grows.",
            "It was kinetic. Energy too.",
            "Pythagorean theorem and kinetic energy",
            "",
        ],
        ["kinetic energy", "pythagorean theorem"],
    )
    assert hits == [["kinetic energy"], [], ["kinetic energy", "pythagorean theorem"], []]
    assert v.term_hits(["kinetic energy"], []) == [[]]


def test_leakage_table_counts_passages_with_a_term():
    frame = pd.DataFrame(
        {
            "kept": [True, True, True, False, False],
            "text": [
                "a cat",
                "kinetic energy here",
                "a dog",
                "kinetic energy, thermal energy",
                "thermal energy",
            ],
        }
    )
    table = v.leakage_table(frame, ["kinetic energy", "thermal energy"])
    assert table.loc[True, "with_term"] == 1 and table.loc[True, "n"] == 3
    assert table.loc[False, "share"] == pytest.approx(1.0)
    assert table.loc[False, "terms_found"] == "thermal energy (2), kinetic energy (1)"
    only_removed = v.leakage_table(frame[~frame["kept"]], ["kinetic energy"], levels=[True, False])
    assert list(only_removed.index) == [True, False]
    assert only_removed.loc[True, "n"] == 0 and math.isnan(only_removed.loc[True, "share"])
    assert only_removed.loc[False, "with_term"] == 1


def test_dropped_examples_first_per_reason_in_cascade_order(outcomes):
    examples = v.dropped_examples(outcomes, per_reason=1, stages=STAGES, chars=12)
    assert list(examples["stage"]) == ["symbolic", "frequency"]
    assert list(examples["id"]) == ["k2", "k3"]  # first in input order
    assert examples.loc[0, "excerpt"] == "Square it: x ..."
    two = v.dropped_examples(outcomes, per_reason=2, stages=STAGES)
    assert list(two["id"]) == ["k2", "b1", "k3", "b2"]


def test_stage_reasons_per_group(outcomes):
    table = v.stage_reasons(outcomes)
    assert table.loc[("symbolic", "symbolic_exponents"), "Beyond K-5"] == 2
    assert table.loc[("frequency", "frequency_blocklist"), "K-5"] == 1


def test_plot_retention_draws_one_line_per_group_and_the_papers_marks(outcomes):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    table = v.retention_table(outcomes, STAGES)
    v.plot_retention(table, ax, order=["K-5", "Beyond K-5"], paper={"K-5": 0.35})
    lines = ax.get_lines()
    assert len(lines) == 3  # two groups, one paper mark
    assert list(lines[0].get_ydata()) == pytest.approx([1.0, 2 / 3, 1 / 3])
    assert list(lines[1].get_ydata()) == [0.35] and list(lines[1].get_xdata()) == [2]
    assert list(lines[2].get_ydata()) == pytest.approx([1.0, 0.5, 0.25])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["Raw", "Symbolic", "Frequency"]
    plt.close(fig)


def test_stage_drop_shares_count_only_the_passages_a_stage_sees():
    from littlekit.analysis.validate import stage_drop_shares

    outcomes = pd.DataFrame({
        "group": ["K-5", "K-5", "K-5", "Beyond K-5", "Beyond K-5"],
        "exit_index": [0, 2, 1, 1, 0],  # stages a, b: 0 = dropped by a, 1 = by b, 2 = kept
    })
    table = stage_drop_shares(outcomes, ["a", "b"], "b")
    assert table.loc["K-5", ["reaching", "dropped"]].tolist() == [2, 1]
    assert table.loc["Beyond K-5", ["reaching", "dropped"]].tolist() == [1, 1]
    assert table.loc["K-5", "drop_share"] == 0.5 and table.loc["Beyond K-5", "ci_high"] == 1.0
