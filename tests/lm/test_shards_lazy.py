"""Shards open lazily within a file-descriptor budget and are checked once, when written.

Real shard directories from `write_shards` over a real tiny tokenizer; the 2,000-shard run is a
real `littlekit train` in a child process whose open-file limit is 256.
"""

from __future__ import annotations

import json
import mmap
import os
import random
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

from littlekit.config import REPO_ROOT
from littlekit.lm import shard_files
from littlekit.lm.shard_files import MAX_OPEN_ENV, max_open_shards, open_shard_maps, set_max_open_shards
from littlekit.lm.shards import BatchLoader, ShardError, TokenShards, record_max_ids, write_shards
from littlekit.lm.tokenizer import train_tokenizer

WORDS = "the cat dog sun ran sat hop big red blue fish tree play jump".split()
N_SHARDS = 2000


def tiny_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(n)]


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tok")
    train_tokenizer(tiny_texts(400), vocab_size=300, out_dir=out)
    return out


@pytest.fixture(scope="module")
def many(tmp_path_factory, tokenizer_dir) -> Path:
    """2,000 one-document shards: shard_tokens=1 closes a shard after every document."""
    from littlekit.lm.tokenizer import load_tokenizer

    out = tmp_path_factory.mktemp("many") / "train"
    manifest = write_shards(
        tiny_texts(N_SHARDS, seed=1), load_tokenizer(str(tokenizer_dir)), out, shard_tokens=1
    )
    assert len(manifest["shards"]) == N_SHARDS
    return out


@pytest.fixture
def few(tmp_path, tokenizer_dir) -> Path:
    """Shards of ~40 documents each, so one document is a small part of its shard."""
    from littlekit.lm.tokenizer import load_tokenizer

    out = tmp_path / "few"
    write_shards(tiny_texts(200, seed=2), load_tokenizer(str(tokenizer_dir)), out, shard_tokens=200)
    return out


def without_max_ids(folder: Path) -> Path:
    """The manifest as littlekit wrote it before it recorded each shard's max_id."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    for entry in manifest["shards"]:
        del entry["max_id"]
    path.write_text(json.dumps(manifest))
    return folder


def damage(folder: Path, shard: str, position: int, value: int = 60_000) -> None:
    """One id beyond the vocabulary in a shard file, its size unchanged (damage after writing)."""
    tokens = np.memmap(folder / shard, dtype=np.uint16, mode="r+")
    tokens[position] = value
    tokens.flush()
    del tokens


@pytest.fixture
def mapped_files(monkeypatch, many):
    """The names of the files mmap.mmap maps (np.memmap and np.load's mmap_mode go through it too)."""
    inodes = {p.stat().st_ino: p.name for p in many.iterdir()}
    names: list[str] = []
    real = mmap.mmap

    def spy(fileno, *args, **kwargs):
        names.append(inodes.get(os.fstat(fileno).st_ino, "?"))
        return real(fileno, *args, **kwargs)

    monkeypatch.setattr(mmap, "mmap", spy)
    return names


def test_opening_reads_no_token_file_and_a_batch_maps_only_its_shards(many, mapped_files):
    shards = TokenShards(many)
    loader = BatchLoader(many, seq_len=16, batch_size=2, seed=3)
    assert [name for name in mapped_files if name.startswith("shard_")] == []
    state = loader.state_dict()
    needed = set()
    for _ in range(2):
        _, pieces = loader._plan_row()
        needed |= {
            int(np.searchsorted(shards._shard_starts, shards.starts[doc], "right")) - 1 for doc, _ in pieces
        }
    loader.load_state_dict(state)
    loader.next_batch()
    mapped = {name for name in mapped_files if name.startswith("shard_")}
    assert mapped == {f"shard_{i:05d}.bin" for i in needed}
    assert len(mapped_files) == len(mapped) + 2  # and the two documents tables


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd")
def test_at_most_the_budget_of_shards_is_open_and_evicted_maps_release_their_descriptor(many):
    def descriptors() -> int:
        return len(os.listdir("/proc/self/fd"))

    set_max_open_shards(8)
    try:
        before = descriptors()
        shards = TokenShards(many)
        documents = [shards.document(i) for i in range(0, N_SHARDS, 10)]  # 200 shards, one document each
        assert open_shard_maps() == 8
        assert descriptors() - before <= 8 + 1  # the maps and the documents table at most
        again = TokenShards(many)
        assert np.array_equal(again.document(0), documents[0])
        del shards
        assert open_shard_maps() == 1  # dropping a view closes its maps
        again.close()
        assert open_shard_maps() == 0
        assert descriptors() - before <= 1
    finally:
        set_max_open_shards(None)


def test_the_budget_follows_the_setting_the_environment_and_the_open_file_limit(monkeypatch):
    monkeypatch.setattr(shard_files, "_soft_file_limit", lambda: 10_000)
    assert max_open_shards() == 64
    monkeypatch.setenv(MAX_OPEN_ENV, "500")
    assert max_open_shards() == 500
    monkeypatch.setattr(shard_files, "_soft_file_limit", lambda: 256)
    assert max_open_shards() == 64  # a quarter of `ulimit -n` 256
    monkeypatch.setenv(MAX_OPEN_ENV, "many")
    with pytest.raises(ValueError, match="LITTLEKIT_MAX_OPEN_SHARDS='many'"):
        max_open_shards()
    monkeypatch.delenv(MAX_OPEN_ENV)
    set_max_open_shards(3)
    try:
        assert max_open_shards() == 3
    finally:
        set_max_open_shards(None)


@pytest.mark.skipif(sys.platform == "win32", reason="sets the child's RLIMIT_NOFILE")
def test_a_2000_shard_directory_trains_under_ulimit_256(many, tokenizer_dir, tmp_path):
    """A real `littlekit train` over 2,000 shards, validating on all 2,000 (every eval reads each
    one), then a loader reading a whole epoch, in a child whose open-file limit is 256."""
    script = textwrap.dedent(
        f"""
        import json, resource, sys
        from littlekit.cli import main
        from littlekit.lm.shard_files import max_open_shards, open_shard_maps
        from littlekit.lm.shards import BatchLoader

        data = {str(many)!r}
        argv = ["train", "--data", data, "--val-data", data, "--tokenizer", {str(tokenizer_dir)!r},
                "--run-dir", {str(tmp_path / "run")!r}, "--size", "nano", "--seq-len", "32",
                "--global-batch", "32", "--micro-batch", "32", "--max-steps", "3", "--eval-every", "0",
                "--no-progress"]
        assert main(argv) == 0
        loader = BatchLoader(data, seq_len=32, batch_size=32, seed=1)
        while loader.cursors[0][0] == 0:  # until every document (so every shard) has been read
            loader.next_batch()
        print(json.dumps({{"limit": resource.getrlimit(resource.RLIMIT_NOFILE)[0],
                           "budget": max_open_shards(), "open": open_shard_maps()}}))
        """
    )

    def limit_files() -> None:
        import resource

        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop(MAX_OPEN_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=env, preexec_fn=limit_files,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"limit": 256, "budget": 64, "open": 64}
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert max(record["step"] for record in records) == 3
    assert any("val_bpb" in record for record in records)  # validation read all 2,000 shards


def test_a_manifest_with_max_ids_is_not_scanned_and_an_old_one_is(few, monkeypatch):
    scanned: list[int] = []  # ids examined for being outside the vocabulary
    real = shard_files.first_id_at_or_above

    def spy(tokens, vocab_size):
        scanned.append(len(tokens))
        return real(tokens, vocab_size)

    monkeypatch.setattr("littlekit.lm.shards.first_id_at_or_above", spy)
    shards = TokenShards(few)
    assert all("max_id" in entry for entry in shards.manifest["shards"])
    first = shards.manifest["shards"][0]
    damage(few, "shard_00000.bin", first["tokens"] - 1)  # in the shard's last document, not its first
    assert shards.document(0)[0] == shards.bos_id  # no scan: the damage elsewhere is not read
    assert scanned == [int(shards.lengths[0])]  # only the ids read are examined

    without_max_ids(few)
    with pytest.warns(UserWarning, match=rf"{few.name}/manifest.json records no max_id.*record_max_ids"):
        old = TokenShards(few)
    with pytest.raises(
        ShardError, match=rf"shard_00000\.bin holds token id 60,000 at position {first['tokens'] - 1:,}"
    ):
        old.document(0)  # the old manifest's shard is scanned when first read
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TokenShards(few)  # the warning is given once per folder


def test_reading_a_damaged_document_names_its_shard_and_position(few):
    damage(few, "shard_00001.bin", 3)
    shards = TokenShards(few)
    second = next(i for i, start in enumerate(shards.starts) if start == shards._shard_starts[1])
    with pytest.raises(ShardError, match=r"shard_00001\.bin holds token id 60,000 at position 3, outside"):
        shards.document(second)


def test_record_max_ids_upgrades_an_old_manifest(few):
    written = json.loads((few / "manifest.json").read_text())
    without_max_ids(few)
    assert record_max_ids(few)["shards"] == written["shards"]
    assert json.loads((few / "manifest.json").read_text()) == written
    damage(few, "shard_00000.bin", 5)
    without_max_ids(few)
    with pytest.raises(ShardError, match=r"shard_00000\.bin holds token id 60,000 at position 5"):
        record_max_ids(few)


def test_a_truncated_shard_is_a_shard_error_naming_the_file(few):
    shards = TokenShards(few)
    path = few / "shard_00002.bin"
    path.write_bytes(path.read_bytes()[:-6])  # after opening: found when a batch maps it
    in_third = next(i for i, start in enumerate(shards.starts) if start == shards._shard_starts[2])
    with pytest.raises(ShardError, match=r"shard_00002\.bin holds .* bytes.*truncated"):
        shards.document(in_third)
    with pytest.raises(ShardError, match=r"shard_00002\.bin holds .* bytes.*truncated"):
        TokenShards(few)  # and when opening


def test_a_recorded_max_id_outside_the_vocabulary_is_refused_when_opening(few):
    path = few / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["shards"][1]["max_id"] = manifest["vocab_size"]
    path.write_text(json.dumps(manifest))
    with pytest.raises(
        ShardError, match=rf"shard_00001\.bin holds token id {manifest['vocab_size']}.*max_id"
    ):
        TokenShards(few)
