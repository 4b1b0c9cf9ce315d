"""Stage 5's pools from a real cascade run of stages 1 and 4, and per-stage retention counts."""

from __future__ import annotations

import pandas as pd
import pytest

from littlekit.analysis.validate import INPUT, retention_after_stages
from littlekit.filter.cascade import Cascade
from littlekit.filter.registry import build_stages
from littlekit.fit.pools import (
    BEYOND_POOL,
    K5_POOL,
    document_frequency,
    pool_frame,
    pool_of,
    pool_summary,
    pool_texts,
)
from littlekit.io import Document, RecordError
from littlekit.text import overlaps

TEXTS = {
    "kid": "The dog ran to the park. The cat sat on the mat and the sun was warm.",
    "symbolic": "The dog ran to the park. Then we solve 2x + 3 = 7 for x.",
    "hard": "Thermodynamic entropy characterises irreversible heterogeneous catalysis.",
    "oov": "The dog ran to xqzv blorptank wuggafrin.",
    "empty": "xqzv blorptank wuggafrin zzqtrp",
}


@pytest.fixture(scope="module")
def outcomes():
    documents = [
        Document(key, text, {"source": f"src-{key}"}, line=i + 1)
        for i, (key, text) in enumerate(TEXTS.items())
    ]
    records = [*documents, RecordError(line=6, reason="bad_json")]
    run = Cascade(build_stages("aoa,symbolic")).run(records)
    result = list(run)
    run.report.check()
    return result


def test_kept_and_beyond_drops_fill_the_two_pools(outcomes):
    frame = pool_frame(outcomes, meta=["source"]).set_index("id", drop=False)
    assert frame.loc["kid", "pool"] == K5_POOL
    assert frame.loc["symbolic", "reason"].startswith("symbolic_")
    assert frame.loc["symbolic", "pool"] == BEYOND_POOL
    assert (frame.loc["hard", "reason"], frame.loc["hard", "pool"]) == ("aoa_p95", BEYOND_POOL)
    # too many words without any AoA says nothing about grade: neither pool
    assert frame.loc["oov", "reason"] == "aoa_oov"
    assert pd.isna(frame.loc["oov", "pool"])
    assert frame.loc["empty", "reason"] == "aoa_empty" and pd.isna(frame.loc["empty", "pool"])
    errored = frame[frame["status"] == "errored"]
    assert len(errored) == 1 and errored["pool"].isna().all() and errored["n_tokens"].eq(0).all()
    assert frame.loc["kid", "source"] == "src-kid"
    assert frame.loc["kid", "n_tokens"] == 17


def test_pool_texts_and_summary_add_up(outcomes):
    frame = pool_frame(outcomes)
    k5, beyond = pool_texts(frame)
    assert k5 == [TEXTS["kid"]]
    assert sorted(beyond) == sorted([TEXTS["symbolic"], TEXTS["hard"]])
    summary = pool_summary(frame)
    assert summary["documents"].sum() == len(frame)
    assert summary["tokens"].sum() == frame["n_tokens"].sum()
    assert list(summary.index.get_level_values("pool").unique()) == [K5_POOL, BEYOND_POOL, "neither"]


@pytest.mark.parametrize(
    "status,reason,pool",
    [
        ("kept", None, K5_POOL),
        ("dropped", "aoa_p95", BEYOND_POOL),
        ("dropped", "fasttext_K8", BEYOND_POOL),
        ("dropped", "fasttext_OOS", BEYOND_POOL),
        ("dropped", "encoder_K12", BEYOND_POOL),
        ("dropped", "symbolic_exponents", BEYOND_POOL),
        ("dropped", "aoa_oov", None),
        ("dropped", "aoa_empty", None),
        ("dropped", "encoder_empty", None),
        ("dropped", "encoder_gate", None),
        ("dropped", "fasttext_K5", None),  # not a Beyond verdict (and never a real drop reason)
        ("dropped", "frequency_blocklist", None),  # stage 5 itself is not an earlier stage
        ("errored", "stage_error:encoder", None),
    ],
)
def test_pool_of_each_reason(status, reason, pool):
    assert pool_of(status, reason) == pool


def test_retention_counts_a_document_until_the_stage_that_dropped_it():
    frame = pd.DataFrame(
        {
            "group": ["K-5", "K-5", "K-5", "Beyond K-5", "Beyond K-5"],
            "status": ["kept", "dropped", "errored", "dropped", "dropped"],
            "stage": [None, "b", "a", "a", "c"],
        }
    )
    table = retention_after_stages(frame, ["a", "b", "c"], "group")
    kept = table["kept"].unstack("group")
    assert kept.loc[INPUT].to_dict() == {"K-5": 3, "Beyond K-5": 2}
    assert kept.loc["a"].to_dict() == {"K-5": 2, "Beyond K-5": 1}
    assert kept.loc["b"].to_dict() == {"K-5": 1, "Beyond K-5": 1}
    assert kept.loc["c"].to_dict() == {"K-5": 1, "Beyond K-5": 0}
    assert list(table.index.get_level_values("after").unique()) == [INPUT, "a", "b", "c"]
    assert table.loc[("c", "K-5"), "share"] == pytest.approx(1 / 3)
    assert table.loc[("c", "Beyond K-5"), "ci_low"] == 0.0


def test_retention_refuses_a_stage_it_was_not_told_about():
    frame = pd.DataFrame({"group": ["K-5"], "status": ["dropped"], "stage": ["frequency"]})
    with pytest.raises(ValueError, match="frequency"):
        retention_after_stages(frame, ["aoa"], "group")


def test_overlaps_flags_shared_eight_word_runs_and_exact_copies():
    reference = ["One two three four five six seven eight nine ten.", "Short text."]
    texts = [
        "Before it: ONE two three four five six seven eight and more.",  # shares 8 words
        "one two three four five six seven nine",  # 7 in a row only
        "  Short text.\n",  # a copy too short for a run of 8 words
        "Something else entirely.",
    ]
    assert overlaps(texts, reference) == [True, False, True, False]


def test_document_frequency_counts_documents_not_tokens():
    texts = ["Lesnar lesnar LESNAR wins.", "The cat wins.", "the cat"]
    counts = document_frequency(texts, ["lesnar", "cat", "wins", "absent", "cat"])
    assert counts.to_dict() == {"lesnar": 1, "cat": 2, "wins": 2, "absent": 0}
