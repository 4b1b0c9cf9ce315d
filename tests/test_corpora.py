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
