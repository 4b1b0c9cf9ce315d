"""The AoA lexicon: loading `word, aoa` tables, Zipf imputation, the fit, and coverage."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import wordfreq

from littlekit import config
from littlekit.filter.lexicon import (
    DEFAULT_TABLE,
    KUPERMAN_TABLE,
    OOV,
    PUBLISHED_INTERCEPT,
    PUBLISHED_SLOPE,
    AoALexicon,
    ImputationFit,
    coverage,
    fit_zipf_imputation,
    read_aoa_table,
)

TABLE = {"the": 3.0, "cat": 4.0, "sat": 5.0, "mat": 6.0, "old": 13.0}
IMPUTED_WORD = "photosynthesis"  # not in TABLE, known to wordfreq
OOV_WORD = "qzxjvkw"  # unknown to wordfreq


def write_csv(path, table=TABLE):
    pd.DataFrame({"word": list(table), "aoa": list(table.values())}).to_csv(path, index=False)
    return path


def test_constants_are_the_released_scripts():
    assert PUBLISHED_INTERCEPT == 14.602716
    assert PUBLISHED_SLOPE == -1.504689


def test_table_word_gets_its_rating():
    lexicon = AoALexicon(TABLE)
    assert lexicon.aoa("cat") == 4.0
    assert lexicon.origin("cat") == "table"
    assert "cat" in lexicon and len(lexicon) == 5


def test_word_outside_table_is_imputed_from_zipf():
    z = wordfreq.zipf_frequency(IMPUTED_WORD, "en")
    assert z > 0
    lexicon = AoALexicon(TABLE)
    assert lexicon.aoa(IMPUTED_WORD) == 14.602716 - 1.504689 * z
    assert lexicon.origin(IMPUTED_WORD) == "imputed"


def test_imputation_for_a_word_with_known_zipf():
    # wordfreq 3.1.1 gives "cat" a Zipf of 4.78; outside the table it is imputed from that.
    assert wordfreq.zipf_frequency("cat", "en") == 4.78
    lexicon = AoALexicon({"dog": 3.0})
    assert lexicon.aoa("cat") == pytest.approx(14.602716 - 1.504689 * 4.78, abs=0)


def test_zero_zipf_is_oov():
    assert wordfreq.zipf_frequency(OOV_WORD, "en") == 0
    lexicon = AoALexicon(TABLE)
    assert lexicon.aoa(OOV_WORD) is None
    assert lexicon.origin(OOV_WORD) == "oov"
    assert lexicon.token_aoas([OOV_WORD, "cat"]) == [OOV, 4.0]


def test_impute_none_makes_every_unlisted_word_oov():
    lexicon = AoALexicon(TABLE, impute="none")
    assert lexicon.aoa(IMPUTED_WORD) is None
    assert lexicon.aoa("cat") == 4.0


def test_unknown_impute_mode_is_refused():
    with pytest.raises(ValueError, match="impute"):
        AoALexicon(TABLE, impute="mean")


def test_memo_answers_like_a_fresh_lookup_and_stays_bounded():
    lexicon = AoALexicon(TABLE, memo_limit=2)
    words = ["cat", IMPUTED_WORD, OOV_WORD, "dog", "house", "cat", IMPUTED_WORD]
    first = lexicon.token_aoas(words)
    assert first == [lexicon.resolve(w) for w in words]
    assert lexicon.token_aoas(words) == first
    assert len(lexicon._memo) <= len(TABLE) + 2
    assert lexicon.aoa("cat") == 4.0  # table words survive a memo reset


def synthetic_fit_table(slope: float, intercept: float) -> dict[str, float]:
    words = [w for w in wordfreq.top_n_list("en", 3000) if w.isascii() and w.isalpha()][:2000]
    table = {w: intercept + slope * wordfreq.zipf_frequency(w, "en") for w in words}
    table.update({"qzxjvkw": 99.0, "vvqqzzx": -50.0})  # zipf 0: must not enter the fit
    return table


def test_fit_recovers_a_known_line():
    table = synthetic_fit_table(slope=-2.0, intercept=16.0)
    fit = fit_zipf_imputation(table)
    assert isinstance(fit, ImputationFit)
    assert fit.slope == pytest.approx(-2.0, abs=1e-9)
    assert fit.intercept == pytest.approx(16.0, abs=1e-9)
    assert fit.r == pytest.approx(-1.0, abs=1e-9)
    assert fit.n == len(table) - 2


def test_fit_accepts_a_dataframe_and_needs_two_points():
    frame = pd.DataFrame({"word": ["cat", "the", "qzxjvkw"], "aoa": [4.0, 2.0, 9.0]})
    fit = fit_zipf_imputation(frame)
    assert fit.n == 2
    with pytest.raises(ValueError, match="at least two"):
        fit_zipf_imputation({"cat": 4.0, "qzxjvkw": 9.0})


def test_fitted_mode_uses_the_fitted_coefficients():
    table = synthetic_fit_table(slope=-1.25, intercept=13.0)
    lexicon = AoALexicon(table, impute="fitted")
    assert lexicon.fit is not None
    assert (lexicon.slope, lexicon.intercept) == (lexicon.fit.slope, lexicon.fit.intercept)
    assert lexicon.slope == pytest.approx(-1.25, abs=1e-9)
    z = wordfreq.zipf_frequency(IMPUTED_WORD, "en")
    assert IMPUTED_WORD not in table
    assert lexicon.aoa(IMPUTED_WORD) == lexicon.fit.intercept + lexicon.fit.slope * z
    assert lexicon.aoa(IMPUTED_WORD) != AoALexicon(table).aoa(IMPUTED_WORD)


def test_load_csv(tmp_path):
    lexicon = AoALexicon.load(write_csv(tmp_path / "aoa.csv"))
    assert lexicon.table == TABLE
    assert lexicon.impute == "published"


def test_load_parquet(tmp_path):
    path = tmp_path / "aoa.parquet"
    pd.DataFrame({"word": list(TABLE), "aoa": list(TABLE.values())}).to_parquet(path)
    lexicon = AoALexicon.load(path, impute="none")
    assert lexicon.table == TABLE
    assert all(type(v) is float for v in lexicon.table.values())


def test_load_normalises_like_the_released_script(tmp_path):
    # lower + strip, drop rows with a missing AoA, keep the first of duplicated words;
    # extra columns are ignored.
    frame = pd.DataFrame(
        {
            "word": [" Cat ", "cat", "Dog", "dog", "null", "nan", "", "owl"],
            "aoa": [4.0, 9.0, None, 5.0, 11.5, 12.5, 3.0, 6.0],
            "extra": range(8),
        }
    )
    for path in (tmp_path / "t.csv", tmp_path / "t.parquet"):
        frame.to_csv(path, index=False) if path.suffix == ".csv" else frame.to_parquet(path)
        table = read_aoa_table(path)
        assert table["cat"] == 4.0
        assert table["dog"] == 5.0
        assert table["null"] == 11.5 and table["nan"] == 12.5  # words, not missing values
        assert table["owl"] == 6.0


def test_default_path_comes_from_the_data_root(tmp_path, monkeypatch):
    (tmp_path / "aoa").mkdir()
    write_csv(tmp_path / "aoa" / "aoa_lemma.csv", {"zebra": 7.5})
    write_csv(tmp_path / "aoa" / "kuperman_aoa.csv", {"okapi": 9.5})
    monkeypatch.setenv("LITTLEKIT_DATA", str(tmp_path))
    lexicon = AoALexicon.load()
    assert lexicon.table == {"zebra": 7.5}
    assert lexicon.source.endswith("aoa_lemma.csv")
    assert DEFAULT_TABLE == "aoa/aoa_lemma.csv"
    assert AoALexicon.load(config.data_path(KUPERMAN_TABLE)).table == {"okapi": 9.5}


def test_missing_columns_are_named(tmp_path):
    path = tmp_path / "bad.csv"
    pd.DataFrame({"Word": ["cat"], "Rating.Mean": [4.0]}).to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['aoa', 'word'\]"):
        AoALexicon.load(path)


def test_non_numeric_aoa_is_refused(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("word,aoa\ncat,young\n")
    with pytest.raises(ValueError, match="not numeric"):
        AoALexicon.load(path)


def test_infinite_aoa_is_refused(tmp_path):
    path = tmp_path / "bad.parquet"
    pd.DataFrame({"word": ["cat"], "aoa": [math.inf]}).to_parquet(path)
    with pytest.raises(ValueError, match="non-finite"):
        AoALexicon.load(path)
    with pytest.raises(ValueError, match="non-finite"):
        AoALexicon({"cat": math.nan})


def test_unreadable_and_missing_files(tmp_path):
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not a parquet file")
    with pytest.raises(ValueError, match="cannot read AoA table"):
        AoALexicon.load(broken)
    with pytest.raises(ValueError, match="unknown format"):
        AoALexicon.load(write_csv(tmp_path / "aoa.txt"))
    with pytest.raises(FileNotFoundError):
        AoALexicon.load(tmp_path / "absent.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("word,aoa\n")
    with pytest.raises(ValueError, match="no usable"):
        AoALexicon.load(empty)


def test_coverage_counts_tokens_by_origin():
    texts = ["The cat SAT on the mat.", f"{IMPUTED_WORD} {OOV_WORD} a 42", ""]
    result = coverage(texts, AoALexicon(TABLE))
    # tokens: the cat sat on the mat | photosynthesis qzxjvkw  ("a" and "42" are not tokens)
    assert result["n_tokens"] == 8
    assert (result["n_table"], result["n_imputed"], result["n_oov"]) == (5, 2, 1)
    assert result["table_share"] + result["imputed_share"] + result["oov_share"] == pytest.approx(1.0)
    assert result["oov_share"] == 1 / 8
    assert coverage([], AoALexicon(TABLE))["n_tokens"] == 0


EMBEDDED_AOA = Path(__file__).resolve().parents[2] / "data" / "aoa"
AOA_51715 = EMBEDDED_AOA / "aoa_51715.csv"


@pytest.mark.skipif(not AOA_51715.exists(), reason="embedded data/aoa/aoa_51715.csv not built")
def test_published_coefficients_are_the_fit_on_the_51715_word_file():
    # Where 14.602716 and -1.504689 come from: AoA_Kup_lem of the 51,715-word file, read with
    # pandas' default NA strings (which turn the word "null" into a missing value), words with
    # zipf > 0. That reproduces the paper's r = -0.453 over n = 50,142 to the printed digits.
    frame = pd.read_csv(AOA_51715)
    fit = fit_zipf_imputation(pd.DataFrame({"word": frame["word"], "aoa": frame["aoa_kup_lem"]}).dropna())
    assert (round(fit.slope, 6), round(fit.intercept, 6)) == (PUBLISHED_SLOPE, PUBLISHED_INTERCEPT)
    assert (round(fit.r, 3), fit.n) == (-0.453, 50_142)


@pytest.mark.skipif(
    not (EMBEDDED_AOA / "aoa_lemma.csv").exists(), reason="embedded data/aoa/aoa_lemma.csv not built"
)
def test_fit_on_the_embedded_default_table_gives_the_published_coefficients(monkeypatch):
    # The default table keeps the word "null" (zipf 3.73, AoA 11.53) that pandas' NA parsing
    # dropped from the published fit, so it fits one more word and the coefficients move in the
    # fifth significant digit; everything else is the same data.
    monkeypatch.delenv("LITTLEKIT_DATA", raising=False)
    lexicon = AoALexicon.load(impute="fitted")
    assert Path(lexicon.source).resolve() == (EMBEDDED_AOA / "aoa_lemma.csv").resolve()
    assert "null" in lexicon
    fit = lexicon.fit
    assert fit.n == 50_143
    assert fit.slope == pytest.approx(PUBLISHED_SLOPE, abs=1e-3)
    assert fit.intercept == pytest.approx(PUBLISHED_INTERCEPT, abs=1e-3)
    assert round(fit.r, 3) == -0.453
