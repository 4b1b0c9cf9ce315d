"""`data/k5_rewrites/`: the build of the K-5 rewrites, its checks, and the shipped copy."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from littlekit.databuild import corpora
from littlekit.databuild.common import BuildLog
from littlekit.databuild.k5_rewrites import build_k5_rewrites
from littlekit.judge.labels import text_sha256


def rewrite(source_id: str, text: str, corpus: str = "dclm", **extra) -> dict:
    record = {
        "id": f"rw-{source_id}", "text": text, "text_sha256": text_sha256(text), "band": "K5",
        "source": "llm-rewrite", "form": "explainer", "source_id": source_id, "source_band": "K8",
        "corpus": corpus, "origin": "owner/repo@abc:path.json", "url": "https://example.org/a",
        "licence": "CC BY 4.0 (DCLM pool) + Common Crawl terms",
    }
    return {**record, **extra}


def write_source(root: Path, records: list[dict]) -> Path:
    folder = root / "k5_rewrites"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rewrites.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def build(source: Path, out: Path) -> tuple[dict, dict[str, bytes]]:
    log = BuildLog(out)
    counts = build_k5_rewrites(source, out, log)
    return counts, {path: (out / path).read_bytes() for path in sorted(log.sources)}


def test_two_rewrites_are_shipped_in_order_and_rebuild_byte_identical(tmp_path):
    records = [
        rewrite("pool-2", "Bees make honey. They live in a hive."),
        rewrite("sw-1", "The Moon goes around the Earth.", corpus="simplewiki", url=None,
                source_band="K12", licence="CC BY-SA (Simple English Wikipedia)", extra="dropped"),
    ]
    write_source(tmp_path / "src", records)
    counts, first = build(tmp_path / "src", tmp_path / "out1")
    _, second = build(tmp_path / "src", tmp_path / "out2")
    assert counts == {"records": 2, "left_out_nc": 0}
    assert set(first) == {"k5_rewrites/rewrites.jsonl.gz", "k5_rewrites/SOURCE.md"}
    assert first == second  # gzip header without a time: rebuilds give the same bytes
    lines = gzip.decompress(first["k5_rewrites/rewrites.jsonl.gz"]).splitlines()
    shipped = [json.loads(line) for line in lines]
    expected_second = {k: v for k, v in records[1].items() if k not in ("url", "extra")}
    assert shipped == [records[0], expected_second]  # same order; empty and unknown fields dropped
    source_md = first["k5_rewrites/SOURCE.md"].decode("utf-8")
    assert "| dclm | 1 | 1 | 0 |" in source_md and "| simplewiki | 1 | 0 | 1 |" in source_md
    assert "| CC BY-SA (Simple English Wikipedia) | 1 |" in source_md
    assert "never validation" in source_md and "Never pretraining text" in source_md
    frame = corpora.load_k5_rewrites(root=tmp_path / "out1")
    assert list(frame["id"]) == ["rw-pool-2", "rw-sw-1"] and frame["url"].iloc[1] is None


def test_non_commercial_rewrites_are_left_out_as_in_judge_labels(tmp_path):
    records = [
        rewrite("a", "A dog ran."),
        rewrite("b", "A cat sat.", corpus="fineweb", licence="CC BY-NC 4.0"),
    ]
    write_source(tmp_path, records)
    counts, files = build(tmp_path, tmp_path / "out")
    assert counts == {"records": 1, "left_out_nc": 1}
    assert b"fineweb 1" in files["k5_rewrites/SOURCE.md"]


def test_a_rewrite_whose_text_does_not_match_its_hash_is_refused_naming_file_and_record(tmp_path):
    good, bad = rewrite("a", "A dog ran."), rewrite("b", "A cat sat.")
    write_source(tmp_path, [good, {**bad, "text": "A cat stood."}])
    with pytest.raises(ValueError, match=r"k5_rewrites/rewrites\.jsonl:2: record 'rw-b'.*text_sha256"):
        build_k5_rewrites(tmp_path, tmp_path / "out", BuildLog(tmp_path / "out"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"band": "K8"}, "band 'K8'"),
        ({"source_id": ""}, "lacks source_id"),
        ({"licence": None}, "lacks licence"),
    ],
)
def test_a_rewrite_without_band_k5_source_id_or_licence_is_refused(tmp_path, change, message):
    write_source(tmp_path, [{**rewrite("a", "A dog ran."), **change}])
    with pytest.raises(ValueError, match=rf"rewrites\.jsonl:1: record 'rw-a'.*{message}"):
        build_k5_rewrites(tmp_path, tmp_path / "out", BuildLog(tmp_path / "out"))


def test_the_shipped_rewrites_are_all_k5_and_pair_with_a_shipped_judge_label():
    frame = corpora.load_k5_rewrites()
    assert len(frame) == 1881
    assert (frame["band"] == "K5").all() and frame["id"].is_unique
    assert frame["source_id"].map(lambda s: isinstance(s, str) and bool(s)).all()
    assert frame["licence"].map(bool).all()
    assert (frame["text"].map(text_sha256) == frame["text_sha256"]).all()
    originals = corpora.load_judge_labels().set_index("id")
    assert frame["source_id"].isin(originals.index).all()
    assert (originals.loc[frame["source_id"], "licence"].to_numpy() == frame["licence"].to_numpy()).all()
    assert originals.loc[frame["source_id"], "band"].isin(["K8", "K12"]).all()
