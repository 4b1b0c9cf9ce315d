"""Labels for the embedded default: sources, no validation leakage, the judge's format, balance."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from littlekit.databuild import corpora
from littlekit.databuild.passages import author_key
from littlekit.fit.labels import (
    LABEL_COLUMNS,
    SOURCE_PREFIX,
    _shares,
    balance,
    build_default_labels,
    label_counts,
    load_labels,
    split_labels,
    write_label_file,
)
from littlekit.grades import BANDS
from littlekit.judge.labels import make_label, read_labels, text_sha256
from littlekit.text import shingles

MAX_PER_BAND = 1000


@pytest.fixture(scope="module")
def default_labels() -> pd.DataFrame:
    return build_default_labels(max_per_band=MAX_PER_BAND)


@pytest.fixture(scope="module")
def validation() -> pd.DataFrame:
    return corpora.load_commoncoretext(split="validation")


# --- the embedded default ---------------------------------------------------------------------


def test_default_labels_have_the_judge_fields_and_their_text(default_labels):
    assert list(default_labels.columns) == list(LABEL_COLUMNS)
    assert default_labels["id"].is_unique and default_labels["text_sha256"].is_unique
    assert set(default_labels["band"]) == set(BANDS)
    assert all(votes == {} for votes in default_labels["votes"])
    assert default_labels["judge"].isna().all()
    assert all(
        text_sha256(t) == s
        for t, s in zip(default_labels["text"], default_labels["text_sha256"], strict=True)
    )


def test_default_labels_come_from_the_stated_sources_in_balanced_bands(default_labels):
    sources = set(default_labels["source"])
    named = {
        SOURCE_PREFIX + name
        for name in ("gutenberg", "clear", "openstax", "tinystories", "mathcamps", "informational", "arc")
    }
    assert sources == named  # GSM8K is off by default
    counts = default_labels["band"].value_counts()
    assert (counts <= MAX_PER_BAND).all()
    assert counts[["K5", "K8", "K12"]].tolist() == [MAX_PER_BAND] * 3  # enough documents for each
    by_source = label_counts(default_labels)
    assert by_source.loc[SOURCE_PREFIX + "tinystories"].drop("total").to_dict() == {
        "K5": 166,
        "K8": 0,
        "K12": 0,
        "OOS": 0,
    }  # a sixth of K5: one of six K5 sources, each with more than its share (the first four get 167)
    assert (by_source.loc[SOURCE_PREFIX + "openstax", ["K5", "K8", "K12"]] == 0).all()


def test_no_label_draws_on_a_validation_source(default_labels, validation):
    assert not set(default_labels["id"]) & set(validation["id"])
    assert not set(default_labels["text_sha256"]) & {text_sha256(t) for t in validation["text"]}
    # CLEAR excerpts from outside CommonCoreText-PD: their authors are on the training side
    clear = corpora.load_clear()
    clear_ids = {
        f"clear-{i}": author for i, author in zip(clear["id"], clear["author"].fillna(""), strict=True)
    }
    groups = {"author:" + author_key(clear_ids[i]) for i in default_labels["id"] if i in clear_ids}
    assert not groups & set(validation["split_group"])
    # and no label shares an 8-word run with a validation passage
    seen = set().union(*(shingles(text) for text in validation["text"]))
    assert all(shingles(text).isdisjoint(seen) for text in default_labels["text"])


def test_commoncoretext_labels_come_from_train_rows_with_their_band(default_labels):
    passages = corpora.load_commoncoretext().set_index("id")
    from_passages = default_labels[default_labels["id"].isin(passages.index)]
    assert len(from_passages) > 1000
    assert (passages.loc[from_passages["id"], "split"] == "train").all()
    assert (passages.loc[from_passages["id"], "band"].to_numpy() == from_passages["band"].to_numpy()).all()


def test_mathcamps_band_follows_the_standard_grade(default_labels):
    math = default_labels[default_labels["source"] == SOURCE_PREFIX + "mathcamps"]
    grade = math["id"].str.removeprefix("mathcamps-").str.split(".").str[0]
    expected = grade.map(lambda g: "K5" if g in {"K", "1", "2", "3", "4", "5"} else "K8")
    assert (math["band"] == expected).all() and set(math["band"]) == {"K5", "K8"}


def test_gsm8k_is_opt_in_with_a_stated_band():
    labels = build_default_labels(max_per_band=300, gsm8k_band="K8")
    gsm8k = labels[labels["source"] == SOURCE_PREFIX + "gsm8k"]
    assert len(gsm8k) > 0 and set(gsm8k["band"]) == {"K8"}
    with pytest.raises(ValueError, match="gsm8k_band"):
        build_default_labels(gsm8k_band="grade 4")


# --- the file format: the judge's, plus text --------------------------------------------------


def test_written_labels_read_back_with_the_judges_reader(default_labels, tmp_path):
    sample = default_labels.groupby("band").head(5).reset_index(drop=True)
    path = tmp_path / "labels.jsonl"
    assert write_label_file(sample, path) == len(sample)
    records = read_labels(path)  # the judge's validating reader
    assert [r["id"] for r in records] == sample["id"].tolist()
    assert set(records[0]) == set(LABEL_COLUMNS)
    assert records[0]["source"].startswith(SOURCE_PREFIX) and records[0]["judge"] is None
    pd.testing.assert_frame_equal(load_labels(path), sample)


def test_a_frame_of_judge_labels_keeps_null_bands_null(tmp_path):
    # a frame of judge records: pandas stores the None band of an unlabelled one as NaN
    frame = pd.DataFrame(judge_records({"a": ("The cat sat.", "K5"), "b": ("Entropy rises.", None)}))
    frame["text"] = ["The cat sat.", "Entropy rises."]
    path = tmp_path / "labels.jsonl"
    assert write_label_file(frame, path) == 2
    assert [r["band"] for r in read_labels(path)] == ["K5", None]
    assert load_labels(path)["id"].tolist() == ["a"]


def judge_records(texts: dict[str, str | None]) -> list[dict]:
    judge = {"model": "m", "prompt_versions": {}, "vote": "majority", "usage": {}, "errors": {}}
    return [
        make_label(doc_id, text, band=band, source="llm-judge", votes={"language": band}, judge=judge)
        for doc_id, (text, band) in texts.items()
    ]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_judge_labels_join_their_documents_by_text_hash(tmp_path):
    docs = {"a": ("The cat sat.", "K5"), "b": ("Entropy rises.", "K12"), "c": ("No vote.", None)}
    labels = tmp_path / "judge.jsonl"
    write_jsonl(labels, judge_records(docs))
    texts = pd.DataFrame({"text": ["Entropy rises.", "The cat sat.", "Unlabelled text."]})
    frame = load_labels(labels, texts=texts)
    assert frame[["id", "band", "text"]].values.tolist() == [
        ["a", "K5", "The cat sat."],
        ["b", "K12", "Entropy rises."],
    ]
    assert frame["source"].eq("llm-judge").all() and frame["votes"][0] == {"language": "K5"}
    # the documents may also come from a JSON-lines file
    doc_file = tmp_path / "docs.jsonl"
    write_jsonl(doc_file, [{"id": 1, "text": "The cat sat."}])
    assert load_labels(labels, texts=doc_file)["id"].tolist() == ["a"]  # 'b' has no text: dropped


def test_judge_labels_without_documents_are_a_clear_error(tmp_path):
    labels = tmp_path / "judge.jsonl"
    write_jsonl(labels, judge_records({"a": ("The cat sat.", "K5")}))
    with pytest.raises(ValueError, match="pass texts="):
        load_labels(labels)
    with pytest.raises(ValueError, match="none of the 1 labels"):
        load_labels(labels, texts=pd.DataFrame({"text": ["something else"]}))


def test_a_text_that_does_not_match_its_hash_is_refused(tmp_path):
    record = {**make_label("a", "The cat sat.", "K5", SOURCE_PREFIX + "x"), "text": "The dog sat."}
    labels = tmp_path / "labels.jsonl"
    write_jsonl(labels, [record])
    with pytest.raises(ValueError, match="does not match text_sha256"):
        load_labels(labels)


# --- balance and the held-out split -----------------------------------------------------------


def test_shares_split_the_cap_equally_and_pass_on_what_small_sources_cannot_use():
    assert _shares({"a": 10, "b": 500, "c": 500}, 300) == {"a": 10, "b": 145, "c": 145}
    assert _shares({"a": 100, "b": 100}, 301) == {"a": 100, "b": 100}
    assert _shares({"a": 500, "b": 500, "c": 500}, 100) == {"a": 34, "b": 33, "c": 33}
    assert sum(_shares({"a": 7, "b": 900, "c": 40, "d": 1000}, 1000).values()) == 1000


def test_balance_is_seeded_and_capped_per_band():
    frame = pd.DataFrame(
        {
            "id": [f"{s}{i}" for s in "xy" for i in range(50)],
            "text": [f"text {s}{i}" for s in "xy" for i in range(50)],
            "band": ["K5"] * 50 + ["K8"] * 50,
            "source": ["x"] * 50 + ["y"] * 50,
        }
    )
    first, again, other = balance(frame, 20, seed=1), balance(frame, 20, seed=1), balance(frame, 20, seed=2)
    assert first["band"].value_counts().to_dict() == {"K5": 20, "K8": 20}
    assert first["id"].tolist() == again["id"].tolist()
    assert set(first["id"]) != set(other["id"])


def test_split_labels_is_stratified_disjoint_and_seeded(default_labels):
    train, held = split_labels(default_labels, 0.2, seed=0)
    assert len(train) + len(held) == len(default_labels)
    assert not set(train["id"]) & set(held["id"])
    shares = held["band"].value_counts() / default_labels["band"].value_counts()
    assert shares.between(0.19, 0.21).all()
    assert split_labels(default_labels, 0.2, seed=0)[1]["id"].tolist() == held["id"].tolist()
    with pytest.raises(ValueError, match="holdout_fraction"):
        split_labels(default_labels, 1.5)


def test_candidates_overlapping_validation_text_are_dropped():
    from littlekit.fit.labels import _drop_validation_overlap

    passage = "Once upon a time a small brown hen found a grain of wheat in the farmyard and asked for help."
    candidates = pd.DataFrame(
        {
            "id": ["copy", "quote", "short", "other"],
            "text": [
                passage,
                "He read aloud: A SMALL BROWN HEN FOUND A GRAIN OF WHEAT in the farmyard, and smiled.",
                "a small brown hen found a grain",  # 6 words in common: not a shared 8-word run
                "Photosynthesis turns light into chemical energy.",
            ],
            "band": ["K5"] * 4,
            "source": ["x"] * 4,
        }
    )
    kept = _drop_validation_overlap(candidates, [passage])
    assert kept["id"].tolist() == ["short", "other"]


def test_informational_labels_are_train_books_and_arc_train_stems(default_labels):
    from littlekit.databuild import corpora
    from littlekit.fit.labels import informational_band

    books = corpora.load_graded_informational()
    split_of = dict(zip(books["id"], books["split"], strict=True))
    rows = default_labels[default_labels["source"] == SOURCE_PREFIX + "informational"]
    assert len(rows) and {split_of[i] for i in rows["id"]} == {"train"}  # no BOUNDARY, no validation book
    label_of = dict(zip(books["id"], books["label"], strict=True))
    band_of = dict(zip(books["id"], books["band"], strict=True))
    pairs = zip(rows["id"], rows["band"], strict=True)
    assert all(informational_band(band_of[i], label_of[i]) == band for i, band in pairs)
    assert set(rows["band"]) == {"K5", "K8", "K12"}
    arc = corpora.load_arc()
    arc_split = dict(zip("arc-" + arc["id"].astype(str), arc["split"], strict=True))
    arc_rows = default_labels[default_labels["source"] == SOURCE_PREFIX + "arc"]
    assert len(arc_rows) and {arc_split[i] for i in arc_rows["id"]} == {"train"}


def test_informational_band_reads_the_books_grade_label():
    from littlekit.fit.labels import informational_band

    assert informational_band("K5", "grade 2 by the reader-number convention") == "K5"
    assert informational_band("BEYOND", "secondary school (about grades 9-12)") == "K12"
    assert informational_band("BEYOND", "school history, grammar/high-school level") == "K12"
    assert informational_band("BEYOND", "ages 12-14 (about grades 7-9)") == "K8"
    assert informational_band("BOUNDARY", "intermediate and upper grades") == ""
