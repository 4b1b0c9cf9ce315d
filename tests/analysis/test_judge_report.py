"""littlekit.analysis.judge_report on the real judge labels (`data/judge_labels/`) and on small frames."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from littlekit.analysis import judge_report as jr
from littlekit.databuild import corpora
from littlekit.grades import BANDS
from littlekit.stats import wilson_interval


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    return corpora.load_judge_labels()


@pytest.fixture(scope="module")
def quality() -> dict:
    return corpora.load_judge_quality()


def test_short_source_and_repository():
    assert jr.short_source("llm-judge:kids:storyweaver") == "kids:storyweaver"
    assert jr.short_source("source-label:arc") == "arc"
    assert jr.short_source("arc") == "arc"
    assert jr.repository("allenai/OLMo@59a53e3f68e5:test_fixtures/c4-sample.01.json.gz") == "allenai/OLMo"
    assert jr.repository(None) is None and jr.repository("") is None


def test_corpus_order_groups_corpora_by_kind():
    order = jr.corpus_order(["kids:gdl", "graded_informational", "simplewiki", "dclm", "c4", "kids:bookdash"])
    assert order == ["c4", "dclm", "simplewiki", "kids:bookdash", "kids:gdl", "graded_informational"]
    assert jr.corpus_order(["zzz-unknown", "dclm"]) == ["dclm", "zzz-unknown"]


def test_provenance_and_band_counts_cover_every_record(records):
    provenance = jr.provenance(records)
    counts = jr.band_counts(records)
    assert list(provenance.index) == list(counts.index[:-1]) == jr.corpus_order(records["corpus"])
    assert provenance["passages"].sum() == len(records) == counts.loc["total", "total"]
    inner = counts.drop(index="total")
    assert list(counts.columns) == [*BANDS, "total"]
    assert (inner[list(BANDS)].sum(axis=1) == inner["total"]).all()
    assert (inner.sum() == counts.loc["total"]).all()
    for corpus, row in provenance.iterrows():  # the licence counts add up to the corpus's passages
        counted = [int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+)\)(?:;|$)", row["licences"])]
        assert sum(counted) == row["passages"], corpus
        assert not any("NC" in name for name in row["licences"].split("; ")), corpus
    assert provenance.loc["graded_informational", "repositories"] == "—"  # this project's own folder
    assert "elimu-ai/webapp" in provenance.loc["kids:letsread", "repositories"]


def test_quality_table_gives_rates_with_wilson_intervals():
    table = jr.quality_table({"k5_precision": [5, 10], "k5_recall": [0, 10], "unknown": [1, 2]})
    assert list(table.index) == [jr.QUALITY_MEASURES["k5_precision"], jr.QUALITY_MEASURES["k5_recall"]]
    half, none = table.iloc[0], table.iloc[1]
    assert (half["hits"], half["n"], half["rate"]) == (5, 10, 0.5)
    assert (half["ci_low"], half["ci_high"]) == pytest.approx((0.2366, 0.7634), abs=1e-4)  # textbook values
    assert (none["ci_low"], none["ci_high"]) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert jr.rate_text(half) == "0.50 (5/10; 95% CI 0.24-0.76)"


def test_measured_quality_matches_its_confusion_matrix(quality):
    table = jr.quality_table(quality)
    recall = table.loc[jr.QUALITY_MEASURES["k5_recall"]]
    assert (recall["ci_low"], recall["ci_high"]) == pytest.approx(wilson_interval(*quality["k5_recall"]))
    assert ((table["ci_low"] <= table["rate"]) & (table["rate"] <= table["ci_high"])).all()
    confusion = jr.calibration_confusion(quality)
    assert list(confusion.index) == list(confusion.columns) == list(BANDS)
    assert confusion.to_numpy().sum() == quality["calibration_n"]
    assert [confusion.loc["K5", "K5"], confusion["K5"].sum()] == quality["k5_precision"]
    assert [confusion.loc["K5", "K5"], confusion.loc["K5"].sum()] == quality["k5_recall"]
    beyond = confusion.drop(index="K5")
    assert [beyond["K5"].sum(), beyond.to_numpy().sum()] == quality["beyond_called_k5"]


def test_repeat_summary_reproduces_the_measured_agreement(records, quality):
    summary = jr.repeat_summary(records)
    assert [summary["same_band"], summary["judged_twice"]] == quality["exact_band_agreement_on_repeats"]
    assert summary["kept_higher"] == summary["different"] > 0  # the rubric's tie rule: the higher band
    small = pd.DataFrame({
        "votes": [{"pass_1": "K5"}, {"pass_1": "K5", "pass_2": "K8"}, {"pass_1": "OOS", "pass_2": "K12"},
                  {"pass_1": "K8", "pass_2": "K8"}],
        "band": ["K5", "K5", "OOS", "K8"],
    })
    assert jr.repeat_summary(small) == {"judged_twice": 3, "same_band": 1, "different": 2, "kept_higher": 1}


def test_left_out_counts_released_records_missing_here(records, quality):
    gone = jr.left_out(records, quality)
    assert gone["total"].sum() == quality["released"] - len(records) > 0
    assert all(corpus.startswith("kids:") for corpus in gone.index)  # the NC-licensed children's books
    small = pd.DataFrame({"corpus": ["a", "a", "a", "b", "b"], "band": ["K5", "K5", "K8", "K8", "K8"]})
    gone = jr.left_out(small, {"by_corpus": {"a": {"K5": 3, "K8": 1}, "b": {"K8": 2}}})
    assert gone.to_dict("index") == {"a": {"K5": 1, "K8": 0, "total": 1}}


def test_shares_validation_text_is_the_rule_build_labels_drops_by(records):
    from littlekit.fit.labels import JUDGE_PREFIX, build_labels

    flags = pd.Series(jr.shares_validation_text(records["text"]), index=records.index)
    labels = build_labels("judge")
    judged = labels[labels["source"].str.startswith(JUDGE_PREFIX)]
    assert set(judged["id"]) == set(records.loc[~flags, "id"]) and flags.sum() > 0
    words = next(t for t in jr.validation_texts() if len(t.split()) > 20).split()
    texts = [" ".join(words), " ".join(words[3:11]).upper(), " ".join(words[3:10]), "A cat sat on a mat."]
    assert jr.shares_validation_text(texts) == [True, True, False, False]  # 8 words share, 7 do not


def test_shorten_cuts_at_a_word_boundary():
    assert jr.shorten("a  b\nc", 10) == "a b c"
    assert jr.shorten("one two three four", 9) == "one two [...]"


def test_examples_are_seeded_per_band_and_from_different_corpora(records):
    examples = jr.examples(records, per_band=2, seed=3, max_chars=120)
    assert examples.groupby("band").size().to_dict() == {band: 2 for band in BANDS}
    assert (examples.groupby("band")["corpus"].nunique() == 2).all()
    assert (examples["text"].str.len() <= 120 + len(" [...]")).all()
    by_evidence = records.assign(evidence=records["judge"].map(lambda j: j["evidence"]))
    for row in examples.itertuples(index=False):
        match = by_evidence[(by_evidence["evidence"] == row.evidence) & (by_evidence["band"] == row.band)]
        assert row.corpus in set(match["corpus"])
        prefix = row.text.removesuffix(" [...]")
        assert any(" ".join(t.split()).startswith(prefix) for t in match["text"])
    assert examples.equals(jr.examples(records, per_band=2, seed=3, max_chars=120))


def test_answer_lines_are_the_rubric_format(records):
    lines = jr.answer_lines(records.head(5))
    for line, record in zip(lines, records.head(5).itertuples(index=False), strict=True):
        doc_id, band, grade, evidence = line.split("\t")
        assert (doc_id, band, grade, evidence) == (record.id, record.band, record.judge["grade"],
                                                   record.judge["evidence"])
