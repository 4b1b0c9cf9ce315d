"""The two training sets of the nano models' controlled comparison, held out alike and matched in tokens.

nano LittleLearner trains on the K-5 corpus (the documents of the pretraining pool the filter
keeps) and nano UNFILTERED on the unfiltered corpus (every document of the same pool, kept or
not: a random draw of it, as many tokens as the K-5 corpus); both are in the run product
`training_corpora`. For the comparison to say something
about the data and nothing else, the two runs share the recipe, the tokenizer and the token
budget, and:

- **Held out alike.** `held_out_mask` picks validation documents by a seeded hash of their id, not
  by position, so a document in both corpora (a kept one) is held out from both or from
  neither, and every K-5 validation document is held out of the unfiltered corpus too (also when
  a small K-5 corpus gets its one validation document by the min_count rule): neither model ever
  trains on a document of the other's validation stream, and each can be scored on both streams.
- **Matched in tokens.** The unfiltered training documents are sampled (`sample_to_tokens`,
  seeded) until they hold as many tokens as the K-5 training documents, so both models see the
  same number of distinct tokens, the same number of times. Tokens are counted as the loader can
  read them: `shards.BatchLoader` starts every row at a document's BOS and drops what overflows
  the row, so a document contributes at most `seq_len + 1` tokens (`readable_tokens`). Counting
  whole documents instead would hand UNFILTERED, whose web pages run to thousands of tokens,
  a pool that is mostly tails the loader never reads.

- **Math exposure we control.** Beside its text, each model sees problems of the verified
  curriculum (`littlekit.curriculum`): LittleLearner the K-5 units, UNFILTERED the K-8 units
  (`EXPOSURE_UNITS`), the same number of problems per unit, in one format, shuffled together
  (`exposure_records`). The problems come from the training seed namespace; the evaluation's
  held-out problems (`littlekit.evals.curriculum`) come from another, so no evaluation problem
  is drawn from a training seed. Training reads text and math in fixed proportions
  (`MatchedShards.training_data`), so both models see the same share of math tokens.

`prepare_matched_shards` does all of it and writes the shard directories; `split_table` says what
each split holds, `text_summary` says it in words, and `reading_table` counts the tokens of each
source a training run of so many rows reads (`shards.planned_reads`).
`training_corpora_inputs` reads a run's training corpora, math exposure and K-5 tokenizer, or makes
them with the same calls and defaults when the run has none.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from littlekit import runs
from littlekit.lm.shards import planned_reads, write_shards

# the files of the run product `training_corpora`
K5_CORPUS, UNFILTERED_CORPUS, TOKENIZER = "k5_corpus.jsonl", "unfiltered_corpus.jsonl", "k5_bpe"
SINGLE_DIGIT_TOKENIZER = "k5_bpe_single_digit"  # the same BPE with every digit its own token
MATH_FILES = {"littlelearner": "k5_math.jsonl", "unfiltered": "k8_math.jsonl"}
DEFAULT_VOCAB_SIZE, DEFAULT_MIN_FREQUENCY = 4096, 2  # the K-5 BPE's defaults
EXPOSURE_UNITS = {"littlelearner": "K5", "unfiltered": "all"}  # the curriculum units each model sees
DEFAULT_PER_UNIT, DEFAULT_FORMAT = 1000, "scratchpad"  # problems per unit, and how they are written

HELD_OUT_FRACTION = 0.1
SPLITS = ("corpus", "train", "val")  # "corpus": the whole corpus, before holding out and sampling
NAMES = ("littlelearner", "unfiltered")


def _hash_fraction(doc_id: Any, seed: int) -> float:
    """A stable pseudo-random number in [0, 1) for a document id: sha256 of seed and id."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{doc_id}".encode()).digest()[:8], "big") / 2.0**64


def held_out_mask(ids: Sequence[Any], fraction: float, seed: int = 0, min_count: int = 0) -> np.ndarray:
    """True for the documents held out: those whose id hashes (with the seed) below `fraction`.

    The verdict depends only on the id and the seed, so the same document is held out from every
    corpus that contains it; the share held out is `fraction` in expectation, not exactly. When
    fewer than min_count are held out, the min_count ids with the smallest hashes are (a small
    corpus still gets a validation set).
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction}")
    hashes = np.array([_hash_fraction(i, seed) for i in ids], dtype=np.float64)
    mask = hashes < fraction
    if mask.sum() < min_count:
        mask[np.argsort(hashes, kind="stable")[:min_count]] = True
    return mask


def token_lengths(texts: Sequence[str], tokenizer: Any) -> np.ndarray:
    """Tokens per document as the shards store it: BOS + the text's tokens + EOS."""
    if len(texts) == 0:
        return np.zeros(0, dtype=np.int64)
    encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    return np.array([len(ids) + 2 for ids in encoded], dtype=np.int64)


def readable_tokens(lengths: np.ndarray, seq_len: int | None) -> np.ndarray:
    """Tokens the BOS-aligned loader can read from each document: at most seq_len + 1 (None: all)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return lengths if seq_len is None else np.minimum(lengths, seq_len + 1)


def sample_to_tokens(lengths: Sequence[int], budget: int, seed: int = 0) -> np.ndarray:
    """Indices (ascending) of documents drawn in a seeded random order until `budget` tokens.

    A document that would overshoot the budget is skipped and later, shorter ones may still fit,
    so the total never exceeds the budget and falls short of it by less than the shortest
    document left out. A budget at or above the total takes every document.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    if lengths.sum() <= budget:
        return np.arange(len(lengths))
    taken, remaining = [], int(budget)
    for index in np.random.default_rng(seed).permutation(len(lengths)):
        if lengths[index] <= remaining:
            taken.append(index)
            remaining -= int(lengths[index])
    return np.sort(np.asarray(taken, dtype=np.int64))


@dataclass
class MatchedShards:
    """Shard directories by (name, split) and a table of what went into each (split "math": the
    model's curriculum problems, when it has any)."""

    dirs: dict[tuple[str, str], Path]
    table: pd.DataFrame  # name, split, documents, tokens, readable_tokens, bytes, share of the corpus

    def train(self, name: str) -> Path:
        return self.dirs[(name, "train")]

    def val(self, name: str) -> Path:
        return self.dirs[(name, "val")]

    def math(self, name: str) -> Path | None:
        return self.dirs.get((name, "math"))

    def training_data(self, name: str, math_share: float) -> str | dict[str, float]:
        """`TrainConfig.data`: the text shards alone, or {text: 1 - math_share, math: math_share}
        (the share of training rows each source gives)."""
        if not 0.0 <= math_share < 1.0:
            raise ValueError(f"math_share must be in [0, 1), got {math_share}")
        math = self.math(name)
        if math_share == 0.0:
            return str(self.train(name))
        if math is None:
            raise ValueError(f"math_share={math_share} but {name} has no math exposure shards")
        return {str(self.train(name)): 1.0 - math_share, str(math): math_share}


def exposure_records(
    units: str, per_unit: int = DEFAULT_PER_UNIT, fmt: str = DEFAULT_FORMAT, seed: int = 0
) -> list[dict[str, Any]]:
    """`per_unit` verified curriculum problems of every unit of `units` ("K5", "all", ids), from
    run seed `seed`, in format `fmt`, shuffled together: the math a model is exposed to."""
    from littlekit.curriculum.export import mixture
    from littlekit.curriculum.generate import generate
    from littlekit.curriculum.units import select_units

    return mixture(generate(select_units(units), per_unit, seed=seed, fmt=fmt), "uniform", seed)


def pair_exposure(
    per_unit: int = DEFAULT_PER_UNIT, fmt: str = DEFAULT_FORMAT, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """{model name: its exposure records} by `EXPOSURE_UNITS`."""
    return {name: exposure_records(units, per_unit, fmt, seed) for name, units in EXPOSURE_UNITS.items()}


def tokenizer_texts(k5: pd.DataFrame, k5_math: Sequence[dict[str, Any]]) -> list[str]:
    """What the K-5 tokenizer is fitted on: LittleLearner's pretraining data, its text then its
    math (the paper fits its tokenizer on the K-5 corpus only, Appendix B; that UNFILTERED uses the
    same one is our reading, which keeps the pair's vocabulary the one thing not to differ)."""
    return [*k5["text"].tolist(), *(record["text"] for record in k5_math)]


def matched_splits(
    k5: pd.DataFrame,
    unfiltered: pd.DataFrame,
    tokenizer: Any,
    seq_len: int | None,
    held_out_fraction: float = HELD_OUT_FRACTION,
    max_val_tokens: int | None = None,
    seed: int = 0,
) -> dict[tuple[str, str], pd.DataFrame]:
    """{(name, split): frame} for both corpora (see the module), with n_tokens and n_readable.

    split "corpus" is the whole corpus with a held_out column, "train" and "val" the documents
    each model trains and validates on.
    The unfiltered training set is sampled to the K-5 training set's readable tokens. With
    max_val_tokens, a validation set holding more tokens than that is sampled down to it (a
    validation pass costs time at every evaluation); sampling never moves a document to training.
    """
    out: dict[tuple[str, str], pd.DataFrame] = {}
    k5_held: set[str] = set()
    for name, corpus in zip(NAMES, (k5, unfiltered), strict=True):
        frame = corpus.reset_index(drop=True)
        lengths = token_lengths(frame["text"].tolist(), tokenizer)
        frame = frame.assign(n_tokens=lengths, n_readable=readable_tokens(lengths, seq_len))
        ids = frame["id"].astype(str)
        if name == "littlelearner":  # at least one validation document, when there are two
            held = held_out_mask(ids.tolist(), held_out_fraction, seed, min_count=int(len(frame) > 1))
            k5_held = set(ids[held])
        else:  # the K-5 validation documents stay held out here too
            held = held_out_mask(ids.tolist(), held_out_fraction, seed) | ids.isin(k5_held).to_numpy()
        out[(name, "corpus")] = frame.assign(held_out=held)
        out[(name, "train")] = frame[~held].reset_index(drop=True)
        val = frame[held].reset_index(drop=True)
        if max_val_tokens is not None:
            val = val.iloc[sample_to_tokens(val["n_tokens"], max_val_tokens, seed)].reset_index(drop=True)
        out[(name, "val")] = val
    budget = int(out[("littlelearner", "train")]["n_readable"].sum())
    pool = out[("unfiltered", "train")]
    out[("unfiltered", "train")] = pool.iloc[sample_to_tokens(pool["n_readable"], budget, seed)].reset_index(
        drop=True
    )
    return out


def prepare_matched_shards(
    k5: pd.DataFrame,
    unfiltered: pd.DataFrame,
    tokenizer: Any,
    out_dir: str | os.PathLike,
    seq_len: int | None,
    held_out_fraction: float = HELD_OUT_FRACTION,
    max_val_tokens: int | None = None,
    seed: int = 0,
    math: Mapping[str, Sequence[dict[str, Any]]] | None = None,
) -> MatchedShards:
    """Writes out_dir/<name>/{train,val}/ shards for both corpora (see `matched_splits`) and, for
    each name in `math` ({name: curriculum records}), out_dir/<name>/math/ (every record, in order)."""
    splits = matched_splits(k5, unfiltered, tokenizer, seq_len, held_out_fraction, max_val_tokens, seed)
    for name, records in (math or {}).items():
        if name not in NAMES:
            raise ValueError(f"math exposure for {name!r}: the pair is {', '.join(NAMES)}")
        texts = [record["text"] for record in records]
        lengths = token_lengths(texts, tokenizer)
        splits[(name, "math")] = pd.DataFrame(
            {"text": texts, "n_tokens": lengths, "n_readable": readable_tokens(lengths, seq_len)}
        )
    dirs = {}
    for (name, split), frame in splits.items():
        if frame.empty:
            raise ValueError(
                f"the {name} {split} set is empty; give more documents or another held_out_fraction"
            )
        if split != "corpus":
            directory = Path(out_dir) / name / split
            write_shards(frame["text"].tolist(), tokenizer, directory, overwrite=True)
            dirs[(name, split)] = directory
    return MatchedShards(dirs, split_table(splits))


def split_table(splits: Mapping[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """One row per (name, split) of `matched_splits`' frames (and "math" frames): documents, tokens,
    readable_tokens, bytes (UTF-8), held_out (the corpus' documents held out for validation, before
    any max_val_tokens cap; 0 for the other splits) and share (of the corpus' tokens; 1 for math)."""
    rows = []
    for (name, split), frame in splits.items():
        corpus_tokens = int(splits[(name, "corpus")]["n_tokens"].sum()) if (name, "corpus") in splits else 0
        rows.append(
            {
                "name": name,
                "split": split,
                "documents": len(frame),
                "tokens": int(frame["n_tokens"].sum()),
                "readable_tokens": int(frame["n_readable"].sum()),
                "bytes": int(frame["text"].map(lambda t: len(t.encode("utf-8"))).sum()),
                "held_out": int(frame["held_out"].sum()) if split == "corpus" else 0,
                "share": 1.0
                if split == "math"
                else (frame["n_tokens"].sum() / corpus_tokens if corpus_tokens else 0.0),
            }
        )
    return pd.DataFrame(rows)


# how text_summary names each model's training documents
CORPUS_WORDS = {"littlelearner": "documents of the K-5 corpus", "unfiltered": "documents of the pool"}


def text_summary(
    table: pd.DataFrame, seq_len: int | None, labels: Mapping[str, str] | None = None
) -> list[str]:
    """A sentence per model of `split_table`'s table: how many documents and tokens its training
    text holds, the tokens counted as the loader reads them, and where the documents come from;
    the last says so when the pool not held out holds fewer readable tokens than LittleLearner's
    (then UNFILTERED takes all of it and the pair is not matched in tokens)."""
    rows = table.set_index(["name", "split"])
    labels = {name: (labels or {}).get(name, name) for name in NAMES}
    most = "every token" if seq_len is None else f"at most {seq_len + 1:,} tokens"
    budget = int(rows.loc[("littlelearner", "train"), "readable_tokens"])
    lines = []
    for name in NAMES:
        corpus, train = rows.loc[(name, "corpus")], rows.loc[(name, "train")]
        documents, held = int(corpus["documents"]), int(corpus["held_out"])
        readable = int(train["readable_tokens"])
        whole = f"its {documents:,} less the {held:,} held out for validation"
        every = int(train["documents"]) >= documents - held  # sample_to_tokens took every document
        if name == "littlelearner":
            origin = f"({whole})"
        elif not every:
            ll = labels["littlelearner"]
            origin = f"(a random draw to {ll}'s readable tokens from the unfiltered corpus, {whole})"
        else:
            origin = f"(all of the unfiltered corpus, {whole})"
        line = (
            f"{labels[name]} trains on {int(train['documents']):,} {CORPUS_WORDS[name]} {origin}: "
            f"{readable:,} tokens as the loader reads them ({most} of a document; "
            f"{int(train['tokens']):,} tokens in all), {train['bytes'] / 1e6:.2f} MB of text."
        )
        if name == "unfiltered" and every and readable < budget:
            line += (
                f" That is {budget - readable:,} readable tokens short of {labels['littlelearner']}'s "
                f"{budget:,}: the pair is not matched in tokens (a larger pool would match it)."
            )
        lines.append(line)
    return lines


def reading_table(
    matched: MatchedShards, math_share: float, seq_len: int, rows: int, seed: int = 0
) -> pd.DataFrame:
    """Per model, what `rows` training rows of `seq_len` tokens (steps x global batch) read of its
    text and of its math, planned as the trainer's loader plans them (`planned_reads`, the same
    seed): the training set's documents and readable tokens, the tokens read from it, the distinct
    tokens among them, the passes (tokens read / readable tokens), and the tokens read in all."""
    table = matched.table.set_index(["name", "split"])
    out = []
    for name in NAMES:
        reads = {
            Path(r["source"]).name: r
            for r in planned_reads(matched.training_data(name, math_share), seq_len, rows, seed)
        }
        row: dict[str, Any] = {"name": name}
        for part, split in (("text", "train"), ("math", "math")):
            read = reads.get(split, {"tokens": 0, "distinct_tokens": 0})
            held = table.loc[(name, split)] if (name, split) in table.index else None
            readable = int(held["readable_tokens"]) if held is not None else 0
            row |= {
                f"{part} documents": int(held["documents"]) if held is not None else 0,
                f"{part} readable tokens": readable,
                f"{part} tokens read": int(read["tokens"]),
                f"{part} distinct tokens read": int(read["distinct_tokens"]),
                f"{part} passes": read["tokens"] / readable if readable else 0.0,
            }
        row["tokens read"] = row["text tokens read"] + row["math tokens read"]
        out.append(row)
    return pd.DataFrame(out).set_index("name")


def exposure_format(run: str | os.PathLike) -> str:
    """The format the run's pair saw its math in (read from LittleLearner's exposure file), so an
    evaluation prompts the models the way they were trained; MissingProduct when there is none."""
    path = runs.require(run, "training_corpora") / MATH_FILES["littlelearner"]
    if not path.exists():
        raise runs.MissingProduct(f"{path} is missing; {runs.product('training_corpora').made_by} makes it")
    with path.open(encoding="utf-8") as handle:
        first = handle.readline()
    try:
        return json.loads(first)["format"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"{path} line 1: not a curriculum record with a format") from None


@dataclass
class TrainingCorpora:
    """The run product `training_corpora`: both text corpora, each model's math exposure, the
    K-5 tokenizer, and a note saying whether they were read or made."""

    k5: pd.DataFrame
    unfiltered: pd.DataFrame
    math: dict[str, list[dict[str, Any]]]  # {model name: curriculum records}
    tokenizer_dir: Path
    note: str


def training_corpora_inputs(
    run: str | os.PathLike,
    data_root: str | os.PathLike | None = None,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    min_frequency: int = DEFAULT_MIN_FREQUENCY,
    per_unit: int = DEFAULT_PER_UNIT,
    fmt: str = DEFAULT_FORMAT,
    seed: int = 0,
) -> TrainingCorpora:
    """The run product `training_corpora`, read from the run.

    When a file is missing (the training run on its own) all of it is made with the same calls
    and defaults: the filter's verdicts on the whole pretraining pool (`corpus_select.filter_outcomes`
    on `pretraining_pool`),
    the corpora without the documents sharing text with CommonCoreText-PD validation passages
    (`training_corpora`), the math exposure (`pair_exposure`) and the K-5 byte-level BPE fitted on
    LittleLearner's text and math (`tokenizer_texts`); the note says so.
    """
    from littlekit.curriculum.export import read_jsonl, write_jsonl
    from littlekit.lm.corpus_select import (
        evaluation_texts,
        filter_outcomes,
        pretraining_pool,
        read_corpus,
        training_corpora,
        write_corpus,
    )
    from littlekit.lm.tokenizer import train_tokenizer

    folder = runs.path(run, "training_corpora")
    math_paths = {name: folder / file for name, file in MATH_FILES.items()}
    paths = [folder / K5_CORPUS, folder / UNFILTERED_CORPUS, folder / TOKENIZER, *math_paths.values()]
    missing = [p for p in paths if not p.exists()]
    if not missing:
        return TrainingCorpora(
            read_corpus(paths[0]),
            read_corpus(paths[1]),
            {name: read_jsonl(path) for name, path in math_paths.items()},
            paths[2],
            f"Read the training corpora, the math exposure and the K-5 tokenizer from {folder}.",
        )
    selection = filter_outcomes(pretraining_pool(data_root), run)
    held_out = [text for texts in evaluation_texts(data_root).values() for text in texts]
    k5, unfiltered, _ = training_corpora(selection.frame, held_out=held_out)
    math = pair_exposure(per_unit, fmt, seed)
    write_corpus(k5, paths[0])
    write_corpus(unfiltered, paths[1])
    for name, path in math_paths.items():
        write_jsonl(math[name], path, force=True)
    train_tokenizer(
        tokenizer_texts(k5, math["littlelearner"]), vocab_size, out_dir=paths[2], min_frequency=min_frequency
    )
    note = (
        f"{runs.missing_note(run, 'training_corpora', missing=missing)}, so they were made here with "
        f"the same calls and defaults: {selection.note} The math exposure holds {per_unit:,} {fmt} "
        f"problems per unit (seed {seed}). The K-5 byte-level BPE was trained with "
        f"vocab_size={vocab_size:,}, min_frequency={min_frequency}."
    )
    return TrainingCorpora(read_corpus(paths[0]), read_corpus(paths[1]), math, paths[2], note)
