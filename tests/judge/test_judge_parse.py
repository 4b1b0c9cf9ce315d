import pytest

from littlekit.judge.parse import JudgeParseError, normalise_band, parse_answer, parse_band


@pytest.mark.parametrize(
    ("answer", "band"),
    [
        ('{"rationale": "plain words", "band": "K5"}', "K5"),
        ('{"band": "K12", "rationale": "functions"}', "K12"),
        ('Sure.\n```json\n{"rationale": "ratios", "band": "K8"}\n```\n', "K8"),
        ('Thinking first... {"draft": 1} then {"band": "OOS", "rationale": "graduate"}', "OOS"),
        ('{"Band": "middle school"}', "K8"),
        ('{"grade_band": "K-5"}', "K5"),
        ('{"band": "high school (grades 9-12)"}', "K12"),
        ('{"rationale": "cut off by the cap", "band": "K8"', "K8"),
        ("K8", "K8"),
        ("The text uses long clauses.\nAnswer: K8", "K8"),
        ("Reasoning here.\n**Band:** elementary", "K5"),
        ("Final answer: out-of-scope.", "OOS"),
        ("Label = high", "K12"),
        ("Answer: K12 (high school)", "K12"),
        ("grade 7", "K8"),
        ("Grades 6–8", "K8"),
    ],
)
def test_accepted_answers(answer, band):
    assert parse_band(answer) == band


def test_rationale_is_kept():
    judgement = parse_answer('{"rationale": "uses photosynthesis", "band": "K5"}')
    assert judgement.rationale == "uses photosynthesis"


@pytest.mark.parametrize(
    "answer",
    [
        "",
        None,
        "I cannot tell.",
        "It is either K5 or K8.",  # two bands on the last line: ambiguous
        '{"band": "grade 14"}',
        '{"band": "college"}',
        '{"choices": []}',
        "Answer: K9",
    ],
)
def test_unparseable_answers_raise_with_the_text(answer):
    with pytest.raises(JudgeParseError) as info:
        parse_answer(answer)
    assert info.value.answer == (answer or "")


def test_json_band_wins_over_last_line():
    assert parse_band('{"band": "K12"}\nSome trailing words: K5') == "K12"


@pytest.mark.parametrize(
    ("value", "band"),
    [("k5", "K5"), ("Elementary School", "K5"), ("MIDDLE", "K8"), ("9 - 12", "K12"), ("OOS", "OOS"),
     ("out of scope", "OOS"), ("Grade K", "K5"), ("[K8]", "K8"), ("nonsense", None), ("K 5", None)],
)
def test_normalise_band(value, band):
    assert normalise_band(value) == band
