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
