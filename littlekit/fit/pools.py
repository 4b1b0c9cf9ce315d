"""Stage 5's two pools, taken from a cascade run of the earlier stages (1-4).

The paper scores each word by its rate in a Beyond-K-5 pool over its rate in the retained K-5
pool, "using the grade assignments from the preceding stages" (Sec. 3.1.5, App. A.4). It does
not say which dropped documents count as Beyond-K-5; here the rule is explicit:

- **K-5 pool**: every document the earlier stages keep (outcome `kept`).
- **Beyond-K-5 pool**: every document an earlier stage drops *for being beyond K-5*: stage 1's
  `aoa_p95` (its 95th-percentile AoA is above the target age), a classifier's verdict for a
  higher band (`fasttext_K8/K12/OOS`, `encoder_K8/K12/OOS`), and any symbolic match
  (`symbolic_<family>`, notation taught after grade 5).
- **Neither**: drops that say nothing about grade: `aoa_oov` (too many words with no AoA at
  all, mostly markup, code or another language), `aoa_empty`, `encoder_empty`, `encoder_gate`
  (the encoder never ran), any other reason, and records that errored. Their words would
  only add noise to the Beyond side.

`pool_frame` turns cascade outcomes into one row per document with its pool; `pool_texts`
gives the two lists `littlekit.filter.word_table.score_words` takes. `overlaps` flags documents
sharing text with a held-out set, to keep it out of the pools; `document_frequency` tells a
word spread over a pool from one that a single document repeats.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from littlekit.filter.cascade import DROPPED, KEPT, Outcome
from littlekit.text import word_tokens

K5_POOL = "K-5"
BEYOND_POOL = "Beyond K-5"
POOLS = (K5_POOL, BEYOND_POOL)
BEYOND_BANDS = ("K8", "K12", "OOS")
# Drop reasons that mean "beyond K-5": exact codes, and prefixes for whole families.
BEYOND_REASONS = frozenset(
    {"aoa_p95"} | {f"{stage}_{band}" for stage in ("fasttext", "encoder") for band in BEYOND_BANDS}
)
BEYOND_PREFIXES = ("symbolic_",)


def pool_of(status: str, reason: str | None) -> str | None:
    """K5_POOL for a kept document, BEYOND_POOL for a Beyond-K-5 drop, None for anything else."""
    if status == KEPT:
        return K5_POOL
    if status == DROPPED and reason is not None:
        if reason in BEYOND_REASONS or reason.startswith(BEYOND_PREFIXES):
            return BEYOND_POOL
    return None


def pool_frame(outcomes: Iterable[Outcome], meta: Sequence[str] = ()) -> pd.DataFrame:
    """One row per outcome: id, status, stage, reason, pool (None = neither), n_tokens, text,
    and the record fields named in `meta` (None where a record lacks one)."""
    rows = []
    for outcome in outcomes:
        text = getattr(outcome.record, "text", None)
        fields = getattr(outcome.record, "meta", {}) or {}
        rows.append(
            {
                "id": outcome.id,
                "status": outcome.status,
                "stage": outcome.stage,
                "reason": outcome.reason,
                "pool": pool_of(outcome.status, outcome.reason),
                "n_tokens": len(word_tokens(text)) if text else 0,
                "text": text,
                **{name: fields.get(name) for name in meta},
            }
        )
    columns = ["id", "status", "stage", "reason", "pool", "n_tokens", "text", *meta]
    return pd.DataFrame(rows, columns=columns)


def pool_texts(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(K-5 pool texts, Beyond-K-5 pool texts) from a `pool_frame`."""
    return (
        frame.loc[frame["pool"] == K5_POOL, "text"].tolist(),
        frame.loc[frame["pool"] == BEYOND_POOL, "text"].tolist(),
    )


def pool_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Documents and word tokens per pool and the outcome that put them there (stage, reason)."""
    shown = frame.assign(
        pool=frame["pool"].fillna("neither"),
        stage=frame["stage"].fillna("-"),
        reason=frame["reason"].fillna("kept"),
    )
    table = shown.groupby(["pool", "stage", "reason"], sort=False).agg(
        documents=("id", "size"), tokens=("n_tokens", "sum")
    )
    order = {name: i for i, name in enumerate([*POOLS, "neither"])}
    return table.sort_index(key=lambda level: level.map(order) if level.name == "pool" else level)


def document_frequency(texts: Iterable[str], words: Iterable[str]) -> pd.Series:
    """How many of `texts` hold each of `words` at least once (the filter's word tokens).

    A word with a high count but a document frequency of one or two comes from a single long
    document (a name, a topic) rather than from Beyond-K-5 text in general.
    """
    wanted = list(dict.fromkeys(words))
    counts = dict.fromkeys(wanted, 0)
    for text in texts:
        for word in set(word_tokens(text)).intersection(counts):
            counts[word] += 1
    return pd.Series(counts, name="documents", dtype="int64")
