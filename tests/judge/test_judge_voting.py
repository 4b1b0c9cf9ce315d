import pytest

from littlekit.judge.voting import vote


def test_majority_takes_the_most_frequent_band():
    assert vote({"language": "K5", "context": "K5", "subject": "K12"}) == "K5"


def test_majority_tie_goes_to_the_higher_grade():
    assert vote({"language": "K5", "context": "K8", "subject": "K12"}) == "K12"
    assert vote({"language": "K8", "context": "K5"}) == "K8"
    assert vote({"a": "K5", "b": "K5", "c": "OOS", "d": "OOS"}) == "OOS"


def test_majority_ignores_failed_votes():
    assert vote({"language": "K5", "context": None, "subject": None}) == "K5"
    assert vote({"language": "K5", "context": "K8", "subject": None}) == "K8"
    assert vote({"language": None, "context": None}) is None
    assert vote({}) is None


def test_unanimous_needs_every_prompt_to_agree():
    assert vote({"language": "K5", "context": "K5", "subject": "K5"}, "unanimous") == "K5"
    assert vote({"language": "K5", "context": "K5", "subject": "K8"}, "unanimous") is None
    assert vote({"language": "K5", "context": "K5", "subject": None}, "unanimous") is None
    assert vote({}, "unanimous") is None


def test_bad_mode_and_bad_band_are_errors():
    with pytest.raises(ValueError, match="vote mode"):
        vote({"a": "K5"}, "plurality")
    with pytest.raises(ValueError, match="unknown band"):
        vote({"a": "K6"})


def test_revote_recounts_a_judge_record():
    from littlekit.judge.voting import revote

    record = {"id": "d1", "band": "K8", "votes": {"language": "K5", "context": "K8", "subject": "K8"},
              "judge": {"model": "m", "vote": "majority"}, "source": "llm-judge"}
    unanimous = revote(record, "unanimous")
    assert unanimous["band"] is None and unanimous["judge"] == {"model": "m", "vote": "unanimous"}
    assert record["band"] == "K8" and record["judge"]["vote"] == "majority"  # the input is left alone
    assert revote(unanimous, "majority")["band"] == "K8"
    with pytest.raises(ValueError, match="not made by the judge"):
        revote({**record, "judge": None}, "majority")
