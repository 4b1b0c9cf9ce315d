"""What a model's training text holds, so that an evaluation scores it only on what it never saw.

A checkpoint written by `littlekit train` carries `trainer_state.json`, whose `config` names the
shard directories it trained on (`TrainConfig.sources`). A model made from another one (post-
training, a continued run) may carry `training_data.json` beside its weights:

    {"parent": "<the model it started from>", "shards": ["<dir>", ...], "jsonl": ["<file>", ...]}

`TrainingText.of_model(path)` follows both, parents included, decodes every document of every
shard directory with the model's own tokenizer (byte-level BPE decodes to the exact text) and reads
every text of the JSON-lines files. A Hub model, or a folder with neither file, has no known
training text: `of_model` returns None and the caller says that its items are held out by seed
or source only.

An evaluation item is **seen** when its text is a training document or a line of one (after
collapsing whitespace), or shares a run of `SHINGLE_WORDS` lower-cased words with one: the rule
`littlekit.text.overlaps` keeps validation passages out of the training labels with.
`seen_mask(items)` marks them; `holds_statement` tests one curriculum statement against the
training lines. The document tails a loader never reads (past `seq_len + 1` tokens) count as seen
too: the check errs towards excluding.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from littlekit.text import SHINGLE_WORDS

TRAINER_STATE = "trainer_state.json"
TRAINING_DATA = "training_data.json"
MAX_PARENTS = 16  # a chain of parents longer than this is a loop


def _normal(text: str) -> str:
    return " ".join(text.split())


def _shingles(words: Sequence[str], n: int) -> Iterator[tuple[str, ...]]:
    return zip(*(words[k:] for k in range(n)), strict=False)


@dataclass
class TrainingText:
    """The documents a model trained on, with where they came from."""

    documents: list[str]
    sources: list[str]  # shard directories and JSON-lines files, in the order read
    _lines: set[str] | None = field(default=None, repr=False)

    @classmethod
    def of_model(cls, model: str | os.PathLike) -> TrainingText | None:
        """The training text of a local model folder (see the module), or None when it names none."""
        folder = Path(model)
        if not folder.is_dir():
            return None
        documents: list[str] = []
        sources: list[str] = []
        found = False
        for _ in range(MAX_PARENTS):
            shards, files, parent = _declared_sources(folder)
            found = found or bool(shards or files)
            tokenizer = None
            for directory in shards:
                if tokenizer is None:
                    tokenizer = _tokenizer(folder)
                documents.extend(decode_shards(directory, tokenizer))
                sources.append(str(directory))
            for path in files:
                documents.extend(_jsonl_texts(path))
                sources.append(str(path))
            if parent is None:
                return cls(documents, sources) if found else None
            folder = parent
        raise ValueError(f"{model}: more than {MAX_PARENTS} parents in {TRAINING_DATA}; is there a loop?")

    @property
    def lines(self) -> set[str]:
        """Every document and every non-empty line of one, whitespace collapsed."""
        if self._lines is None:
            lines: set[str] = set()
            for text in self.documents:
                lines.add(_normal(text))
                lines.update(_normal(line) for line in text.splitlines() if line.strip())
            self._lines = lines
        return self._lines

    def holds_statement(self, statement: str) -> bool:
        """Whether the statement is a training document or a line of one."""
        return _normal(statement) in self.lines

    def seen_mask(self, items: Iterable[str], n: int = SHINGLE_WORDS) -> np.ndarray:
        """For each item: is it (or a line of a document) in the training text, or does it share a
        run of `n` words with a training document?"""
        items = [str(item) for item in items]
        seen = np.array([self.holds_statement(item) for item in items], dtype=bool)
        wanted: dict[tuple[str, ...], list[int]] = {}
        for index, item in enumerate(items):
            if not seen[index]:
                for shingle in _shingles(item.lower().split(), n):
                    wanted.setdefault(shingle, []).append(index)
        if wanted:
            for text in self.documents:
                for shingle in _shingles(text.lower().split(), n):
                    hits = wanted.get(shingle)
                    if hits is not None:
                        seen[hits] = True
        return seen


def _declared_sources(folder: Path) -> tuple[list[Path], list[Path], Path | None]:
    """(shard directories, JSON-lines files, parent folder) a model folder declares."""
    shards: list[Path] = []
    files: list[Path] = []
    parent = None
    state = folder / TRAINER_STATE
    if state.is_file():
        shards.extend(_trainer_sources(state))
    declared = folder / TRAINING_DATA
    if declared.is_file():
        try:
            record = json.loads(declared.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{declared}: not JSON ({exc.msg})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{declared}: not a JSON object")
        shards.extend(_existing(declared, record.get("shards", []), "shard directory"))
        files.extend(_existing(declared, record.get("jsonl", []), "file"))
        if record.get("parent"):
            parent = _existing(declared, [record["parent"]], "parent model")[0]
    return shards, files, parent


def _trainer_sources(state: Path) -> list[Path]:
    from littlekit.lm.train.config import TrainConfig

    try:
        config = json.loads(state.read_text(encoding="utf-8"))["config"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ValueError(f"{state}: no training config (a `littlekit train` checkpoint holds one)") from None
    # only the data fields matter to sources(); the others are required fields with no default
    sources = TrainConfig(data=config["data"], mix=config.get("mix"), tokenizer="", run_dir="").sources()
    return _existing(state, list(sources), "shard directory")


def _existing(where: Path, paths: Iterable[str], what: str) -> list[Path]:
    found = []
    for path in paths:
        resolved = Path(path) if Path(path).is_absolute() else (where.parent / path)
        if not resolved.exists():
            raise FileNotFoundError(
                f"{where} names the {what} {path} this model trained on, and it is not there: the "
                "evaluation cannot tell which items the model saw (rebuild it, or evaluate a copy "
                "whose training data travels with it)"
            )
        found.append(resolved)
    return found


def _tokenizer(folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def decode_shards(directory: str | os.PathLike, tokenizer) -> list[str]:
    """Every document of a shard directory as text (its BOS and EOS dropped)."""
    from littlekit.lm.shards import TokenShards, special_ids

    shards = TokenShards(directory)
    bos, eos = special_ids(tokenizer)
    ids = []
    for index in range(len(shards)):
        tokens = shards.document(index)
        if len(tokens) and tokens[0] == bos:
            tokens = tokens[1:]
        if len(tokens) and tokens[-1] == eos:
            tokens = tokens[:-1]
        ids.append(tokens.tolist())
    return tokenizer.batch_decode(ids, skip_special_tokens=False)


def json_lines(path: str | os.PathLike) -> Iterator[Any]:
    """The values of a JSON-lines file, blank lines skipped; a bad line's error names file and line."""
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path} line {number}: not JSON ({exc.msg})") from None


def _jsonl_texts(path: Path) -> list[str]:
    """Every `text`, `statement`, `prompt` and `completion` string of a JSON-lines file."""
    texts = []
    for number, record in enumerate(json_lines(path), start=1):
        if not isinstance(record, dict):
            raise ValueError(f"{path} line {number}: not a JSON object")
        texts.extend(record[key] for key in ("text", "statement", "prompt", "completion")
                     if isinstance(record.get(key), str))  # fmt: skip
    return texts


_CACHE: dict[tuple[str, float], TrainingText | None] = {}


def training_text(model) -> TrainingText | None:
    """The training text of a model object or folder: a loaded transformers model is followed to the
    folder it was loaded from (`name_or_path`). Cached per folder while its files stay unchanged."""
    where = model if isinstance(model, (str, os.PathLike)) else getattr(model, "name_or_path", None)
    if not where or not Path(where).is_dir():
        return None
    folder = Path(where).resolve()
    files = [folder / name for name in (TRAINER_STATE, TRAINING_DATA)]
    stamps = [path.stat().st_mtime for path in files if path.exists()]
    key = (str(folder), max(stamps, default=0.0))
    if key not in _CACHE:
        _CACHE[key] = TrainingText.of_model(folder)
    return _CACHE[key]


@dataclass
class SeenItems:
    """Which evaluation items some model's training text holds: `mask` (seen by any), `by_model`
    ({label: items that model saw}) and `unknown` (labels whose training text is not known)."""

    mask: np.ndarray
    by_model: dict[str, int]
    unknown: list[str]

    def note(self, what: str = "items") -> str:
        """One sentence for the chapter: how many items were left out, and for whom."""
        total = len(self.mask)
        counts = ", ".join(f"{label} {n:,}" for label, n in self.by_model.items())
        text = (f"{int(self.mask.sum()):,} of {total:,} {what} are in a model's training text and are "
                f"not scored ({counts})")  # fmt: skip
        if self.unknown:
            text += f"; {', '.join(self.unknown)}: training text unknown (held out by source only)"
        return text + "."


def seen_items(models, items: Sequence[str]) -> SeenItems:
    """`SeenItems` of `items` for {label: model or (model, tokenizer) or folder}."""
    items = [str(item) for item in items]
    mask = np.zeros(len(items), dtype=bool)
    by_model, unknown = {}, []
    for label, model in models.items():
        if isinstance(model, tuple):
            model = model[0]
        text = training_text(model)
        if text is None:
            unknown.append(label)
            continue
        seen = text.seen_mask(items)
        by_model[label] = int(seen.sum())
        mask |= seen
    return SeenItems(mask, by_model, unknown)
