"""Per-corpus outcomes of a cascade run: counts per stage, kept share, precision against a band."""

from __future__ import annotations

import math

import pandas as pd

from littlekit.analysis.validate import corpus_outcomes


def test_corpus_outcomes_count_every_document_once_and_measure_precision_where_bands_exist():
    outcomes = pd.DataFrame({
        "family": ["web", "web", "web", "web", "kids", "kids"],
        "band": ["K5", "K8", "K8", None, "K5", "K5"],
        "kept": [True, True, False, True, True, False],
        "stage": [None, None, "fasttext", None, None, "aoa"],
    })
    table = corpus_outcomes(outcomes, ["aoa", "fasttext"])
    web, kids = table.loc["web"], table.loc["kids"]
    assert web["documents"] == 4 and web["dropped at fasttext"] == 1 and web["kept"] == 3
    assert web["banded kept"] == 2 and web["K5 kept"] == 1 and web["precision"] == 0.5
    assert kids["dropped at aoa"] == 1 and kids["precision"] == 1.0
    for _, row in table.iterrows():  # every document ends kept or dropped at one stage
        assert row["documents"] == row["kept"] + row["dropped at aoa"] + row["dropped at fasttext"]
    nothing_kept = corpus_outcomes(outcomes.assign(kept=False, stage="aoa"), ["aoa"])
    assert math.isnan(nothing_kept.loc["web", "precision"])
