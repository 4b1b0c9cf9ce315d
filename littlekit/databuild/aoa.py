"""Word -> age-of-acquisition tables from the Kuperman et al. (2012) ratings and their master file.

`aoa_lemma.csv` (the master file's `AoA_Kup_lem`) is the default table of filter stage 1: a Zipf
fit on it gives the released filter's imputation coefficients, so it is almost certainly the
released `aoa.parquet`. `kuperman_aoa.csv` (`Rating.Mean`, rated words only) is the alternative.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from littlekit.databuild.common import BuildLog, format_float, write_csv, write_text

KUPERMAN_SOURCE = "liangyugan/Psycholinguistic-EDA@0ebf4792 AoA_ratings_Kuperman_et_al_BRM.xlsx"
MASTER_SOURCE = "HeatherFryling/AgeofAcquisitionExploration@54dda7aa AoA_51715_words.csv"
BIEMILLER_SOURCE = "seannyD/BorrowingFreqAoA@000a2fb3 Brysbaert_Biemiller_test_based_AoA.xlsx"

# 'null', 'none', 'nan', 'true' and 'false' are words here: pandas' default NA parsing would drop them.
_NA_ONLY = {"keep_default_na": False, "na_values": ["NA", "#N/A", ""]}


def kuperman_table(frame: pd.DataFrame) -> pd.DataFrame:
    """`word, aoa` from Rating.Mean: lower-cased, NA dropped, first row kept when a word repeats."""
    table = pd.DataFrame(
        {
            "word": frame["Word"].astype(str).str.strip().str.lower(),
            "aoa": pd.to_numeric(frame["Rating.Mean"]),
        }
    )
    table = table.dropna(subset=["aoa"])
    table = table[table["word"] != ""]
    return table.drop_duplicates(subset="word", keep="first").reset_index(drop=True)


def master_table(frame: pd.DataFrame) -> pd.DataFrame:
    """`word, aoa_kup, aoa_kup_lem, freq_pm, perc_known, nsyll` from the 51,715-word master file."""
    columns = {
        "Word": "word",
        "AoA_Kup": "aoa_kup",
        "AoA_Kup_lem": "aoa_kup_lem",
        "Freq_pm": "freq_pm",
        "Perc_known": "perc_known",
        "Nsyll": "nsyll",
    }
    table = frame[list(columns)].rename(columns=columns)
    table["word"] = table["word"].astype(str).str.strip()
    for name in ("aoa_kup", "aoa_kup_lem", "freq_pm", "perc_known", "nsyll"):
        table[name] = pd.to_numeric(table[name], errors="coerce")
    return table.reset_index(drop=True)


def lemma_table(master: pd.DataFrame) -> pd.DataFrame:
    """`word, aoa` from the master table's `aoa_kup_lem`: lower-cased, NA dropped, first row kept."""
    table = pd.DataFrame({"word": master["word"].str.lower(), "aoa": master["aoa_kup_lem"]})
    table = table.dropna(subset=["aoa"])
    table = table[table["word"] != ""]
    return table.drop_duplicates(subset="word", keep="first").reset_index(drop=True)


def biemiller_table(frame: pd.DataFrame) -> pd.DataFrame:
    """`word, grade`: the lowest test-based grade over a word's meanings (single words only)."""
    words = frame["WORD"].astype(str).str.strip().str.lower()
    grades = pd.to_numeric(frame["AoAtestbased"], errors="coerce")
    table = pd.DataFrame({"word": words, "grade": grades}).dropna()
    table = table[table["word"].str.fullmatch(r"[a-z][a-z'\-]*")]
    table = table.groupby("word", sort=True, as_index=False)["grade"].min()
    table["grade"] = table["grade"].astype(int)
    return table


def build_aoa(source: Path, out: Path, log: BuildLog) -> dict[str, int]:
    folder = out / "aoa"
    kuperman = kuperman_table(pd.read_excel(source / "aoa/AoA_ratings_Kuperman_et_al_BRM.xlsx", **_NA_ONLY))
    write_csv(
        folder / "kuperman_aoa.csv",
        ["word", "aoa"],
        ((w, format_float(a)) for w, a in zip(kuperman["word"], kuperman["aoa"], strict=True)),
        log,
        KUPERMAN_SOURCE,
    )
    master = master_table(pd.read_csv(source / "aoa/AoA_51715_words.csv", encoding="utf-8-sig", **_NA_ONLY))
    write_csv(
        folder / "aoa_51715.csv",
        list(master.columns),
        ([row[0]] + [format_float(v) for v in row[1:]] for row in master.itertuples(index=False)),
        log,
        MASTER_SOURCE,
    )
    lemma = lemma_table(master)
    write_csv(
        folder / "aoa_lemma.csv",
        ["word", "aoa"],
        ((w, format_float(a)) for w, a in zip(lemma["word"], lemma["aoa"], strict=True)),
        log,
        MASTER_SOURCE,
    )
    biemiller = biemiller_table(
        pd.read_excel(source / "aoa/Brysbaert_Biemiller_test_based_AoA.xlsx", **_NA_ONLY)
    )
    write_csv(
        folder / "biemiller_grades.csv",
        ["word", "grade"],
        biemiller.itertuples(index=False),
        log,
        BIEMILLER_SOURCE,
    )
    counts = {
        "lemma": len(lemma),
        "lemma_dropped": len(master) - len(lemma),
        "kuperman": len(kuperman),
        "master": len(master),
        "biemiller": len(biemiller),
    }
    write_text(folder / "SOURCE.md", SOURCE_MD.format(**counts), log, "littlekit.databuild")
    return counts


SOURCE_MD = """\
# aoa/: age-of-acquisition tables

## aoa_lemma.csv ({lemma:,} rows): `word,aoa` (the default table of the AoA stage)

- Source: `AoA_51715_words.csv` from HeatherFryling/AgeofAcquisitionExploration @ 54dda7aa,
  the authors' master file (the same file as `aoa_51715.csv` below).
- Derived: `aoa` = `AoA_Kup_lem`, the Kuperman rating propagated to every inflected form of a
  rated lemma (years). Words are stripped and lower-cased; the {lemma_dropped} rows whose
  `AoA_Kup_lem` is `NA` are dropped; no word repeats after lower-casing (if one did, the first row
  would be kept). `null`, `none`, `true` and `false` are kept as words.
- Why it is the default: a least-squares fit of this column on wordfreq's Zipf frequency gives the
  released filter's imputation line, `14.602716 - 1.504689 * zipf` (r = -0.453), so this is almost
  certainly the table behind the released `data/aoa.parquet`. The paper's n = 50,142 words comes from
  fitting after reading the file with pandas' default NA parsing, which turns the word `null` into a
  missing value; this file keeps `null`, so the same fit on it counts one more word.

## kuperman_aoa.csv ({kuperman:,} rows): `word,aoa`

- Source: `AoA_ratings_Kuperman_et_al_BRM.xlsx` from liangyugan/Psycholinguistic-EDA @ 0ebf4792
  (the authors' distribution: crr.ugent.be/archives/806).
- Derived: `aoa` = `Rating.Mean` (mean rated age of acquisition, years). Words are stripped and
  lower-cased; the 19 words whose rating is `NA` (nobody knew them) are dropped. No word repeats
  after lower-casing (checked by the build); if one did, the first row would be kept.
  `null`, `none`, `true` and `false` are read as words, not as missing values. The alternative
  table of the AoA stage (`AoALexicon.load("data/aoa/kuperman_aoa.csv")`): rated words only.

## aoa_51715.csv ({master:,} rows): `word,aoa_kup,aoa_kup_lem,freq_pm,perc_known,nsyll`

- Source: `AoA_51715_words.csv` (UTF-8 with BOM) from HeatherFryling/AgeofAcquisitionExploration
  @ 54dda7aa, the authors' master file.
- Derived: columns `Word, AoA_Kup, AoA_Kup_lem, Freq_pm, Perc_known, Nsyll` renamed, word case kept,
  `NA`/`#N/A` left empty. `aoa_kup` is empty for words that were not rated directly;
  `aoa_kup_lem` carries the lemma's rating.

## biemiller_grades.csv ({biemiller:,} rows): `word,grade`

- Source: `Brysbaert_Biemiller_test_based_AoA.xlsx` from seannyD/BorrowingFreqAoA @ 000a2fb3.
- Derived: `grade` = the lowest `AoAtestbased` US school grade (2, 4, ..., 14) over all meanings
  of a word; lower-cased; multi-word entries dropped.

## Licence and citation

Distributed by the authors for research use. Cite:

- Kuperman, V., Stadthagen-Gonzalez, H., & Brysbaert, M. (2012). Age-of-acquisition ratings for
  30,000 English words. *Behavior Research Methods*, 44(4), 978-990.
- Brysbaert, M., & Biemiller, A. (2017). Test-based age-of-acquisition norms for 44 thousand
  English word meanings. *Behavior Research Methods*, 49(4), 1520-1523.
"""
