"""The Age-of-Acquisition lexicon behind filter stage 1: a word -> AoA table plus Zipf imputation.

A word in the table gets its rated AoA. A word missing from it gets
`intercept + slope * zipf`, with `zipf = wordfreq.zipf_frequency(word, "en")`, when that zipf
is above zero; otherwise the word is out of vocabulary (OOV). The published coefficients are
those of the released filter script (they are the least-squares fit on `AoA_Kup_lem` of the
51,715-word file, n = 50,142, r = -0.453; tests/filter/test_lexicon.py reproduces them);
`impute="fitted"` refits them on the loaded table and `impute="none"` turns imputation off.

The default table is `data/aoa/aoa_lemma.csv`, the master file's lemma-propagated `AoA_Kup_lem`
(51,695 words): the published coefficients are a fit on exactly that column, so it is almost
certainly the released filter's `aoa.parquet`. The alternative, `data/aoa/kuperman_aoa.csv`, is
Kuperman's `Rating.Mean` over the ~31k directly rated words only; load it by path.

Lookups are memoised per word (the table is the memo's seed, imputed and OOV words are added
on first sight) because `wordfreq.zipf_frequency` costs ~20 µs a call.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import wordfreq

from littlekit import config
from littlekit.text import WORD_RE

PUBLISHED_INTERCEPT = 14.602716
PUBLISHED_SLOPE = -1.504689
# The lemma-propagated table the published coefficients were fitted on (see the module docstring).
DEFAULT_TABLE = "aoa/aoa_lemma.csv"
KUPERMAN_TABLE = "aoa/kuperman_aoa.csv"
IMPUTE_MODES = ("published", "fitted", "none")
DEFAULT_IMPUTE = "published"  # the released filter's coefficients

# The memo marks OOV words with +inf: it sorts after every real AoA, so a stage can count and
# slice OOV tokens off a sorted list without a Python-level loop. AoALexicon refuses tables
# with non-finite AoAs so the marker is unambiguous (and sorting stays total).
OOV = math.inf


@dataclass(frozen=True)
class ImputationFit:
    """Least-squares line `aoa = intercept + slope * zipf` and the Pearson r over n words."""

    slope: float
    intercept: float
    r: float
    n: int


def zipf(word: str) -> float:
    """wordfreq's English Zipf frequency of a word (0.0 when wordfreq does not know it)."""
    return wordfreq.zipf_frequency(word, "en")


def read_aoa_table(path: str | os.PathLike) -> dict[str, float]:
    """Read a `word, aoa` csv or parquet table the way the released filter does.

    Words are lower-cased and stripped, rows with a missing word or AoA dropped, and the first
    row of a duplicated word kept. CSV is read without pandas' NA guessing so that words such
    as "null" or "nan" stay words.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"AoA table {path} does not exist")
    frame = _read_frame(path)
    missing = {"word", "aoa"} - set(frame.columns)
    if missing:
        raise ValueError(
            f"AoA table {path} lacks column(s) {sorted(missing)}; it has {list(frame.columns)} "
            "(expected the released artifact's shape: word, aoa)"
        )
    frame = frame[["word", "aoa"]]
    try:
        aoa = pd.to_numeric(frame["aoa"], errors="raise").astype("float64")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"AoA table {path}: column 'aoa' is not numeric ({exc})") from exc
    words = frame["word"].astype("string").str.lower().str.strip()
    table = pd.DataFrame({"word": words, "aoa": aoa}).dropna().drop_duplicates("word")
    if table.empty:
        raise ValueError(f"AoA table {path} has no usable (word, aoa) rows")
    negative = table[table["aoa"] < 0]
    if len(negative):  # ages in years: a sign flip or a centred column would keep every word
        shown = [f"{w} {a:g}" for w, a in zip(negative["word"][:3], negative["aoa"][:3], strict=True)]
        raise ValueError(f"AoA table {path} has {len(negative):,} negative ages (years), e.g. {shown}")
    # Plain str and float (not numpy scalars) keep the hot path on CPython's fast paths.
    return dict(zip(table["word"].tolist(), table["aoa"].tolist(), strict=True))


def _read_frame(path: Path) -> pd.DataFrame:
    suffixes = "".join(path.suffixes).lower()
    try:
        if suffixes.endswith((".parquet", ".pq")):
            return pd.read_parquet(path)
        if ".csv" in suffixes or ".tsv" in suffixes:
            sep = "\t" if ".tsv" in suffixes else ","
            return pd.read_csv(path, sep=sep, dtype={"word": str}, keep_default_na=False, na_values=[""])
    except Exception as exc:  # pandas/pyarrow raise many types for a damaged file
        raise ValueError(f"cannot read AoA table {path}: {exc}") from exc
    raise ValueError(f"AoA table {path}: unknown format (use .csv, .tsv, .parquet or .pq)")


def fit_zipf_imputation(table: Mapping[str, float] | pd.DataFrame) -> ImputationFit:
    """Fit AoA ~ Zipf by least squares over the table's words whose Zipf frequency is above 0."""
    if isinstance(table, pd.DataFrame):
        pairs = zip(table["word"], table["aoa"], strict=True)
    else:
        pairs = table.items()
    xs, ys = [], []
    for word, aoa in pairs:
        z = zipf(word)
        if z > 0:
            xs.append(z)
            ys.append(float(aoa))
    if len(xs) < 2:
        raise ValueError(f"need at least two words with zipf > 0 to fit, got {len(xs)}")
    x, y = np.asarray(xs), np.asarray(ys)
    slope, intercept = np.polyfit(x, y, 1)
    r = float(np.corrcoef(x, y)[0, 1])
    return ImputationFit(slope=float(slope), intercept=float(intercept), r=r, n=len(xs))


class _Memo(dict):
    """word -> AoA (or OOV) cache that resolves unseen words through the lexicon."""

    def __init__(self, lexicon: AoALexicon):
        super().__init__(lexicon.table)
        self._lexicon = lexicon

    def __missing__(self, word: str) -> float:
        if len(self) >= len(self._lexicon.table) + self._lexicon.memo_limit:
            # Keep memory bounded on endless streams of novel strings: forget imputed words.
            self.clear()
            self.update(self._lexicon.table)
        value = self._lexicon.resolve(word)
        self[word] = value
        return value


class AoALexicon:
    """Word -> Age of Acquisition (years), from a rated table with Zipf imputation for the rest."""

    def __init__(
        self,
        table: Mapping[str, float],
        impute: str = DEFAULT_IMPUTE,
        *,
        fit: ImputationFit | None = None,
        source: str | None = None,
        memo_limit: int = 2_000_000,
    ):
        """`memo_limit` bounds how many words outside the table are remembered at once."""
        if impute not in IMPUTE_MODES:
            raise ValueError(f"impute must be one of {IMPUTE_MODES}, got {impute!r}")
        self.table: dict[str, float] = {str(w): float(a) for w, a in table.items()}
        not_finite = [w for w, a in self.table.items() if not math.isfinite(a)]
        if not_finite:
            raise ValueError(f"AoA table has non-finite values, e.g. {not_finite[:3]}")
        self.impute = impute
        self.source = source
        self.memo_limit = memo_limit
        self.fit: ImputationFit | None = None
        if impute == "published":
            self.intercept, self.slope = PUBLISHED_INTERCEPT, PUBLISHED_SLOPE
        elif impute == "fitted":
            self.fit = fit or fit_zipf_imputation(self.table)
            self.intercept, self.slope = self.fit.intercept, self.fit.slope
        else:
            self.intercept = self.slope = math.nan
        self._memo = _Memo(self)

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, impute: str = DEFAULT_IMPUTE) -> AoALexicon:
        """Load a `word, aoa` csv/parquet table.

        The default is the embedded lemma table `aoa/aoa_lemma.csv` (`AoA_Kup_lem`, the table
        the published coefficients come from); pass `config.data_path(KUPERMAN_TABLE)` for
        Kuperman's `Rating.Mean` over rated words only.
        """
        path = Path(path) if path is not None else config.data_path(DEFAULT_TABLE)
        return cls(read_aoa_table(path), impute=impute, source=str(path))

    def __len__(self) -> int:
        return len(self.table)

    def __contains__(self, word: str) -> bool:
        return word in self.table

    def resolve(self, word: str) -> float:
        """AoA of one word without the memo; OOV words give the `OOV` marker (+inf)."""
        rated = self.table.get(word)
        if rated is not None:
            return rated
        if self.impute == "none":
            return OOV
        z = zipf(word)
        if z > 0:
            return self.intercept + self.slope * z
        return OOV

    def aoa(self, word: str) -> float | None:
        """AoA of a word (table, else imputed), or None when the word is OOV."""
        value = self._memo[word]
        return None if value == OOV else value

    def token_aoas(self, tokens: Iterable[str]) -> list[float]:
        """AoA per token, with `OOV` (+inf) for OOV tokens: the memoised hot path of stage 1."""
        return list(map(self._memo.__getitem__, tokens))

    def origin(self, word: str) -> str:
        """Where a word's AoA comes from: "table", "imputed" or "oov"."""
        if word in self.table:
            return "table"
        return "oov" if self._memo[word] == OOV else "imputed"

    def __repr__(self) -> str:
        return f"AoALexicon({len(self.table)} words, impute={self.impute!r}, source={self.source!r})"


def coverage(texts: Iterable[str], lexicon: AoALexicon) -> dict[str, float | int]:
    """Token-level share of the texts' word tokens covered by the table, by imputation, and OOV."""
    counts = {"table": 0, "imputed": 0, "oov": 0}
    for text in texts:
        for token in WORD_RE.findall(text.lower()):
            counts[lexicon.origin(token)] += 1
    total = sum(counts.values())
    shares = {f"{key}_share": (value / total if total else 0.0) for key, value in counts.items()}
    return {"n_tokens": total, **{f"n_{key}": value for key, value in counts.items()}, **shares}
