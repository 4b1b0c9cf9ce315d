import pandas as pd
import pytest

from littlekit.config import EMBEDDED_DATA
from littlekit.judge.prompts import (
    JudgePrompt,
    build_prompts,
    load_prompts,
    pick_evenly,
    save_prompts,
    standard_group,
    truncate,
)

ROWS = [
    ("CCSS-Math", "3.NF.A.1", "3", "K5", "math", "Understand a fraction 1/b as the quantity."),
    ("CCSS-Math", "7.RP.A.2", "7", "K8", "math", "Recognize proportional relationships."),
    ("CCSS-Math", "HSF.IF.A.1", "9-12", "K12", "math", "Understand that a function assigns."),
    ("NGSS", "3-LS1-1", "3", "K5", "life science", "Develop models of life cycles of organisms."),
    ("NGSS", "MS-PS1-1", "6-8", "K8", "physical science", "Develop models of atomic composition."),
    ("NGSS", "HS-ESS1-1", "9-12", "K12", "earth and space science", "Model the life span of the sun."),
    ("NGSS", "3-5-ETS1-1", "3-5", "K5", "engineering", "Define a simple design problem."),
    ("CCSS-ELA", "CCSS.ELA-Literacy.L.4.4", "4", "K5", "ELA", "Determine the meaning of unknown words."),
    ("CCSS-ELA", "CCSS.ELA-Literacy.L.8.1", "8", "K8", "ELA", "Explain the function of verbals."),
    ("CCSS-ELA", "CCSS.ELA-Literacy.RI.5.3", "5", "K5", "ELA", "Explain relationships between events."),
    ("CCSS-ELA", "CCSS.ELA-Literacy.RI.9-10.8", "9-10", "K12", "ELA", "Delineate and evaluate the argument."),
    ("CCSS-ELA", "CCSS.ELA-Literacy.W.4.1", "4", "K5", "ELA", "Write opinion pieces."),
]


@pytest.fixture()
def standards():
    return pd.DataFrame(ROWS, columns=["framework", "code", "grade", "band", "subject", "text"])


def test_three_prompts_quote_their_own_standards(standards):
    language, context, subject = build_prompts(standards)
    assert [p.name for p in (language, context, subject)] == ["language", "context", "subject"]
    assert "Determine the meaning of unknown words" in language.system
    assert "Explain the function of verbals" in language.system
    assert "Explain relationships between events" not in language.system
    assert "Explain relationships between events" in context.system
    assert "Delineate and evaluate the argument" in context.system
    for text in ("Understand a fraction", "life cycles", "atomic composition", "life span of the sun"):
        assert text in subject.system
    for prompt in (language, context, subject):
        assert "Write opinion pieces" not in prompt.system  # writing standards are not quoted
        assert "Define a simple design problem" not in prompt.system  # nor engineering design
        assert '"band"' in prompt.system and "OOS" in prompt.system


def test_generic_standards_repeated_across_bands_are_left_out(standards):
    generic = "Demonstrate command of the conventions of standard English grammar."
    extra = pd.DataFrame(
        [("CCSS-ELA", "L.3.1", "3", "K5", "ELA", generic),
         ("CCSS-ELA", "L.7.1", "7", "K8", "ELA", generic),
         ("CCSS-ELA", "L.5.5", "5", "K5", "ELA", "Show <em>understanding</em> of figurative language.")],
        columns=standards.columns,
    )
    language = build_prompts(pd.concat([standards, extra]))[0].system
    assert generic not in language
    assert "Show understanding of figurative language." in language  # HTML tags stripped


def test_subject_rubric_is_ordered_by_band(standards):
    subject = build_prompts(standards)[2].system
    assert subject.index("K5:") < subject.index("Understand a fraction") < subject.index("K8:")
    assert subject.index("K8:") < subject.index("atomic composition") < subject.index("K12:")


def test_versions_are_stable_and_track_the_text(standards):
    first = [p.version for p in build_prompts(standards)]
    assert first == [p.version for p in build_prompts(standards.sample(frac=1, random_state=3))]
    assert len(set(first)) == 3
    changed = standards.copy()
    changed.loc[0, "text"] = "Understand a fraction as a number on the number line."
    second = [p.version for p in build_prompts(changed)]
    assert second[0] == first[0] and second[1] == first[1]  # no maths in language or context
    assert second[2] != first[2]
    assert build_prompts(standards, max_chars=100)[0].version != first[0]


def test_missing_standards_are_a_clear_error(standards):
    no_ela = standards[standards["framework"] != "CCSS-ELA"]
    with pytest.raises(ValueError, match="language standards"):
        build_prompts(no_ela)
    with pytest.raises(ValueError, match="lacks columns"):
        build_prompts(standards.drop(columns=["band"]))


def test_messages_carry_the_text_once_and_cut_long_ones():
    prompt = JudgePrompt(name="p", system="sys", max_chars=30)
    messages = prompt.messages("The cat sat on the mat.")
    assert messages[0] == {"role": "system", "content": "sys"}
    assert messages[1]["content"].count("The cat sat on the mat.") == 1
    long_text = "word " * 50
    assert truncate(long_text, 30).endswith("[...]") and len(truncate(long_text, 30)) < 40
    assert "{text}" not in prompt.messages("{ braces } are fine")[1]["content"].replace("{ braces }", "")


@pytest.mark.parametrize(
    ("framework", "code", "subject", "group"),
    [
        ("CCSS-Math", "4.NBT.B.5", "", "math"),
        ("NGSS", "MS-LS2-3", "", "life"),
        ("NGSS", "K-PS2-1", "", "physical"),
        ("NGSS", "HS-ESS2-4", "", "earth_space"),
        ("NGSS", "K-2-ETS1-1", "", None),
        ("NGSS", "odd-code", "Earth and Space Science", "earth_space"),
        ("CCSS-ELA", "RL.K.1", "", "ela_reading"),
        ("CCSS-ELA", "CCSS.ELA-Literacy.RF.1.2", "", None),
        ("CCSS-ELA", "L.9-10.4", "", "ela_language"),
        ("CCSS-ELA", "CCSS.ELA-Literacy.SL.3.1", "", None),
    ],
)
def test_standard_groups(framework, code, subject, group):
    assert standard_group(framework, code, subject) == group


def test_pick_evenly_spreads_and_includes_both_ends():
    assert pick_evenly(list("abcdefghi"), 3) == ["a", "e", "i"]
    assert pick_evenly(list("ab"), 5) == ["a", "b"]
    assert pick_evenly(list("abc"), 0) == []


def test_prompts_round_trip_through_json(tmp_path, standards):
    prompts = build_prompts(standards)
    save_prompts(prompts, tmp_path / "prompts.json")
    loaded = load_prompts(tmp_path / "prompts.json")
    assert loaded == prompts and [p.version for p in loaded] == [p.version for p in prompts]


EMBEDDED_STANDARDS = EMBEDDED_DATA / "standards/standards.csv"


@pytest.mark.skipif(not EMBEDDED_STANDARDS.exists(), reason="standards not built yet")
def test_prompts_from_the_embedded_standards():
    prompts = build_prompts()
    for prompt in prompts:
        for band in ("K5:", "K8:", "K12:"):
            assert band in prompt.system, (prompt.name, band)
        assert len(prompt.system) < 12_000
