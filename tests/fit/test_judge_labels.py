"""The LLM judge's labels as training data: the data build, the label sets, groups, and no leakage."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from littlekit.cli import main
from littlekit.databuild import corpora
from littlekit.databuild.common import BuildLog
from littlekit.databuild.judge_labels import WEB_CORPORA, build_judge_labels, is_non_commercial
from littlekit.fit.folds import TUNED_WITH_JUDGE, label_groups, tuning_sources
from littlekit.fit.labels import (
    JUDGE_PREFIX,
    LABEL_COLUMNS,
    REWRITE_PREFIX,
    SOURCE_PREFIX,
    build_labels,
    judge_group,
    load_labels,
    write_label_file,
)
from littlekit.judge import redact
from littlekit.judge.labels import make_label, text_sha256
from littlekit.text import shingles

DATA = Path(__file__).resolve().parents[2] / "data"


def judge_record(i: int, text: str, band: str, corpus: str, **extra) -> dict:
    record = make_label(f"j-{i}", text, band, "llm-judge", votes={"pass_1": band})
    return {**record, "text": text, "corpus": corpus, **extra}


def write_records(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def judge_labels() -> pd.DataFrame:
    return build_labels("judge")


# --- the data build -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("licence", "nc"),
    [("CC BY-NC 3.0", True), ("CC-BY-NC", True), ("CC BY-NC-SA", True), ("CC BY 4.0", False),
     ("ODC-BY 1.0 (FineWeb)", False), ("public domain", False), (None, False)],
)
def test_non_commercial_licences_are_recognised(licence, nc):
    assert is_non_commercial(licence) is nc


def test_the_build_ships_every_record_but_the_non_commercial_ones(tmp_path):
    source = tmp_path / "src" / "judge_labels"
    source.mkdir(parents=True)
    records = [
        judge_record(0, "The cat sat on the mat.", "K5", "kids:gdl", licence="CC BY-NC"),
        judge_record(1, "The dog ran in the park.", "K5", "kids:gdl", licence="CC BY"),
        judge_record(2, "Mortgage rates rose again.", "K8", "dclm", licence="CC BY 4.0", url=None),
    ]
    write_records(source / "labels.jsonl", records)
    (source / "RUBRIC.md").write_text("rubric\n", encoding="utf-8")
    quality = {"calibration_n": 1, "k5_precision": [1, 1], "k5_recall": [1, 2],
               "exact_band_agreement_on_repeats": [3, 4]}
    (source / "quality.json").write_text(json.dumps(quality), encoding="utf-8")
    out = tmp_path / "out"
    counts = build_judge_labels(tmp_path / "src", out, BuildLog(out))
    assert counts == {"records": 2, "left_out_nc": 1}
    with gzip.open(out / "judge_labels/labels.jsonl.gz", "rt", encoding="utf-8") as handle:
        shipped = [json.loads(line) for line in handle]
    assert [r["id"] for r in shipped] == ["j-1", "j-2"]
    assert "url" not in shipped[1]  # empty fields are dropped, not written as null
    source_md = (out / "judge_labels/SOURCE.md").read_text(encoding="utf-8")
    assert "kids:gdl 1" in source_md and "| dclm | 1 | 0 | 1 | 0 | 0 |" in source_md


def test_a_record_whose_text_does_not_match_its_hash_is_refused_with_its_line(tmp_path):
    source = tmp_path / "judge_labels"
    source.mkdir()
    record = judge_record(0, "The cat sat.", "K5", "dclm")
    write_records(source / "labels.jsonl", [{**record, "text": "changed"}])
    with pytest.raises(ValueError, match=r"labels.jsonl:1: record 'j-0'"):
        build_judge_labels(tmp_path, tmp_path / "out", BuildLog(tmp_path / "out"))


def test_the_embedded_judge_labels_hold_no_non_commercial_record_and_carry_their_licence():
    with gzip.open(DATA / "judge_labels" / "labels.jsonl.gz", "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle]
    assert len(records) > 8000
    assert all(r.get("licence") and not is_non_commercial(r["licence"]) for r in records)
    assert all(text_sha256(r["text"]) == r["text_sha256"] for r in records)
    assert (DATA / "judge_labels" / "SOURCE.md").is_file()


# --- the label sets -----------------------------------------------------------------------------


def test_judge_labels_carry_their_group_corpus_and_source(judge_labels):
    assert list(judge_labels.columns) == list(LABEL_COLUMNS)
    judged = judge_labels[judge_labels["source"].str.startswith(JUDGE_PREFIX)]
    assert set(judged["source"]) >= {JUDGE_PREFIX + g for g in ("web", "simplewiki", "informational")}
    pairs = zip(judged["corpus"], judged["source"], strict=True)
    assert all(judge_group(c) == s.removeprefix(JUDGE_PREFIX) for c, s in pairs)
    assert set(judged.loc[judged["source"] == JUDGE_PREFIX + "web", "corpus"]) <= set(WEB_CORPORA)
    # the item-graded sets the judge did not label come with them
    assert {SOURCE_PREFIX + "arc", SOURCE_PREFIX + "mathcamps"} <= set(judge_labels["source"])
    # and every CommonCoreText-PD train passage by its band, never a validation one
    cct = judge_labels[judge_labels["source"] == SOURCE_PREFIX + "commoncoretext"]
    passages = corpora.load_commoncoretext()
    train = passages[passages["split"] == "train"]
    assert set(cct["id"]) == set(train["id"]) - _sharing_validation_text(train, passages)
    bands = dict(zip(train["id"], train["band"], strict=True))
    assert all(bands[i] == b for i, b in zip(cct["id"], cct["band"], strict=True))
    assert judge_labels["id"].is_unique and judge_labels["text_sha256"].is_unique


def _sharing_validation_text(train, passages) -> set:
    validation = [
        *passages.loc[passages["split"] == "validation", "text"],
        *corpora.load_graded_informational(split="validation")["text"],
    ]
    seen = set().union(*(shingles(text) for text in validation))
    return {i for i, text in zip(train["id"], train["text"], strict=True) if shingles(text) & seen}


def test_no_judge_label_shares_text_with_a_validation_passage(judge_labels):
    validation = [
        *corpora.load_commoncoretext(split="validation")["text"],
        *corpora.load_graded_informational(split="validation")["text"],
    ]
    seen = set().union(*(shingles(text) for text in validation))
    assert not any(shingles(text) & seen for text in judge_labels["text"])


def test_folds_keep_a_childrens_book_and_a_web_site_whole(judge_labels):
    groups = label_groups(judge_labels)
    kids = judge_labels["corpus"].str.startswith("kids:")
    assert groups[kids].str.startswith("book:").all()
    informational = judge_labels["corpus"] == "graded_informational"
    assert groups[informational].str.startswith("informational:").all()
    assert groups.nunique() < len(judge_labels)  # passages of one book or site share a group


def test_tuning_sources_follow_the_labels(judge_labels):
    auto = tuning_sources("auto", judge_labels)
    # the judge's sources and the CommonCoreText-PD train passages set the point; ARC and MathCAMPS do not
    assert auto and all(s.startswith(JUDGE_PREFIX) or s in TUNED_WITH_JUDGE for s in auto)
    assert set(TUNED_WITH_JUDGE) <= set(auto)
    assert not {SOURCE_PREFIX + "arc", SOURCE_PREFIX + "mathcamps"} & set(auto)
    source_only = judge_labels[~judge_labels["source"].str.startswith(JUDGE_PREFIX)]
    assert tuning_sources("auto", source_only) == tuning_sources("graded", source_only)
    with pytest.raises(ValueError, match="no LLM-judge labels"):
        tuning_sources("judge", source_only)


def test_a_label_file_adds_to_the_judge_set_and_round_trips(tmp_path, judge_labels):
    # keys other tests registered would be scrubbed out of the judge's evidence notes on writing
    redact._forget_all()
    extra = write_records(tmp_path / "mine.jsonl", [
        judge_record(0, "Ducks swim in the pond and eat bread.", "K5", "my-corpus", url="https://example.org/a"),
        judge_record(1, "Parliament debated the fiscal amendment.", "K12", "my-corpus"),
    ])
    both = build_labels(f"judge,{extra}")
    assert len(both) == len(judge_labels) + 2
    mine = both[both["corpus"] == "my-corpus"].set_index("id")
    assert mine.loc["j-0", "group"] == "site:example.org" and mine.loc["j-1", "group"] == "doc:j-1"
    assert set(mine["source"]) == {JUDGE_PREFIX + "my-corpus"}
    path = tmp_path / "labels.jsonl"
    write_label_file(both, path)
    pd.testing.assert_frame_equal(load_labels(path), both)


def test_bad_label_sets_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.jsonl does not exist"):
        build_labels(str(tmp_path / "nothing.jsonl"))
    record = {**judge_record(0, "A cat.", "K5", "x"), "text": None}
    no_text = write_records(tmp_path / "no_text.jsonl", [record])
    with pytest.raises(ValueError, match=r"no_text.jsonl: label 'j-0' \(record 1\) carries no text"):
        build_labels(str(no_text))
    a = write_records(tmp_path / "a.jsonl", [judge_record(0, "A cat sat.", "K5", "x")])
    b = write_records(tmp_path / "b.jsonl", [judge_record(0, "A dog ran.", "K5", "x")])
    with pytest.raises(ValueError, match=r"same ids for different texts: \['j-0'\]"):
        build_labels(f"{a},{b}")
    with pytest.raises(ValueError, match="no label set"):
        build_labels(" , ")


def test_fit_labels_takes_the_label_set_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "run" / "artifacts"
    assert main(["fit", "labels", "--out", str(out), "--labels", "source", "--max-per-band", "20"]) == 0
    labels = load_labels(tmp_path / "run" / "labels" / "train_labels.jsonl")
    assert labels["source"].str.startswith(SOURCE_PREFIX).all() and labels["band"].value_counts().max() <= 20
    assert main(["fit", "labels", "--out", str(out)]) == 2  # a finished step is refused
    assert main(["fit", "labels", "--out", str(out), "--force"]) == 0
    labels = load_labels(tmp_path / "run" / "labels" / "train_labels.jsonl")
    from_judge = labels["source"].str.startswith(JUDGE_PREFIX)
    rewrites = labels["source"].str.startswith(REWRITE_PREFIX)
    assert from_judge[~rewrites].mean() > 0.7  # the rest: graded items, CCT-PD train
    assert rewrites.sum() > 1000 and set(labels.loc[rewrites, "band"]) == {"K5"}  # the default adds them
    assert "from judge,rewrites" in capsys.readouterr().out


def test_a_sample_per_band_caps_every_band_and_keeps_every_source(judge_labels):
    sample = build_labels("judge", sample_per_band=40)
    assert sample["band"].value_counts().max() <= 40
    assert set(sample["id"]) <= set(judge_labels["id"])
    assert sample["source"].nunique() >= 5
    assert build_labels("judge", sample_per_band=40)["id"].tolist() == sample["id"].tolist()  # seeded
