"""The cascade: stage order, per-document outcomes, error isolation, and a report that adds up."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from littlekit.filter.base import Decision, Stage
from littlekit.filter.cascade import (
    DROPPED,
    ERRORED,
    KEPT,
    BatchScoringError,
    Cascade,
    CascadeReport,
    decide_all,
)
from littlekit.filter.encoder import AGREEMENT_GATE
from littlekit.filter.registry import (
    StageOptions,
    build_stages,
    check_gate_order,
    known_stages,
    stage_names,
)
from littlekit.io import Document, RecordError


class LengthStage(Stage):
    """Keep documents of at most `max_words` whitespace-separated words; remembers what it saw."""

    name = "length"

    def __init__(self, max_words: int = 5):
        self.max_words = max_words
        self.seen: list[str] = []

    def score(self, text: str) -> dict[str, Any]:
        self.seen.append(text)
        return {"n_words": len(text.split())}

    def decide(self, scores: dict[str, Any]) -> Decision:
        if scores["n_words"] > self.max_words:
            return Decision(False, "too_long", scores)
        return Decision(True, None, scores)


class NoDigitsStage(Stage):
    """Drop documents with a digit; raise on the word "boom" (a stage bug on one document)."""

    name = "no_digits"

    def __init__(self):
        self.seen: list[str] = []

    def score(self, text: str) -> dict[str, Any]:
        self.seen.append(text)
        if "boom" in text:
            raise ValueError("cannot score boom")
        return {"digits": sum(ch.isdigit() for ch in text)}

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(scores["digits"] == 0, None if scores["digits"] == 0 else "has_digits", scores)


class BatchVowelStage(Stage):
    """A batch-scored stage (the fastText/encoder shape) whose batch call fails on "boom"."""

    name = "vowels"

    def __init__(self):
        self.batch_calls = 0

    def score(self, text: str) -> dict[str, Any]:
        if "boom" in text:
            raise RuntimeError("bad document")
        return {"vowels": sum(ch in "aeiou" for ch in text.lower())}

    def score_batch(self, texts: list[str]) -> list[dict[str, Any]]:
        self.batch_calls += 1
        return [self.score(text) for text in texts]

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(scores["vowels"] > 0, None if scores["vowels"] else "no_vowels", scores)


def doc(i: int, text: str) -> Document:
    return Document(str(i), text, {"id": i, "text": text}, i)


DOCS = [
    doc(1, "the cat sat"),  # kept
    doc(2, "one two three four five six seven"),  # length too_long
    doc(3, "room 101"),  # no_digits has_digits
    RecordError(4, "bad_json", "Expecting value"),
    doc(5, "boom goes it"),  # no_digits raises
    doc(6, "a dog"),  # kept
    RecordError(7, "empty_text"),
]


def test_each_record_gets_one_outcome_in_input_order():
    cascade = Cascade([LengthStage(), NoDigitsStage()], batch_size=3)
    outcomes = list(cascade.run(DOCS))
    summary = [(o.line, o.status, o.stage, o.reason) for o in outcomes]
    assert summary == [
        (1, KEPT, None, None),
        (2, DROPPED, "length", "too_long"),
        (3, DROPPED, "no_digits", "has_digits"),
        (4, ERRORED, None, "bad_json"),
        (5, ERRORED, "no_digits", "stage_error:no_digits"),
        (6, KEPT, None, None),
        (7, ERRORED, None, "empty_text"),
    ]
    assert outcomes[4].detail == "ValueError: cannot score boom"
    assert outcomes[0].scores == {"length": {"n_words": 3}, "no_digits": {"digits": 0}}
    assert outcomes[1].scores == {"length": {"n_words": 7}}


def test_a_stage_sees_only_what_the_previous_stage_kept():
    first, second = LengthStage(), NoDigitsStage()
    list(Cascade([first, second]).run(DOCS))
    assert len(first.seen) == 5  # every document, none of the input errors
    assert "one two three four five six seven" not in second.seen
    assert second.seen == ["the cat sat", "room 101", "boom goes it", "a dog"]


def test_report_counts_add_up_per_stage_and_reason():
    run = Cascade([LengthStage(), NoDigitsStage()], batch_size=2).run(DOCS)
    report = run.consume()
    assert (report.read, report.kept, report.dropped, report.errored) == (7, 2, 2, 3)
    assert report.kept + report.dropped + report.errored == report.read
    assert report.input_errors == 2
    assert {k: dict(v) for k, v in report.dropped_by_stage.items()} == {
        "length": {"too_long": 1},
        "no_digits": {"has_digits": 1},
    }
    assert dict(report.errored_by_reason) == {"bad_json": 1, "empty_text": 1, "stage_error:no_digits": 1}
    rows = [(r.stage, r.n_in, r.n_out, r.dropped, r.errored) for r in report.retention()]
    assert rows == [("length", 5, 4, 1, 0), ("no_digits", 4, 2, 1, 1)]
    assert report.problems() == []
    report.check()


def test_report_check_catches_counts_that_do_not_add_up():
    report = Cascade([LengthStage()]).run(DOCS).consume()
    report.kept += 1
    with pytest.raises(AssertionError, match="!= read 7"):
        report.check()
    report = Cascade([LengthStage(), NoDigitsStage()]).run(DOCS).consume()
    report.stage_in["no_digits"] -= 1
    assert any("no_digits: 3 entered but 4 were passed on" in p for p in report.problems())


def test_report_table_dict_and_summary():
    report = Cascade([LengthStage(), NoDigitsStage()]).run(DOCS).consume()
    table = report.to_table()
    assert list(table["stage"]) == ["length", "no_digits"]
    assert list(table["out"]) == [4, 2]
    assert table.loc[1, "retention"] == pytest.approx(0.5)
    assert table.loc[1, "cumulative_retention"] == pytest.approx(2 / 7)
    reasons = report.reasons_table()
    assert reasons["count"].sum() == report.dropped + report.errored
    assert reasons.set_index("reason").loc["stage_error:no_digits", "stage"] == "no_digits"
    data = report.to_dict()
    counts = [data[key] for key in ("read", "kept", "dropped", "errored", "consistent")]
    assert counts == [7, 2, 2, 3, True]
    text = report.summary()
    assert "retention after each stage" in text
    assert "2 no_digits" in text and "2 / 7 (28.57%)" in text
    assert "stage_error:no_digits" in text


def test_a_failing_batch_call_stops_the_run_naming_the_stage_and_the_batch():
    # It used to be re-scored one document at a time; after a CUDA error or out of memory that
    # fails every later document too, so the run now stops (issue 40).
    stage = BatchVowelStage()
    docs = [doc(1, "tree"), doc(2, "oak"), doc(3, "boom"), doc(4, "rhythm")]
    run = Cascade([stage], batch_size=2).run(docs)
    outcomes = []
    where = r"stage vowels failed on batch 2 \(records from line 3"
    with pytest.raises(BatchScoringError, match=where) as err:
        outcomes.extend(run)
    assert "id '3', to line 4, id '4'" in str(err.value) and "RuntimeError: bad document" in str(err.value)
    assert isinstance(err.value.__cause__, RuntimeError)  # raised from the original error
    assert [(o.status, o.line) for o in outcomes] == [(KEPT, 1), (KEPT, 2)]  # the batch before it
    assert stage.batch_calls == 2  # the failed batch is not retried one document at a time
    run.report.check()  # the counts of the batches before it still add up
    assert run.report.read == 2 and "batch 2" in run.report.stopped


def test_a_stage_returning_something_else_than_a_decision_is_an_error():
    class Sloppy(LengthStage):
        name = "sloppy"

        def decide(self, scores):
            return True

    (outcome,) = Cascade([Sloppy()]).run([doc(1, "hi")])
    assert outcome.status == ERRORED and outcome.detail == "TypeError: stage returned bool, not a Decision"


def test_the_cascade_streams():
    def endless():
        for i in itertools.count(1):
            yield doc(i, "word " * (i % 9))

    run = Cascade([LengthStage()], batch_size=10).run(endless())
    first = list(itertools.islice(run, 25))
    assert [o.line for o in first] == list(range(1, 26))
    assert run.report.read == 30  # three batches of ten, not the endless input


def test_no_stages_keeps_every_document_and_counts_input_errors():
    report = Cascade([]).run(DOCS).consume()
    assert (report.read, report.kept, report.errored) == (7, 5, 2)
    assert report.problems() == []


def test_an_empty_input_gives_an_empty_consistent_report():
    report = CascadeReport(["length"])
    assert report.problems() == [] and "read    :          0" in report.summary()


def test_stage_names_must_be_unique():
    with pytest.raises(ValueError, match="repeated: length"):
        Cascade([LengthStage(), LengthStage()])


def test_registry_lists_and_validates_stage_names():
    assert {"aoa", "symbolic", "frequency"} <= set(known_stages())
    assert stage_names(" aoa , symbolic ") == ["aoa", "symbolic"]
    with pytest.raises(
        ValueError, match="unknown stage 'fasttxt'; known stages: aoa, fasttext, encoder, symbolic, frequency"
    ):
        build_stages("aoa,fasttxt")
    with pytest.raises(ValueError, match="stage listed twice: aoa"):
        stage_names("aoa,aoa")
    with pytest.raises(ValueError, match="no stages given"):
        stage_names(" , ")


def test_stage_options_are_checked():
    with pytest.raises(ValueError, match="max_oov must be a fraction"):
        StageOptions(max_oov=1.5)
    with pytest.raises(ValueError, match="max_aoa must be a finite"):
        build_stages("aoa", {"max_aoa": float("nan")})
    with pytest.raises(TypeError):
        build_stages("aoa", {"no_such_option": 1})
    for option in ("fasttext_min_k5_prob", "encoder_min_k5_prob"):
        with pytest.raises(ValueError, match=f"{option} must be a probability"):
            StageOptions(**{option: 1.2})
        assert getattr(StageOptions(**{option: 0.7}), option) == 0.7
        assert getattr(StageOptions(), option) is None  # the released rules by default


class EvenLengthGate:
    """A prior gate for tests: open when the length stage counted an even number of words."""

    requires = ("length",)
    reason = "odd_gate"

    def check(self, prior):
        n = prior["length"]["n_words"]
        if n == 4:
            raise ValueError("four is unlucky")
        return {"gate_open": n % 2 == 0, "n_seen": n}


def test_a_gated_stage_scores_only_what_its_gate_lets_through():
    gated = NoDigitsStage()
    gated.prior_gate = EvenLengthGate()
    docs = [doc(1, "the cat"), doc(2, "the cat sat"), doc(3, "a b c d"), doc(4, "room 101")]
    outcomes = list(Cascade([LengthStage(), gated]).run(docs))
    assert [(o.status, o.stage, o.reason) for o in outcomes] == [
        (KEPT, None, None),
        (DROPPED, "no_digits", "odd_gate"),
        (ERRORED, "no_digits", "stage_error:no_digits"),
        (DROPPED, "no_digits", "has_digits"),
    ]
    assert gated.seen == ["the cat", "room 101"]  # the gate ran first; closed ones were never scored
    assert outcomes[0].scores["no_digits"] == {"digits": 0, "gate_open": True, "n_seen": 2}
    assert outcomes[1].scores["no_digits"] == {"gate_open": False, "n_seen": 3}
    assert outcomes[2].detail == "ValueError: four is unlucky"


def test_decide_all_without_the_earlier_scores_errors_rather_than_guesses():
    gated = NoDigitsStage()
    gated.prior_gate = EvenLengthGate()
    (verdict,) = decide_all(gated, ["the cat"])
    assert isinstance(verdict, KeyError) and gated.seen == []
    (plain,) = decide_all(NoDigitsStage(), ["the cat"])  # no gate: no prior needed
    assert plain.keep


def test_a_gated_stage_must_come_after_the_stages_its_gate_reads():
    gated = NoDigitsStage()
    gated.prior_gate = EvenLengthGate()
    with pytest.raises(ValueError, match="gated on the scores of length, so they must run before it"):
        Cascade([gated, LengthStage()])


class BandStage(Stage):
    """Stands in for fastText: band K5 unless the text says "science" (keep K5, as stage 2 does)."""

    name = "fasttext"

    def score(self, text: str) -> dict[str, Any]:
        return {"band": "K12" if "science" in text else "K5"}

    def decide(self, scores: dict[str, Any]) -> Decision:
        keep = scores["band"] == "K5"
        return Decision(keep, None if keep else "fasttext_" + scores["band"], scores)


class CountingEncoder(BandStage):
    """Stands in for the encoder: keeps everything, remembers what it scored."""

    name = "encoder"

    def __init__(self):
        self.seen: list[str] = []

    def score(self, text: str) -> dict[str, Any]:
        self.seen.append(text)
        return {"band": "K5"}


def test_the_agreement_gate_reads_p95_aoa_and_the_fasttext_band():
    check = AGREEMENT_GATE.check
    assert check({"aoa": {"p95_aoa": 12.0}, "fasttext": {"band": "K5"}}) == {
        "gate_open": True, "fasttext_band": "K5", "aoa_band": "K5",
    }  # fmt: skip
    assert not check({"aoa": {"p95_aoa": 12.5}, "fasttext": {"band": "K5"}})["gate_open"]  # AoA band K8
    assert check({"aoa": {"p95_aoa": 14.0}, "fasttext": {"label": "__label__K8"}})["gate_open"]
    assert not check({"aoa": {"p95_aoa": None}, "fasttext": {"band": "K5"}})["gate_open"]
    with pytest.raises(KeyError, match="aoa"):
        check({"fasttext": {"band": "K5"}})


def test_the_encoder_gate_in_the_cascade_drops_what_a_looser_aoa_stage_let_through():
    """With max_aoa 14 stage 1 keeps a p95 of 13.5, whose AoA band (K8) disagrees with fastText's
    K5: the gate drops it as encoder_gate and the encoder never sees it."""
    from littlekit.filter.aoa import AoAStage
    from littlekit.filter.lexicon import AoALexicon

    lexicon = AoALexicon({"the": 3.0, "cat": 4.0, "sat": 4.0, "atom": 13.5, "science": 5.0}, impute="none")
    encoder = CountingEncoder()
    encoder.prior_gate = AGREEMENT_GATE
    stages = [AoAStage(lexicon, max_aoa=14.0), BandStage(), encoder]
    docs = [doc(1, "the cat sat"), doc(2, "the atom sat"), doc(3, "the science cat")]
    outcomes = list(Cascade(stages).run(docs))
    assert [(o.status, o.stage, o.reason) for o in outcomes] == [
        (KEPT, None, None),
        (DROPPED, "encoder", "encoder_gate"),
        (DROPPED, "fasttext", "fasttext_K12"),
    ]
    assert encoder.seen == ["the cat sat"]
    assert outcomes[1].scores["encoder"] == {"gate_open": False, "fasttext_band": "K5", "aoa_band": "K8"}
    assert outcomes[0].scores["encoder"]["gate_open"] is True
    encoder.prior_gate = None  # --encoder-gate all: the same document reaches the model
    assert [o.status for o in Cascade(stages).run(docs)] == [KEPT, KEPT, DROPPED]


def test_the_gate_option_is_checked_and_needs_aoa_and_fasttext_first():
    with pytest.raises(ValueError, match="encoder_gate must be one of agree, all"):
        StageOptions(encoder_gate="some")
    check_gate_order(["aoa", "fasttext", "encoder", "symbolic"], StageOptions())
    check_gate_order(["encoder"], {"encoder_gate": "all"})
    check_gate_order(["aoa", "symbolic"], None)
    with pytest.raises(ValueError, match="so fasttext must run before encoder.*--encoder-gate all"):
        check_gate_order(["aoa", "encoder", "fasttext"], StageOptions())
    with pytest.raises(ValueError, match="aoa and fasttext must run before encoder"):
        check_gate_order(["encoder"], None)
