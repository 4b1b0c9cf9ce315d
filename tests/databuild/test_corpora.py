"""Loaders in littlekit.databuild.corpora: documented columns on the embedded data, roots, clear errors."""

from __future__ import annotations

import pytest

from littlekit import config
from littlekit.databuild import corpora
from littlekit.grades import BANDS


@pytest.mark.parametrize(
    ("loader", "columns", "at_least"),
    [
        (corpora.load_aoa_table, corpora.AOA_COLUMNS, 30_000),
        (corpora.load_standards, corpora.STANDARDS_COLUMNS, 1_000),
        (corpora.load_commoncoretext, corpora.PASSAGE_COLUMNS, 2_000),
        (corpora.load_demo_corpus, corpora.DEMO_COLUMNS, 2_000),
        (corpora.load_mathcamps, corpora.MATHCAMPS_COLUMNS, 9_000),
        (corpora.load_gsm8k, corpora.GSM8K_COLUMNS, 1_000),
        (corpora.load_clear, corpora.CLEAR_COLUMNS, 4_000),
        (corpora.load_onestopenglish, corpora.ONESTOP_COLUMNS, 500),
        (corpora.load_graded_informational, corpora.INFORMATIONAL_COLUMNS, 2_000),
        (corpora.load_arc, corpora.ARC_COLUMNS, 500),
    ],
)
def test_loaders_return_the_documented_columns(loader, columns, at_least):
    frame = loader()
    assert set(columns) <= set(frame.columns)
    assert len(frame) >= at_least


@pytest.mark.parametrize("table", ["lemma", "kuperman"])
def test_aoa_table_keeps_words_pandas_would_read_as_missing(table):
    frame = corpora.load_aoa_table(table=table)
    assert frame["word"].is_unique
    assert {"null", "none", "true", "false"} <= set(frame["word"])
    assert frame["aoa"].between(1, 25).all()
    assert (frame["word"] == frame["word"].str.lower()).all()


def test_default_aoa_table_is_the_lemma_column_of_the_master_table():
    default = corpora.load_aoa_table()
    master = corpora.load_aoa_table(full=True)
    expected = master.dropna(subset=["aoa_kup_lem"])
    assert len(default) == len(expected) == 51_695
    assert default["word"].tolist() == expected["word"].str.lower().tolist()
    assert default["aoa"].tolist() == expected["aoa_kup_lem"].tolist()
    # the lemma propagation gives inflected forms their lemma's rating; Kuperman rated fewer words
    kuperman = corpora.load_aoa_table(table="kuperman")
    assert len(kuperman) < len(default)
    assert "abacuses" in set(default["word"]) - set(kuperman["word"])


def test_unknown_aoa_table_is_refused():
    with pytest.raises(ValueError, match="kuperman"):
        corpora.load_aoa_table(table="brysbaert")


def test_full_aoa_table_has_the_master_columns():
    table = corpora.load_aoa_table(full=True)
    assert list(table.columns) == list(corpora.AOA_51715_COLUMNS)
    assert len(table) == 51_715


def test_standards_bands_and_frameworks():
    standards = corpora.load_standards()
    assert set(standards["framework"]) == {"CCSS-Math", "CCSS-ELA", "NGSS"}
    assert set(standards["band"]) == {"K5", "K8", "K12", "ALL"}
    ngss = standards[standards["framework"] == "NGSS"]
    assert set(ngss["subject"]) == {"physical", "life", "earth/space", "engineering"}
    assert len(ngss[ngss["band"] == "K5"]) == 78


def test_commoncoretext_split_argument_and_bands():
    validation = corpora.load_commoncoretext(split="validation")
    assert set(validation["split"]) == {"validation"}
    assert set(validation["band"]) == set(BANDS)
    with pytest.raises(ValueError, match="split"):
        corpora.load_commoncoretext(split="test")


def test_demo_corpus_bands_are_known_or_missing():
    demo = corpora.load_demo_corpus()
    assert demo["id"].is_unique
    bands = set(demo["band"].dropna())
    assert bands <= set(BANDS) and "K5" in bands
    assert demo["band"].isna().any()


def test_clear_ambiguous_rows_have_no_band():
    clear = corpora.load_clear()
    ambiguous = clear[clear["ambiguous"]]
    assert len(ambiguous) > 0
    assert ambiguous["band"].isna().all()
    assert set(clear.loc[~clear["ambiguous"], "band"]) <= set(BANDS)


def test_gsm8k_split_and_dolch():
    assert corpora.load_gsm8k("train")["answer"].str.contains("#### ").all()
    with pytest.raises(ValueError, match="split"):
        corpora.load_gsm8k("dev")
    words = corpora.load_dolch()
    assert "the" in words and len(words) == len(set(words))


def test_root_override_reads_a_users_file(tmp_path):
    (tmp_path / "standards").mkdir()
    (tmp_path / "standards/standards.csv").write_text(
        "framework,code,grade,band,subject,text\nCCSS-Math,K.CC.A.1,K,K5,math,Count to 100.\n"
    )
    standards = corpora.load_standards(root=tmp_path)
    assert standards.to_dict("records") == [
        {
            "framework": "CCSS-Math",
            "code": "K.CC.A.1",
            "grade": "K",
            "band": "K5",
            "subject": "math",
            "text": "Count to 100.",
        }
    ]
    # files the root lacks fall back to the embedded copy
    assert len(corpora.load_aoa_table(root=tmp_path)) > 30_000


def test_file_with_missing_columns_is_rejected(tmp_path):
    (tmp_path / "aoa").mkdir()
    for name, table in (("aoa_lemma.csv", "lemma"), ("kuperman_aoa.csv", "kuperman")):
        (tmp_path / "aoa" / name).write_text("word,rating\napple,4.0\n")
        with pytest.raises(ValueError, match="aoa"):
            corpora.load_aoa_table(root=tmp_path, table=table)


def test_missing_file_names_the_file_and_the_build_command(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "EMBEDDED_DATA", tmp_path / "no-embedded-data")
    with pytest.raises(FileNotFoundError, match=r"gsm8k/test\.jsonl.*littlekit data build"):
        corpora.load_gsm8k(root=tmp_path)


def test_graded_informational_splits_and_boundary_books():
    train = corpora.load_graded_informational(split="train")
    validation = corpora.load_graded_informational(split="validation")
    boundary = corpora.load_graded_informational(split="boundary")
    assert set(train["band"]) == set(validation["band"]) == {"K5", "BEYOND"}
    assert set(boundary["band"]) == {"BOUNDARY"} and set(boundary["split"]) == {"boundary"}
    assert not set(train["source"]) & set(validation["source"])
    assert not set(train["split_group"]) & set(validation["split_group"])
    everything = corpora.load_graded_informational()
    assert len(everything) == len(train) + len(validation) + len(boundary)
    assert list(everything.columns) == list(corpora.INFORMATIONAL_COLUMNS)
    with pytest.raises(ValueError, match="boundary"):
        corpora.load_graded_informational(split="test")


def test_arc_extract_splits_and_grades():
    arc = corpora.load_arc()
    assert list(arc.columns) == list(corpora.ARC_COLUMNS)
    assert set(arc["band"]) == {"K5", "BEYOND"}
    assert arc.loc[arc["band"] == "K5", "grade"].between(3, 5).all()
    assert arc.loc[arc["band"] == "BEYOND", "grade"].between(6, 9).all()
    validation = corpora.load_arc(split="validation")
    assert set(validation["arc_split"]) <= {"Dev", "Test"} and len(validation) > 0
    with pytest.raises(ValueError, match="split"):
        corpora.load_arc(split="boundary")


ARC_HEADER = (
    "questionID,originalQuestionID,totalPossiblePoint,AnswerKey,isMultipleChoiceQuestion,includesDiagram,"
    "examName,schoolGrade,year,question,subject,category"
)


def test_arc_reads_the_full_set_from_a_users_folder(tmp_path):
    for subset in ("Easy", "Challenge"):
        (tmp_path / f"ARC-{subset}").mkdir()  # AI2's download keeps each set in its own folder
        for part in ("Train", "Dev", "Test"):
            rows = [
                f"{subset}{part}{i},{i},1,A,1,0,MCAS,{grade},2005,"
                f'"Which {subset} {part} stem {i} is this one? (A) a (B) b",,{part}'
                for i, grade in enumerate((3, 8))
            ]
            text = "\n".join([ARC_HEADER, *rows]) + "\n"
            (tmp_path / f"ARC-{subset}/ARC-{subset}-{part}.csv").write_text(text, encoding="utf-8")
    arc = corpora.load_arc(path=tmp_path)
    assert len(arc) == 12 and list(arc.columns) == list(corpora.ARC_COLUMNS)
    assert arc.loc[arc["grade"] == 3, "band"].eq("K5").all()
    assert not arc["text"].str.contains(r"\(A\)").any()
    assert set(corpora.load_arc(path=tmp_path, split="train")["arc_split"]) == {"Train"}
    (tmp_path / "ARC-Challenge/ARC-Challenge-Test.csv").unlink()
    with pytest.raises(FileNotFoundError, match="ARC-Challenge-Test.csv"):
        corpora.load_arc(path=tmp_path)
    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        corpora.load_arc(path=tmp_path / "no-such-folder")


def test_graded_informational_files_are_checked_and_named(tmp_path, monkeypatch):
    (tmp_path / "graded_informational/arc").mkdir(parents=True)
    (tmp_path / "graded_informational/passages.jsonl").write_text('{"id": "x", "text": "y"}\n')
    with pytest.raises(ValueError, match=r"passages\.jsonl lacks columns"):
        corpora.load_graded_informational(root=tmp_path)
    (tmp_path / "graded_informational/arc/stems.jsonl").write_text('{"id": "x", "grade": 4}\n')
    with pytest.raises(ValueError, match=r"stems\.jsonl lacks columns"):
        corpora.load_arc(root=tmp_path)
    monkeypatch.setattr(config, "EMBEDDED_DATA", tmp_path / "no-embedded-data")
    (tmp_path / "empty").mkdir()
    with pytest.raises(
        FileNotFoundError, match=r"graded_informational/passages\.jsonl.*littlekit data build"
    ):
        corpora.load_graded_informational(root=tmp_path / "empty")


def test_judge_labels_carry_text_band_and_provenance():
    from littlekit.judge.labels import text_sha256

    records = corpora.load_judge_labels()
    assert set(corpora.JUDGE_LABEL_COLUMNS + corpora.JUDGE_PROVENANCE_COLUMNS) <= set(records.columns)
    assert len(records) >= 9_000 and records["id"].is_unique
    assert set(records["band"]) == set(BANDS) and set(records["source"]) == {"llm-judge"}
    assert all(text_sha256(t) == s for t, s in zip(records["text"], records["text_sha256"], strict=True))
    assert all(j["kind"] == "llm" and j["evidence"] for j in records["judge"])
    votes = zip(records["votes"], records["band"], strict=True)
    assert all(v["pass_1"] == band or "pass_2" in v for v, band in votes)
    kids = records["corpus"].str.startswith("kids:")
    assert records.loc[kids, "book"].notna().all() and records.loc[~kids, "book"].isna().all()
    assert records["origin"].isna().sum() == (records["corpus"] == "graded_informational").sum()


def test_judge_quality_counts_the_released_records():
    quality = corpora.load_judge_quality()
    records = corpora.load_judge_labels()
    released = sum(sum(bands.values()) for bands in quality["by_corpus"].values())
    assert quality["released"] == released >= len(records)
    here = records.groupby(["corpus", "band"]).size()
    assert all(n <= quality["by_corpus"][corpus][band] for (corpus, band), n in here.items())
    hits, n = quality["k5_precision"]
    assert 0 < hits <= n and quality["k5_recall"][0] == hits
    assert sum(quality["calibration_confusion"].values()) == quality["calibration_n"]


def test_judge_rubric_names_the_bands_and_signals():
    rubric = corpora.load_judge_rubric()
    assert all(f"- {band}:" in rubric for band in BANDS)
    assert all(signal in rubric for signal in ("Language", "Context", "Subject content"))


def test_judge_files_missing_or_incomplete_are_named(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "EMBEDDED_DATA", tmp_path / "no-embedded-data")
    with pytest.raises(FileNotFoundError, match=r"judge_labels/labels\.jsonl\.gz.*littlekit data build"):
        corpora.load_judge_labels(root=tmp_path)
    (tmp_path / "judge_labels").mkdir()
    (tmp_path / "judge_labels/quality.json").write_text('{"k5_precision": [1, 2]}')
    missing = r"quality\.json lacks keys \['k5_recall', 'calibration_confusion'\]"
    with pytest.raises(ValueError, match=missing):
        corpora.load_judge_quality(root=tmp_path)
