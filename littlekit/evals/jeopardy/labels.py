"""The clues' NGSS grade bands: the LLM judge's labels (its prompt: `littlekit.judge.prompts`) or the
project-written set's author labels, joined onto the clues as K-5 vs Beyond K-5."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.evals.jeopardy.loaders import AUTHORED_SOURCE, judge_text
from littlekit.grades import BANDS
from littlekit.judge.labels import make_label, text_sha256, write_labels
from littlekit.judge.prompts import (
    JudgePrompt,
    build_ngss_prompt,
    dci_code,
    dci_table,
)

SPLITS: tuple[str, ...] = ("K-5", "Beyond K-5")


def ngss_dci_table(
    standards: pd.DataFrame | None = None, per_dci: int = 1, max_chars: int = 200
) -> pd.DataFrame:
    """NGSS disciplinary core ideas: `dci, band, subject, text` (`littlekit.judge.prompts.dci_table`
    of `standards`, by default the data root's standards table)."""
    from littlekit.databuild.corpora import load_standards

    return dci_table(load_standards() if standards is None else standards, per_dci, max_chars)


def ngss_prompt(standards: pd.DataFrame | None = None, per_dci: int = 1) -> JudgePrompt:
    """The judge prompt (a `littlekit.judge.JudgePrompt` named "ngss_science") quoting every NGSS DCI
    (`littlekit.judge.prompts.build_ngss_prompt`; `standards` as in `ngss_dci_table`)."""
    from littlekit.databuild.corpora import load_standards

    return build_ngss_prompt(load_standards() if standards is None else standards, per_dci)


def label_clues(
    frame: pd.DataFrame,
    backend: Any,
    cache: Any = None,
    prompt: Any = None,
    batch_size: int = 64,
) -> list[dict[str, Any]]:
    """Judge labels (label records, `source` "llm-judge") for every clue, keyed by `id`.

    Answers are cached (`littlekit.judge.JudgeCache`), so a re-run asks the backend nothing.
    The DCI the judge names is kept under `judge["dci"]` when its answer holds one.
    """
    from littlekit.judge.annotate import annotate

    prompt = prompt or ngss_prompt()
    texts = [judge_text(row) for row in frame.to_dict("records")]
    records = annotate(texts, [prompt], backend, cache, ids=list(frame["id"]), batch_size=batch_size)
    keys = [(prompt.version, backend.model_id, r["text_sha256"]) for r in records]
    answers = cache.get_many(keys) if cache is not None else {}
    for record in records:
        key = (prompt.version, backend.model_id, record["text_sha256"])
        record["judge"]["dci"] = _answer_dci(answers[key].text) if key in answers else None
    return records


_ANSWER_DCI_RE = re.compile(r'"dci"\s*:\s*"([^"]{1,20})"')


def _answer_dci(answer: str) -> str | None:
    match = _ANSWER_DCI_RE.search(answer)
    return dci_code(match.group(1).strip().upper()) if match else None


def author_label(row: Mapping[str, Any], band: str, dci: str) -> dict[str, Any]:
    """A label record assigned by the clue's author (no votes, no judge) with its NGSS DCI code."""
    record = make_label(row["id"], judge_text(row), band, source=AUTHORED_SOURCE)
    record["dci"] = dci
    return record


def save_labels(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write label records as JSON lines (see `littlekit.judge.labels`)."""
    return write_labels(records, path)


def attach_split(
    frame: pd.DataFrame, labels: Sequence[Mapping[str, Any]]
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Join labels on `id` (checking the text hash) and add `band` and `split` (K-5 / Beyond K-5).

    Clues without a label or with a null band are dropped and counted:
    counts input == labelled + unlabelled + null_band.
    """
    by_id = {str(r["id"]): r for r in labels}
    bands, unlabelled, null_band = [], 0, 0
    for row in frame.to_dict("records"):
        record = by_id.get(row["id"])
        if record is None:
            unlabelled += 1
            bands.append(None)
            continue
        if record["text_sha256"] != text_sha256(judge_text(row)):
            raise ValueError(f"label {row['id']} was made for a different clue text (text_sha256 differs)")
        if record["band"] is None:
            null_band += 1
        bands.append(record["band"])
    out = frame.assign(band=bands)
    out = out[out["band"].notna()].reset_index(drop=True)
    bad = sorted(set(out["band"]) - set(BANDS))
    if bad:
        raise ValueError(f"labels have unknown bands {bad}")
    out["split"] = out["band"].map(lambda b: "K-5" if b == "K5" else "Beyond K-5")
    counts = {"input": len(frame), "labelled": len(out), "unlabelled": unlabelled, "null_band": null_band}
    return out, counts


def sample_per_split(clues: pd.DataFrame, n: int, seed: int = 0) -> pd.DataFrame:
    """At most `n` clues of each split (a seeded sample), in the splits' order of appearance."""
    parts = [
        group.sample(n=min(len(group), n), random_state=seed)
        for _, group in clues.groupby("split", sort=False)
    ]
    return pd.concat(parts).reset_index(drop=True) if parts else clues.head(0)
