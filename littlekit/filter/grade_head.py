"""A "grade head" for stage 3: P(K5) from the encoder's log-odds plus cheap reading-level features.

Why: stage 3 (`littlekit.filter.encoder.EncoderStage`) and stage 2 (fastText) are classifiers
trained on labelled passages, and on corpora they never saw they rank K-5 text above
Beyond-K-5 text partly by genre (fiction, web, textbook) rather than by reading level. The
features here measure reading level directly; a small logistic regression over them and the
encoder's log-odds,

    P3(K5) = sigmoid(intercept + sum_j coef_j * (x_j - mean_j) / scale_j),
    x = [logit(encoder P(K5)), readability features...],

is the fix: on corpora held out of every model it ranks K-5 above Beyond-K-5 better than either
classifier alone (chapter 4, section 10). Stage 3 (`EncoderStage`) uses a head it finds beside the
encoder (`grade_head.json` in the model directory): it keeps a document when P3(K5) >= 0.5 (and
>= its minimum P(K5) when one is set) instead of when the encoder's argmax is K5.

`readability_features(texts)` gives one row per text. Every column is finite; a text without
word tokens gets zeros and `no_words = 1`. Word tokens are the released filter's
(`littlekit.text.word_tokens`: lower-cased runs of two or more ASCII letters) and sentences
`littlekit.text.sentences`, so the features see a text exactly as stage 1 does. Columns
(`FEATURE_COLUMNS`, in this order; `n_words` is also returned but is not a model input):

- `words_per_sentence`: word tokens / sentences holding at least one word token;
- `word_length`: mean characters per word token;
- `long_word_share`: share of word tokens of at least 7 letters (`readability.LONG_WORD_CHARS`);
- `syllables_per_word`: mean syllables per word token, each counted by textstat 0.7.8's
  `syllable_count` (CMU dictionary, pyphen for words it lacks), memoised per word;
- `flesch_kincaid`, `dale_chall`: textstat 0.7.8's `flesch_kincaid_grade` and
  `dale_chall_readability_score` on the whole text (textstat's own words and sentences; see
  `littlekit.readability` for what that means);
- `type_token_ratio`: distinct word tokens / word tokens (falls with length; `log_words` lets
  the head allow for that);
- `dolch_share`: share of word tokens that are Dolch sight words (`data/wordlists/dolch.txt`);
- `digit_share`: digits / non-whitespace characters;
- `log_words`: log(1 + word tokens);
- `aoa_mean`, `aoa_p50`, `aoa_p75`, `aoa_p90`, `aoa_p95`: mean and percentiles (numpy's
  "linear" method, as stage 1: `aoa_p95` is stage 1's `p95_aoa`) of the AoAs of the tokens
  that have one;
- `aoa_over_8`, `aoa_over_10`, `aoa_over_12`: share of those tokens with AoA above 8, 10, 12;
- `aoa_unrated_share`: share of word tokens not in the rated table;
- `aoa_oov_share`: share of word tokens without any AoA (stage 1's OOV share). With the default
  lexicon, a word missing from the table gets stage 1's Zipf-imputed AoA, so this is lower
  than `aoa_unrated_share`; with a plain dict the two are equal;
- `no_words`: 1.0 for a text without word tokens (every other column is then 0.0), else 0.0.

The AoA source is stage 1's: `AoALexicon.load()` (the embedded `aoa/aoa_lemma.csv` with the
published Zipf imputation), or the `aoa` argument (an `AoALexicon`, or a plain word -> AoA
mapping used without imputation).

`GradeHead` is the fitted head (a frozen dataclass, saved as a readable JSON file, usually
`grade_head.json`); `cross_fitted_p_k5` scores each row with a head fitted without its fold;
`stack_on_encoder` turns out-of-fold encoder scores into out-of-fold stage-3 scores and fits the
head stage 3 ships.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import textstat

from littlekit.filter.aoa import linear_percentile
from littlekit.filter.lexicon import OOV, AoALexicon
from littlekit.readability import LONG_WORD_CHARS
from littlekit.text import sentences, word_tokens

FEATURE_COLUMNS: tuple[str, ...] = (
    "words_per_sentence",
    "word_length",
    "long_word_share",
    "syllables_per_word",
    "flesch_kincaid",
    "dale_chall",
    "type_token_ratio",
    "dolch_share",
    "digit_share",
    "log_words",
    "aoa_mean",
    "aoa_p50",
    "aoa_p75",
    "aoa_p90",
    "aoa_p95",
    "aoa_over_8",
    "aoa_over_10",
    "aoa_over_12",
    "aoa_unrated_share",
    "aoa_oov_share",
    "no_words",
)
COUNT_COLUMNS: tuple[str, ...] = ("n_words",)
AOA_PERCENTILES = (50, 75, 90, 95)
AOA_OVER = (8, 10, 12)
# The head's first input when it uses stage 3: logit of the encoder's P(K5), clipped as
# littlekit.fit.generalisation clips log-odds.
ENCODER_INPUT = "encoder_log_odds"
LOG_ODDS_CLIP = 1e-6
FILE_NAME = "grade_head.json"
# stage 3's band for a document the head scores below its keep level (the head has no per-band output)
BELOW_K5 = "not-K5"
KEEP_AT = 0.5  # stage 3 with a head keeps at P3(K5) >= this (and >= the point's minimum P(K5))
FORMAT = "littlekit.grade_head"
VERSION = 1

AoASource = AoALexicon | Mapping[str, float]


# --- features ----------------------------------------------------------------------------------


@cache
def _default_lexicon() -> AoALexicon:
    return AoALexicon.load()


@cache
def _default_dolch() -> frozenset[str]:
    from littlekit.databuild.corpora import load_dolch

    return frozenset(load_dolch())


@cache
def _syllables(word: str) -> int:
    return int(textstat.syllable_count(word))


def _aoa_lookup(aoa: AoASource | None):
    """(token AoAs with OOV = +inf, rated table) for the AoA source."""
    if aoa is None:
        aoa = _default_lexicon()
    if isinstance(aoa, AoALexicon):
        return aoa.token_aoas, aoa.table
    table = {str(word): float(value) for word, value in aoa.items()}
    bad = [word for word, value in table.items() if not math.isfinite(value)]
    if bad:
        raise ValueError(f"AoA table has non-finite values, e.g. {bad[:3]}")
    return (lambda tokens: [table.get(token, OOV) for token in tokens]), table


def _empty_row() -> dict[str, float]:
    row = dict.fromkeys(FEATURE_COLUMNS, 0.0)
    row["no_words"] = 1.0
    row["n_words"] = 0
    return row


def _row(text: str, token_aoas, rated: Mapping[str, float], dolch: frozenset[str]) -> dict[str, float]:
    tokens = word_tokens(text)
    non_space = sum(not char.isspace() for char in text)
    digit_share = sum(char.isdigit() for char in text) / non_space if non_space else 0.0
    if not tokens:
        row = _empty_row()
        row["digit_share"] = digit_share
        return row
    n = len(tokens)
    per_sentence = [count for count in (len(word_tokens(s)) for s in sentences(text)) if count]
    values = sorted(token_aoas(tokens))
    n_scored = n - sum(value == OOV for value in values)  # OOV (+inf) sorts last
    scored = values[:n_scored]
    row: dict[str, float] = {
        "words_per_sentence": n / len(per_sentence) if per_sentence else float(n),
        "word_length": sum(map(len, tokens)) / n,
        "long_word_share": sum(len(token) >= LONG_WORD_CHARS for token in tokens) / n,
        "syllables_per_word": sum(map(_syllables, tokens)) / n,
        "flesch_kincaid": float(textstat.flesch_kincaid_grade(text)),
        "dale_chall": float(textstat.dale_chall_readability_score(text)),
        "type_token_ratio": len(set(tokens)) / n,
        "dolch_share": sum(token in dolch for token in tokens) / n,
        "digit_share": digit_share,
        "log_words": math.log1p(n),
        "aoa_mean": sum(scored) / n_scored if n_scored else 0.0,
    }
    for q in AOA_PERCENTILES:
        row[f"aoa_p{q}"] = linear_percentile(scored, q) if n_scored else 0.0
    for age in AOA_OVER:
        row[f"aoa_over_{age}"] = sum(value > age for value in scored) / n_scored if n_scored else 0.0
    row["aoa_unrated_share"] = sum(token not in rated for token in tokens) / n
    row["aoa_oov_share"] = (n - n_scored) / n
    row["no_words"] = 0.0
    row["n_words"] = n
    for key, value in row.items():  # textstat on odd text must not leak NaN or inf into a head
        if not math.isfinite(value):
            row[key] = 0.0
    return row


def readability_features(
    texts: Iterable[str | None],
    aoa: AoASource | None = None,
    dolch: Iterable[str] | None = None,
    index: Iterable | None = None,
) -> pd.DataFrame:
    """One row per text: `FEATURE_COLUMNS` (see the module docstring) then `n_words`.

    `aoa`: an `AoALexicon` (stage 1's view, imputation included) or a word -> AoA mapping;
    default stage 1's embedded lexicon. `dolch`: the sight words; default the embedded list.
    A None or wordless text gives a row of zeros with `no_words = 1.0`, never NaN.
    """
    token_aoas, rated = _aoa_lookup(aoa)
    sight = _default_dolch() if dolch is None else frozenset(word.lower() for word in dolch)
    rows = [_row(text or "", token_aoas, rated, sight) for text in texts]
    frame = pd.DataFrame(rows, columns=[*FEATURE_COLUMNS, *COUNT_COLUMNS])
    frame = frame.astype({column: "float64" for column in FEATURE_COLUMNS} | {"n_words": "int64"})
    if index is not None:
        frame.index = pd.Index(list(index))
    return frame


# --- the head ----------------------------------------------------------------------------------


def encoder_log_odds(encoder_p_k5: Sequence[float] | np.ndarray) -> np.ndarray:
    """logit(P(K5)), with P clipped to [1e-6, 1 - 1e-6]."""
    p = np.clip(np.asarray(encoder_p_k5, dtype=float), LOG_ODDS_CLIP, 1 - LOG_ODDS_CLIP)
    return np.log(p / (1 - p))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z)
    positive = z >= 0
    out[positive] = 1.0 / (1.0 + np.exp(-z[positive]))
    exp_z = np.exp(z[~positive])
    out[~positive] = exp_z / (1.0 + exp_z)
    return out


def _design(
    encoder_p_k5: Sequence[float] | np.ndarray | None, features: pd.DataFrame, names: Sequence[str]
) -> np.ndarray:
    """The input matrix, in `names`' order; ValueError on missing columns, lengths, non-finite values."""
    uses_encoder = bool(names) and names[0] == ENCODER_INPUT
    feature_names = list(names[1:] if uses_encoder else names)
    missing = [name for name in feature_names if name not in features.columns]
    if missing:
        raise ValueError(f"features lack the head's column(s) {missing}")
    columns = [features[name].to_numpy(dtype=float) for name in feature_names]
    if uses_encoder:
        if encoder_p_k5 is None:
            raise ValueError("this head takes the encoder's P(K5) as its first input; got None")
        p = np.asarray(encoder_p_k5, dtype=float)
        if p.shape != (len(features),):
            raise ValueError(f"encoder_p_k5 has shape {p.shape}, the features {len(features)} rows")
        if not np.isfinite(p).all():
            raise ValueError(f"encoder_p_k5 has {int((~np.isfinite(p)).sum())} non-finite value(s)")
        columns.insert(0, encoder_log_odds(p))
    elif encoder_p_k5 is not None:
        raise ValueError("this head was fitted on features only; pass encoder_p_k5=None")
    matrix = np.column_stack(columns) if columns else np.empty((len(features), 0))
    bad = ~np.isfinite(matrix).all(axis=0)
    if bad.any():
        columns_bad = [name for name, is_bad in zip(names, bad, strict=True) if is_bad]
        raise ValueError(f"non-finite feature values in column(s) {columns_bad}")
    return matrix


@dataclass(frozen=True)
class GradeHead:
    """A logistic regression over standardised inputs: `inputs` (the encoder's log-odds first when
    used, then readability feature columns), their training `means` and `scales`, the
    `coefficients` on the standardised inputs, and the `intercept`. `C` is the inverse L2
    strength it was fitted with; `n_train` and `n_k5` count its training rows."""

    inputs: tuple[str, ...]
    means: tuple[float, ...]
    scales: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    C: float = 1.0
    n_train: int = 0
    n_k5: int = 0
    keep_at: ClassVar[float] = KEEP_AT  # the level stage 3 keeps at (not a fitted field)

    def __post_init__(self) -> None:
        n = len(self.inputs)
        if not n:
            raise ValueError("a grade head needs at least one input")
        if len(set(self.inputs)) != n:
            raise ValueError(f"inputs repeat a name: {list(self.inputs)}")
        if ENCODER_INPUT in self.inputs[1:]:
            raise ValueError(f"{ENCODER_INPUT} must be the first input when used")
        for name in ("means", "scales", "coefficients"):
            values = getattr(self, name)
            if len(values) != n:
                raise ValueError(f"{name} has {len(values)} values for {n} inputs")
            if not all(isinstance(v, int | float) and math.isfinite(v) for v in values):
                raise ValueError(f"{name} holds a non-numeric or non-finite value")
        if not all(scale > 0 for scale in self.scales):
            raise ValueError("scales must all be positive")
        if not (isinstance(self.intercept, int | float) and math.isfinite(self.intercept)):
            raise ValueError(f"intercept {self.intercept!r} is not a finite number")
        if not (isinstance(self.C, int | float) and self.C > 0 and math.isfinite(self.C)):
            raise ValueError(f"C {self.C!r} is not a positive number")
        if not all(isinstance(count, int) and count >= 0 for count in (self.n_train, self.n_k5)):
            raise ValueError(f"n_train {self.n_train!r} and n_k5 {self.n_k5!r} must be counts")

    @property
    def uses_encoder(self) -> bool:
        return self.inputs[0] == ENCODER_INPUT

    @property
    def feature_names(self) -> tuple[str, ...]:
        """The readability feature columns it reads (its inputs without the encoder's)."""
        return self.inputs[1:] if self.uses_encoder else self.inputs

    @classmethod
    def fit(
        cls,
        encoder_p_k5: Sequence[float] | np.ndarray | None,
        features: pd.DataFrame,
        is_k5: Sequence[bool] | np.ndarray,
        C: float = 1.0,
        feature_names: Sequence[str] = FEATURE_COLUMNS,
    ) -> GradeHead:
        """Fit on rows of `features` (and the encoder's P(K5) per row; None fits a features-only
        head) against `is_k5`, by scikit-learn's L2 logistic regression (lbfgs) with strength `C`
        on standardised inputs. A column constant over the training rows gets scale 1."""
        from sklearn.linear_model import LogisticRegression

        names = ((ENCODER_INPUT,) if encoder_p_k5 is not None else ()) + tuple(feature_names)
        if encoder_p_k5 is None and not names:
            raise ValueError("nothing to fit: no encoder input and no feature columns")
        x = _design(encoder_p_k5, features, names)
        y = np.asarray(is_k5, dtype=bool)
        if y.shape != (len(x),):
            raise ValueError(f"is_k5 has shape {y.shape}, the features {len(x)} rows")
        if y.all() or not y.any():
            raise ValueError(f"need K-5 and other rows to fit; got {int(y.sum())} K-5 of {len(y)}")
        if not (C > 0 and math.isfinite(C)):
            raise ValueError(f"C must be a positive number, got {C!r}")
        means = x.mean(axis=0)
        scales = x.std(axis=0)
        scales[~(scales > 1e-12)] = 1.0
        model = LogisticRegression(C=C, max_iter=5_000)
        model.fit((x - means) / scales, y)
        return cls(
            inputs=names,
            means=tuple(map(float, means)),
            scales=tuple(map(float, scales)),
            coefficients=tuple(map(float, model.coef_[0])),
            intercept=float(model.intercept_[0]),
            C=float(C),
            n_train=len(y),
            n_k5=int(y.sum()),
        )

    def log_odds(
        self, encoder_p_k5: Sequence[float] | np.ndarray | None, features: pd.DataFrame
    ) -> np.ndarray:
        """The head's logit of P3(K5) per row."""
        x = _design(encoder_p_k5, features, self.inputs)
        z = (x - np.asarray(self.means)) / np.asarray(self.scales)
        return z @ np.asarray(self.coefficients) + self.intercept

    def p_k5(self, encoder_p_k5: Sequence[float] | np.ndarray | None, features: pd.DataFrame) -> np.ndarray:
        """P3(K5) per row; `encoder_p_k5` must be None exactly when the head is features-only."""
        return _sigmoid(self.log_odds(encoder_p_k5, features))

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, **asdict(self)}

    def save(self, path: str | os.PathLike) -> Path:
        """Write the head as indented JSON (a folder gets `grade_head.json` inside); returns the file."""
        path = Path(path)
        if path.is_dir():
            path = path / FILE_NAME
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(partial, path)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike) -> GradeHead:
        """Read a file `save` wrote (a folder means its `grade_head.json`); ValueError naming the
        file when it is not such a file, of another version, or inconsistent."""
        path = Path(path)
        if path.is_dir():
            path = path / FILE_NAME
        if not path.is_file():
            raise FileNotFoundError(f"grade head {path} does not exist")
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"grade head {path} is not a JSON file: {error}") from None
        if not isinstance(record, dict) or record.get("format") != FORMAT:
            raise ValueError(f"grade head {path} is not a grade head file (no \"format\": \"{FORMAT}\")")
        if record.get("version") != VERSION:
            raise ValueError(
                f"grade head {path} has version {record.get('version')!r}; this littlekit reads "
                f"version {VERSION} (refit it with GradeHead.fit)"
            )
        fields = {"inputs", "means", "scales", "coefficients", "intercept", "C", "n_train", "n_k5"}
        missing = sorted(fields - record.keys())
        if missing:
            raise ValueError(f"grade head {path} lacks field(s) {missing}")
        try:
            if not all(isinstance(record[k], list) for k in ("inputs", "means", "scales", "coefficients")):
                raise ValueError("inputs, means, scales and coefficients must be lists")
            if not all(isinstance(name, str) for name in record["inputs"]):
                raise ValueError("inputs must be column names")
            return cls(
                inputs=tuple(record["inputs"]),
                means=tuple(record["means"]),
                scales=tuple(record["scales"]),
                coefficients=tuple(record["coefficients"]),
                intercept=record["intercept"],
                C=record["C"],
                n_train=record["n_train"],
                n_k5=record["n_k5"],
            )
        except (TypeError, ValueError) as error:
            raise ValueError(f"grade head {path} is inconsistent: {error}") from None


def cross_fitted_p_k5(
    encoder_p_k5: Sequence[float] | np.ndarray | None,
    features: pd.DataFrame,
    is_k5: Sequence[bool] | np.ndarray,
    folds: Sequence[Any] | np.ndarray,
    C: float = 1.0,
    feature_names: Sequence[str] = FEATURE_COLUMNS,
) -> np.ndarray:
    """Each row's P3(K5) from a head fitted on the rows of every other fold (out-of-fold scores:
    with `folds` = corpus, leave-one-corpus-out). Rows align by position. Every fold's complement
    must hold K-5 and other rows."""
    folds = np.asarray(folds)
    y = np.asarray(is_k5, dtype=bool)
    n = len(features)
    if folds.shape != (n,) or y.shape != (n,):
        raise ValueError(f"folds {folds.shape} and is_k5 {y.shape} must have one value per row ({n})")
    p = None if encoder_p_k5 is None else np.asarray(encoder_p_k5, dtype=float)
    unique = pd.unique(folds)
    if len(unique) < 2:
        raise ValueError(f"cross-fitting needs at least two folds, got {len(unique)}")
    out = np.full(n, np.nan)
    for fold in unique:
        held = folds == fold
        train = ~held
        try:
            head = GradeHead.fit(
                None if p is None else p[train],
                features.iloc[train],
                y[train],
                C=C,
                feature_names=feature_names,
            )
        except ValueError as error:
            raise ValueError(f"fold {fold!r}: cannot fit without it: {error}") from None
        out[held] = head.p_k5(None if p is None else p[held], features.iloc[held])
    return out


def head_band(p_k5: Sequence[float] | np.ndarray) -> np.ndarray:
    """Stage 3's band under a head: "K5" where P3(K5) >= 0.5, else `BELOW_K5`."""
    return np.where(np.asarray(p_k5, dtype=float) >= KEEP_AT, "K5", BELOW_K5).astype(object)


@dataclass
class StackedScores:
    """`stack_on_encoder`'s result: out-of-fold stage-3 scores and the head fitted on every row."""

    scores: pd.DataFrame  # enc_pred, enc_p_k5 (the head's), enc_model_pred, enc_model_p_k5 (the encoder's)
    head: GradeHead


def stack_on_encoder(
    encoded: pd.DataFrame,
    texts: Sequence[str] | pd.Series,
    is_k5: Sequence[bool] | np.ndarray,
    folds: Sequence[Any] | np.ndarray,
    C: float = 1.0,
) -> StackedScores:
    """Out-of-fold stage-3 scores from out-of-fold encoder scores.

    `encoded` is `littlekit.fit.operating_point.out_of_fold_encoder`'s frame (enc_pred, enc_p_k5;
    None/NaN where a row was not scored); `texts`, `is_k5` and `folds` align with it by position.
    Each scored row gets P3(K5) from a head fitted on the scored rows of the other folds (whose
    encoder scores are themselves out of fold), so no row's stage-3 score saw its fold; the
    encoder's own outputs move to enc_model_pred / enc_model_p_k5. The head returned is fitted on
    every scored row: it is the one stage 3 uses on new text, which its encoder never saw either.
    """
    scores = encoded.copy()
    p = scores["enc_p_k5"].to_numpy(dtype=float)
    scored = np.isfinite(p)
    if len(texts) != len(scores) or len(is_k5) != len(scores) or len(folds) != len(scores):
        raise ValueError(f"texts, is_k5 and folds must have one value per encoded row ({len(scores)})")
    if not scored.any():
        raise ValueError("no row was scored by the encoder: nothing to fit a grade head on")
    features = readability_features(np.asarray(texts, dtype=object)[scored])
    y, fold_of = np.asarray(is_k5, dtype=bool)[scored], np.asarray(folds)[scored]
    scores["enc_model_pred"], scores["enc_model_p_k5"] = scores["enc_pred"], scores["enc_p_k5"]
    stacked = np.full(len(scores), np.nan)
    stacked[scored] = cross_fitted_p_k5(p[scored], features, y, fold_of, C=C)
    scores["enc_p_k5"] = stacked
    band = np.full(len(scores), None, dtype=object)
    band[scored] = head_band(stacked[scored])
    scores["enc_pred"] = band
    return StackedScores(scores, GradeHead.fit(p[scored], features, y, C=C))
