"""`littlekit train` and `littlekit launch` on broken inputs and nonsense numbers: one line, exit code.

Each case copies a tiny tokenizer and its shards into tmp_path, breaks one thing, runs
`littlekit.cli.main`, and checks the exit code (2: what was typed is wrong; 1: a file that is
there is damaged or of another kind), that the one line of stderr names the file or flag and what
to do, that no traceback is shown, that no run started and that the inputs are unchanged. No case
trains or builds a model, so the module takes seconds.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from littlekit.cli import main
from littlekit.lm.shards import ShardError, TokenShards, write_shards
from littlekit.lm.tokenizer import train_tokenizer

TEXTS = ["the cat sat on the mat", "a dog ran to the park", "we count one two three", "big red fish"] * 12
OTHER_TEXTS = ["zebras quietly juggle", "seven purple kites", "xylophones hum at night"] * 12


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """tok/, train/ and val/ from one tokenizer; other_tok/ and other_train/ from another vocabulary."""
    root = tmp_path_factory.mktemp("lm_inputs")
    tok = train_tokenizer(TEXTS, vocab_size=300, out_dir=root / "tok")
    write_shards(TEXTS, tok, root / "train")
    write_shards(TEXTS[:8], tok, root / "val")
    write_shards(["", ""], tok, root / "no_docs")  # a valid shard directory without a document
    other = train_tokenizer(OTHER_TEXTS, vocab_size=300, out_dir=root / "other_tok")
    write_shards(OTHER_TEXTS, other, root / "other_train")
    return root


@pytest.fixture
def inputs(built, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("LITTLEKIT_DEBUG", raising=False)
    root = tmp_path / "inputs"
    shutil.copytree(built, root)
    return root


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def train_argv(root: Path, **flags: str | None) -> list[str]:
    """`littlekit train` on the good inputs, with flags replaced (None drops one)."""
    values = {
        "--data": str(root / "train"),
        "--val-data": str(root / "val"),
        "--tokenizer": str(root / "tok"),
        "--run-dir": str(root.parent / "run"),
        "--seq-len": "16",
        "--global-batch": "2",
        "--micro-batch": "1",
        "--max-steps": "1",
        **flags,
    }
    argv = ["train"]
    for flag, value in values.items():
        if value is not None:
            argv += [flag, value]
    return [*argv, "--no-progress"]


def launch_argv(root: Path, *extra: str) -> list[str]:
    return ["launch", "--size", "5B", "--tokens", "80B", "--data", "/shards/k5", "--tokenizer", "/tok",
            "--out", str(root.parent / "job.sbatch"), *extra]  # fmt: skip


# --- ways to break the inputs (each edits files under root) ----------------------------------------


def write(relative: str, content: str | bytes) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / relative
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)

    return edit


def truncate(relative: str, n_bytes: int) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / relative
        path.write_bytes(path.read_bytes()[:-n_bytes])

    return edit


def edit_manifest(relative: str, **changes) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / relative / "manifest.json"
        manifest = json.loads(path.read_text())
        for key, value in changes.items():
            if value is None:
                manifest.pop(key)
            else:
                manifest[key] = value
        path.write_text(json.dumps(manifest))

    return edit


def remove(relative: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).unlink()


def make_dir(relative: str) -> Callable[[Path], None]:
    return lambda root: (root / relative).mkdir()


def nothing(root: Path) -> None:
    return None


# (id, how to break the inputs, argv from the inputs' root, exit code, fragments of the one line)
CASES: list[tuple[str, Callable, Callable[[Path], list[str]], int, tuple[str, ...]]] = [
    # --tokenizer: a path that is not there fails at once, never asking the Hub
    ("tokenizer-typo-path", nothing, lambda r: train_argv(r, **{"--tokenizer": "typo/"}), 2,
     ("--tokenizer", "typo/", "does not exist")),
    ("tokenizer-typo-beside-real", nothing, lambda r: train_argv(r, **{"--tokenizer": str(r / "tokk")}), 2,
     ("--tokenizer", "tokk", "does not exist")),
    ("tokenizer-hub-id-not-cached", nothing,
     lambda r: train_argv(r, **{"--tokenizer": "someorg/no-such-tokenizer"}), 2,
     ("--tokenizer", "someorg/no-such-tokenizer", "nor a Hub tokenizer in the local cache",
      "HF_HUB_OFFLINE")),
    ("tokenizer-is-a-shard-dir", nothing, lambda r: train_argv(r, **{"--tokenizer": str(r / "train")}), 1,
     ("--tokenizer", "train", "is not a tokenizer directory", "train_tokenizer")),
    ("tokenizer-is-a-file", nothing,
     lambda r: train_argv(r, **{"--tokenizer": str(r / "tok" / "tokenizer.json")}), 1,
     ("--tokenizer", "tokenizer.json is a file", "directory")),
    ("tokenizer-json-corrupt", write("tok/tokenizer.json", "{not json"), train_argv, 1,
     ("tok/tokenizer.json is corrupt", "JSONDecodeError", "train_tokenizer")),
    ("tokenizer-json-binary", write("tok/tokenizer.json", bytes(range(256))), train_argv, 1,
     ("tok/tokenizer.json is corrupt", "train_tokenizer")),
    ("tokenizer-config-empty", write("tok/tokenizer_config.json", ""), train_argv, 1,
     ("tok/tokenizer_config.json is corrupt", "train_tokenizer")),
    # shard directories
    ("manifest-corrupt", write("train/manifest.json", '{"dtype": "uint16", '), train_argv, 1,
     ("train/manifest.json is corrupt", "JSONDecodeError", "write_shards")),
    ("manifest-lacks-keys", edit_manifest("train", shards=None), train_argv, 1,
     ("train/manifest.json is not a write_shards manifest", "lacks shards", "write_shards")),
    ("manifest-missing-half-written", remove("train/manifest.json"), train_argv, 1,
     ("train/manifest.json is missing", "never finished", "write_shards")),
    ("shard-truncated", truncate("train/shard_00000.bin", 10), train_argv, 1,
     ("train/shard_00000.bin", "truncated", "write_shards")),
    ("shard-dtype-disagrees", edit_manifest("train", dtype="uint32"), train_argv, 1,
     ("train/shard_00000.bin", "fits uint16", "another dtype", "write_shards")),
    ("manifest-unknown-dtype", edit_manifest("val", dtype="float32"), train_argv, 1,
     ("val/manifest.json", "float32", "write_shards")),
    ("documents-corrupt", write("val/documents.npy", b"garbage"), train_argv, 1,
     ("val/documents.npy is corrupt", "write_shards")),
    ("documents-truncated", truncate("val/documents.npy", 40), train_argv, 1,
     ("val/documents.npy", "write_shards")),
    ("data-is-a-tokenizer-dir", nothing, lambda r: train_argv(r, **{"--data": str(r / "tok")}), 1,
     ("tok is not a shard directory", "tokenizer directory", "write_shards")),
    ("data-empty-folder", make_dir("empty"), lambda r: train_argv(r, **{"--data": str(r / "empty")}), 1,
     ("empty is empty", "manifest.json", "write_shards")),
    ("data-does-not-exist", nothing, lambda r: train_argv(r, **{"--data": str(r / "nope")}), 2,
     ("--data", "nope", "does not exist")),
    ("val-data-does-not-exist", nothing, lambda r: train_argv(r, **{"--val-data": str(r / "nope")}), 2,
     ("--val-data", "nope", "does not exist")),
    ("val-data-without-documents", nothing, lambda r: train_argv(r, **{"--val-data": str(r / "no_docs")}), 1,
     ("no_docs holds no documents", "write_shards")),
    ("data-without-documents", nothing, lambda r: train_argv(r, **{"--data": str(r / "no_docs")}), 1,
     ("no_docs holds no documents", "write_shards")),
    ("data-of-another-vocabulary", nothing,
     lambda r: train_argv(r, **{"--data": str(r / "other_train"), "--val-data": None}), 1,
     ("other_train was tokenised with another vocabulary", "write_shards")),
    ("mix-root-without-sources", nothing,
     lambda r: train_argv(r, **{"--data": str(r), "--mix": "paper-cooloff"}), 1,
     ("k5_pretrain does not exist", "write_shards")),
    ("init-from-typo", nothing, lambda r: train_argv(r, **{"--init-from": "runs/typo/best/"}), 2,
     ("--init-from", "runs/typo/best/")),
    ("resume-not-a-checkpoint", nothing, lambda r: train_argv(r, **{"--resume": str(r / "train")}), 2,
     ("--resume", "trainer_state.pt not found")),
    # nonsense numbers of `littlekit train`
    ("train-seed-negative", nothing, lambda r: train_argv(r, **{"--seed": "-1"}), 2, ("--seed", "-1")),
    ("train-seed-overflows", nothing, lambda r: train_argv(r, **{"--seed": str(2**70)}), 2,
     ("--seed", str(2**70))),
    ("train-lr-nan", nothing, lambda r: train_argv(r, **{"--muon-lr": "nan"}), 2, ("--muon-lr", "nan")),
    ("train-lr-inf", nothing, lambda r: train_argv(r, **{"--adamw-lr": "inf"}), 2, ("--adamw-lr", "inf")),
    ("train-grad-clip-negative", nothing, lambda r: train_argv(r, **{"--grad-clip": "-1"}), 2,
     ("--grad-clip", "-1")),
    ("train-weight-decay-nan", nothing, lambda r: train_argv(r, **{"--weight-decay": "nan"}), 2,
     ("--weight-decay", "nan")),
    ("train-min-lr-ratio-nan", nothing, lambda r: train_argv(r, **{"--min-lr-ratio": "nan"}), 2,
     ("--min-lr-ratio", "nan")),
    ("train-global-batch-overflows", nothing, lambda r: train_argv(r, **{"--global-batch": str(10**30)}), 2,
     ("--global-batch", str(10**30))),
    ("train-max-steps-float", nothing, lambda r: train_argv(r, **{"--max-steps": "1e30"}), 2,
     ("--max-steps", "1e30")),
    ("train-val-batches-zero", nothing, lambda r: train_argv(r, **{"--val-batches": "0"}), 2,
     ("--val-batches", "0")),
    ("train-warmup-negative", nothing, lambda r: train_argv(r, **{"--warmup-steps": "-1"}), 2,
     ("--warmup-steps", "-1")),
    ("train-seq-len-beyond-positions", nothing, lambda r: train_argv(r, **{"--seq-len": "100000"}), 2,
     ("--seq-len", "100000", "max_position_embeddings")),
    ("train-source-weight-nan", nothing, lambda r: train_argv(r, **{"--data": f"{r / 'train'}:nan"}), 2,
     ("--data", "train:nan", "weight")),
    # nonsense numbers of `littlekit launch`
    ("launch-tokens-1e30", nothing, lambda r: launch_argv(r, "--tokens", "1e30"), 2,
     ("--tokens", "1e30", "1,000T")),
    ("launch-tokens-negative", nothing, lambda r: launch_argv(r, "--tokens", "-5"), 2, ("--tokens", "-5")),
    ("launch-tokens-nan", nothing, lambda r: launch_argv(r, "--tokens", "nan"), 2, ("--tokens", "nan")),
    ("launch-tokens-inf", nothing, lambda r: launch_argv(r, "--tokens", "1e400"), 2, ("--tokens", "1e400")),
    ("launch-port-zero", nothing, lambda r: launch_argv(r, "--master-port", "0"), 2,
     ("--master-port", "0", "65,535")),
    ("launch-port-too-high", nothing, lambda r: launch_argv(r, "--master-port", "70000"), 2,
     ("--master-port", "70000")),
    ("launch-port-negative", nothing, lambda r: launch_argv(r, "--master-port", "-1"), 2,
     ("--master-port", "-1")),
    ("launch-nodes-negative", nothing, lambda r: launch_argv(r, "--nodes", "-2"), 2, ("--nodes", "-2")),
    ("launch-nodes-overflow", nothing, lambda r: launch_argv(r, "--nodes", str(2**64)), 2,
     ("--nodes", str(2**64))),
    ("launch-vocab-zero", nothing, lambda r: launch_argv(r, "--vocab-size", "0"), 2, ("--vocab-size", "0")),
    ("launch-mfu-nan", nothing, lambda r: launch_argv(r, "--mfu", "nan"), 2, ("--mfu", "nan")),
    ("launch-mfu-negative", nothing, lambda r: launch_argv(r, "--mfu", "-0.4"), 2, ("--mfu", "-0.4")),
    ("launch-mfu-above-one", nothing, lambda r: launch_argv(r, "--mfu", "1.5"), 2, ("MFU", "1.5")),
    ("launch-mfu-vanishing", nothing, lambda r: launch_argv(r, "--mfu", "5e-324"), 2,
     ("more than a century", "--mfu")),
    ("launch-checkpoint-hours-inf", nothing, lambda r: launch_argv(r, "--checkpoint-hours", "inf"), 2,
     ("--checkpoint-hours", "inf")),
    ("launch-checkpoint-hours-negative", nothing, lambda r: launch_argv(r, "--checkpoint-hours", "-1"), 2,
     ("--checkpoint-hours", "-1")),
    ("launch-time-zero", nothing, lambda r: launch_argv(r, "--time", "0"), 2, ("--time 0", "time limit")),
    ("launch-source-weight-negative", nothing, lambda r: launch_argv(r, "--data", "/shards/b:-1"), 2,
     ("--data /shards/b:-1", "weight")),
    ("launch-train-arg-refused", nothing, lambda r: launch_argv(r, "--train-arg=--seed=-1"), 2,
     ("refuses the generated arguments", "--seed", "-1")),
    ("launch-local-tokenizer-corrupt", write("tok/tokenizer.json", ""),
     lambda r: [*launch_argv(r, "--size", "nano", "--tokens", "1M", "--seq-len", "512"), "--tokenizer",
                str(r / "tok")], 1, ("tok/tokenizer.json is corrupt", "train_tokenizer")),
]  # fmt: skip


@pytest.mark.parametrize(("break_inputs", "argv", "code", "fragments"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])  # fmt: skip
def test_refused_in_one_line(inputs, capsys, break_inputs, argv, code, fragments):
    break_inputs(inputs)
    before = snapshot(inputs)
    started = time.perf_counter()
    assert main(argv(inputs)) == code
    seconds = time.perf_counter() - started
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "error:" in lines[0] and "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    assert snapshot(inputs) == before  # nothing read was changed
    assert not (inputs.parent / "run").exists() and not (inputs.parent / "job.sbatch").exists()
    assert seconds < 5, f"took {seconds:.1f} s"


def test_the_tokenizer_typo_fails_at_once(inputs, capsys):
    started = time.perf_counter()
    assert main(train_argv(inputs, **{"--tokenizer": "typo/"})) == 2
    assert time.perf_counter() - started < 2.0  # no Hub retries
    assert "--tokenizer" in capsys.readouterr().err


def test_the_good_inputs_pass_the_checks(inputs):
    """The cases above fail on what they break, not on the rest of the command line."""
    import argparse

    from littlekit.lm.train.checks import check_inputs
    from littlekit.lm.train.config import add_train_parser, config_from_args

    parser = argparse.ArgumentParser()
    add_train_parser(parser.add_subparsers())
    config = config_from_args(parser.parse_args(train_argv(inputs)))
    check_inputs(config)  # raises on any problem
    assert main(launch_argv(inputs, "--dry-run")) == 0


def test_debug_shows_the_traceback(inputs, monkeypatch):
    truncate("train/shard_00000.bin", 2)(inputs)
    monkeypatch.setenv("LITTLEKIT_DEBUG", "1")
    with pytest.raises(ShardError, match="shard_00000.bin"):
        main(train_argv(inputs))


def test_opening_checks_every_shard_against_the_manifest(inputs):
    """The library call says the same as the command: a truncated shard never reaches a batch."""
    shards = TokenShards(inputs / "train")
    assert len(shards) == len(TEXTS)
    last = shards.document(len(shards) - 1)
    assert last[0] == shards.bos_id and last[-1] == shards.eos_id
    truncate("train/shard_00000.bin", 4)(inputs)
    with pytest.raises(ShardError, match=r"shard_00000\.bin holds .* truncated"):
        TokenShards(inputs / "train")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        TokenShards(inputs / "nope")
    np.save(inputs / "val" / "documents.npy", np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(ShardError, match=r"documents\.npy holds .* shape \(3, 2\)"):
        TokenShards(inputs / "val")


def test_token_counts_are_bounded():
    from littlekit.lm.launch import MAX_TOKENS, parse_count

    assert parse_count("1000T") == MAX_TOKENS
    for absurd in ("1e30", "1001T", "1e400", float("inf")):
        with pytest.raises(ValueError, match="1,000T"):
            parse_count(absurd)
    with pytest.raises(ValueError, match="positive"):
        parse_count(float("nan"))
