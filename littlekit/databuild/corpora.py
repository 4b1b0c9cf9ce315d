"""Loaders for the embedded data (`data/`) or any data root laid out the same way.

Every loader takes an optional `root` (default: `config.data_root()`, i.e. `$LITTLEKIT_DATA` or the
embedded default: a checkout's `data/`, or in a real install only the filter's default tables)
and returns a pandas DataFrame with the documented columns. A file a given root lacks is not
taken from the embedded copy (only the shipped default tables are, `config.SHIPPED_FILES`): a
missing file raises FileNotFoundError naming the file, the root (or `LITTLEKIT_DATA`) and how
to build it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from littlekit import config

Root = str | os.PathLike | None

AOA_COLUMNS = ("word", "aoa")
AOA_TABLES = {"lemma": "aoa/aoa_lemma.csv", "kuperman": "aoa/kuperman_aoa.csv"}
AOA_51715_COLUMNS = ("word", "aoa_kup", "aoa_kup_lem", "freq_pm", "perc_known", "nsyll")
STANDARDS_COLUMNS = ("framework", "code", "grade", "band", "subject", "text")
PASSAGE_COLUMNS = (
    "id",
    "text",
    "source",
    "source_kind",
    "genre",
    "label",
    "band",
    "split",
    "n_words",
    "split_group",
)
DEMO_COLUMNS = ("id", "text", "source", "band")
MATHCAMPS_COLUMNS = ("id", "standard", "statement", "answer", "type", "followup_to")
GSM8K_COLUMNS = ("question", "answer")
CLEAR_COLUMNS = (
    "id",
    "text",
    "bt_easiness",
    "lexile_band",
    "lexile_range",
    "band",
    "ambiguous",
    "category",
    "author",
    "title",
    "licence",
)
ONESTOP_COLUMNS = ("id", "level", "text")
_BUILD_HINT = "a checkout builds data/ with `littlekit data build --from ../shared/data --out data`"


def _path(relative: str, root: Root) -> Path:
    try:
        return config.data_path(relative, root)
    except FileNotFoundError as error:  # the message names the file and LITTLEKIT_DATA
        raise FileNotFoundError(f"{error}; {_BUILD_HINT}") from None


def _read_jsonl(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return _check(pd.DataFrame(rows, columns=None if rows else list(columns)), columns, path)


def _check(frame: pd.DataFrame, columns: tuple[str, ...], path: Path) -> pd.DataFrame:
    missing = [name for name in columns if name not in frame.columns]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}")
    return frame


def _read_csv(path: Path, columns: tuple[str, ...], **kwargs) -> pd.DataFrame:
    # keep_default_na=False: 'null', 'none' and 'nan' are words in the AoA tables
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], **kwargs)
    return _check(frame, columns, path)


def load_aoa_table(root: Root = None, full: bool = False, table: str = "lemma") -> pd.DataFrame:
    """AoA `word, aoa` (lower-cased words, years); `full=True` gives the 51,715-word master table.

    `table="lemma"` (default) is `aoa/aoa_lemma.csv`, the master file's lemma-propagated
    `AoA_Kup_lem`, which the AoA stage reads by default (the published Zipf coefficients are a fit
    on it); `table="kuperman"` is `aoa/kuperman_aoa.csv`, Kuperman's `Rating.Mean` of rated words.
    """
    if table not in AOA_TABLES:
        raise ValueError(f"table must be one of {sorted(AOA_TABLES)}, not {table!r}")
    if full:
        return _read_csv(_path("aoa/aoa_51715.csv", root), AOA_51715_COLUMNS, dtype={"word": str})
    return _read_csv(_path(AOA_TABLES[table], root), AOA_COLUMNS, dtype={"word": str, "aoa": float})


def load_standards(root: Root = None) -> pd.DataFrame:
    """CCSS-Math, CCSS-ELA and NGSS: `framework, code, grade, band, subject, text` (all strings)."""
    return _read_csv(_path("standards/standards.csv", root), STANDARDS_COLUMNS, dtype=str)


def load_commoncoretext(root: Root = None, split: str | None = None) -> pd.DataFrame:
    """CommonCoreText-PD passages; `split` ('train' or 'validation') selects one side."""
    frame = _read_jsonl(_path("commoncoretext_pd/passages.jsonl", root), PASSAGE_COLUMNS)
    if split is not None:
        if split not in {"train", "validation"}:
            raise ValueError(f"split must be 'train' or 'validation', not {split!r}")
        frame = frame[frame["split"] == split].reset_index(drop=True)
    return frame


def load_demo_corpus(root: Root = None) -> pd.DataFrame:
    """The demo corpus: `id, text, source, band` (band None where the source does not fix one)."""
    return _read_jsonl(_path("demo_corpus/demo_web.jsonl", root), DEMO_COLUMNS)


def load_mathcamps(root: Root = None) -> pd.DataFrame:
    """MathCAMPS v1: `id, standard, statement, answer, type, followup_to`."""
    return _read_jsonl(_path("mathcamps/mathcamps.jsonl", root), MATHCAMPS_COLUMNS)


def load_gsm8k(split: str = "test", root: Root = None) -> pd.DataFrame:
    """GSM8K `question, answer` for split 'train' or 'test'."""
    if split not in {"train", "test"}:
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    return _read_jsonl(_path(f"gsm8k/{split}.jsonl", root), GSM8K_COLUMNS)


def load_clear(root: Root = None) -> pd.DataFrame:
    """CLEAR excerpts with `bt_easiness`, the Lexile columns, the derived `band` and `ambiguous`."""
    frame = _read_csv(_path("clear/clear.csv", root), CLEAR_COLUMNS)
    frame["band"] = pd.Series([b if isinstance(b, str) else None for b in frame["band"]], dtype=object)
    return frame


def load_onestopenglish(root: Root = None) -> pd.DataFrame:
    """OneStopEnglish: `id, level, text`, level in ele / int / adv."""
    return _read_jsonl(_path("onestopenglish/onestop.jsonl", root), ONESTOP_COLUMNS)


def load_dolch(root: Root = None) -> list[str]:
    """The Dolch sight words, lower-cased."""
    path = _path("wordlists/dolch.txt", root)
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
