"""Word -> age-of-acquisition tables from the Kuperman et al. (2012) ratings and their master file."""

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
    counts = {"kuperman": len(kuperman), "master": len(master), "biemiller": len(biemiller)}
    write_text(folder / "SOURCE.md", SOURCE_MD.format(**counts), log, "littlekit.databuild")
    return counts


SOURCE_MD = """\
# aoa/: age-of-acquisition tables

## kuperman_aoa.csv ({kuperman:,} rows): `word,aoa`

- Source: `AoA_ratings_Kuperman_et_al_BRM.xlsx` from liangyugan/Psycholinguistic-EDA @ 0ebf4792
  (the authors' distribution: crr.ugent.be/archives/806).
- Derived: `aoa` = `Rating.Mean` (mean rated age of acquisition, years). Words are stripped and
  lower-cased; the 19 words whose rating is `NA` (nobody knew them) are dropped. No word repeats
  after lower-casing (checked by the build); if one did, the first row would be kept.
  `null`, `none`, `true` and `false` are read as words, not as missing values.

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
