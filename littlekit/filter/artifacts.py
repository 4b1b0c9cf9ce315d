"""The artifacts directory: everything the five-stage filter loads, in the released repository's layout.

    DIR/
      README.md                      what is here, where it came from (write_artifacts_readme)
      data/aoa.parquet               stage 1: AoA table, columns word, aoa (years)
      models/fasttext_grade.bin      stage 2: supervised fastText, labels __label__K5/K8/K12/OOS
      models/modernbert_grade/       stage 3: transformers sequence-classification directory
      data/word_log_odds.parquet     stage 5: word table, columns word, beyond_score

Stage 4 (symbolic) is rules in code and needs no file. The paths are those of the authors'
released filter, so its artifacts (from the Hub) and ours are interchangeable. One optional file is
ours alone: `filter_config.json`, the operating point of the classifier stages (minimum P(K5) for
fastText and the encoder, `littlekit.fit.operating_point`); without it the released rules apply.

    littlekit filter --in docs.jsonl --out kept/ --stages all --artifacts DIR

`stage_options_from_artifacts(DIR, stages)` turns the directory into the registry's options (with
the operating point's thresholds when filter_config.json is there) and says at once everything
that is missing or malformed for the stages asked for. It is the directory's layer of
`littlekit.filter.options.resolve_stage_options`, which puts given options (the command line's
flags, a notebook's overrides) above it and StageOptions' defaults below.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from littlekit.filter.fasttext import fasttext_file_problem
from littlekit.filter.filter_config import CLASSIFIER_STAGES, FILTER_CONFIG, read_operating_point
from littlekit.filter.lexicon import AoALexicon, read_aoa_table
from littlekit.filter.registry import known_stages, stage_names
from littlekit.filter.word_table import save_word_scores
from littlekit.io import sha256_file

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json")


@dataclass(frozen=True)
class Artifact:
    """One file or directory of the layout and the stage option it fills."""

    option: str  # StageOptions field
    path: str  # relative to the artifacts directory
    stage: str
    what: str
    how: str  # how to produce it


ARTIFACTS: tuple[Artifact, ...] = (
    Artifact(
        "aoa_table",
        "data/aoa.parquet",
        "aoa",
        "AoA table, columns word, aoa (years)",
        "`littlekit fit aoa --data DATA --out DIR`, or "
        "littlekit.filter.artifacts.export_aoa_table(table, DIR), e.g. from data/aoa/aoa_lemma.csv",
    ),
    Artifact(
        "fasttext_model",
        "models/fasttext_grade.bin",
        "fasttext",
        "supervised fastText grade classifier, labels __label__K5/K8/K12/OOS",
        "`littlekit fit fasttext --data DATA --out DIR`, or "
        "littlekit.fit.fasttext.train_fasttext(labels, DIR/models/fasttext_grade.bin)",
    ),
    Artifact(
        "encoder_model",
        "models/modernbert_grade",
        "encoder",
        "transformers sequence-classification directory (ModernBERT in the paper; all-MiniLM-L6-v2 "
        "in the embedded default), classes K5, K8, K12, OOS",
        "`littlekit fit encoder --data DATA --out DIR`, or "
        "littlekit.fit.encoder.fine_tune(..., out_dir=DIR/models/modernbert_grade, ...)",
    ),
    Artifact(
        "word_table",
        "data/word_log_odds.parquet",
        "frequency",
        "word table, columns word, beyond_score = log2(rate_beyond / rate_k5)",
        "`littlekit fit word-table --data DATA --out DIR`, or "
        "littlekit.filter.artifacts.export_word_table(littlekit.filter.word_table.score_words(...), DIR)",
    ),
)
_BY_OPTION = {artifact.option: artifact for artifact in ARTIFACTS}


def artifact_path(root: str | os.PathLike, option: str) -> Path:
    """Where the artifact for a stage option ("aoa_table", "fasttext_model", ...) lives under root."""
    if option not in _BY_OPTION:
        raise KeyError(f"no artifact fills {option!r}; known: {', '.join(_BY_OPTION)}")
    return Path(root) / _BY_OPTION[option].path


def stage_list(stages: str | Sequence[str] = "all") -> list[str]:
    """Stage names from "all" (every registered stage, cascade order), "aoa,symbolic" or a list."""
    if isinstance(stages, str) and stages.strip() == "all":
        return list(known_stages())
    return stage_names(stages)


def artifact_problems(root: str | os.PathLike, stages: str | Sequence[str] = "all") -> list[str]:
    """One line per artifact the stages need that is missing or malformed; empty when all is well."""
    names = set(stage_list(stages))
    problems = []
    for artifact in ARTIFACTS:
        if artifact.stage in names:
            problem = _check(artifact, Path(root) / artifact.path)
            if problem:
                problems.append(f"{artifact.path} ({artifact.stage} stage: {artifact.what}): {problem}")
    if names & {*CLASSIFIER_STAGES, "aoa"}:  # filter_config.json may set stage 1's max_aoa too
        try:
            read_operating_point(root)
        except ValueError as error:
            problems.append(f"{FILTER_CONFIG} (operating point of the classifier stages): {error}")
    return problems


def stage_options_from_artifacts(
    root: str | os.PathLike, stages: str | Sequence[str] = "all"
) -> dict[str, Any]:
    """StageOptions fields for the stages' artifacts under root, e.g. {"aoa_table": ".../aoa.parquet"}.

    Only the stages named need their artifacts. FileNotFoundError lists everything missing or
    malformed at once, with how to produce each, rather than failing on the first. When
    root/filter_config.json exists, the minimum P(K5) it sets for each classifier stage named
    (fasttext_min_k5_prob, encoder_min_k5_prob), and stage 1's max_aoa when it sets one, is added;
    absent, the released rules apply.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"artifacts directory {root} does not exist; expected layout:\n{layout()}")
    problems = artifact_problems(root, stages)
    if problems:
        needed = [a for a in ARTIFACTS if any(p.startswith(a.path + " ") for p in problems)]
        fixes = "".join(f"\n  {a.path}: {a.how}" for a in needed)
        raise FileNotFoundError(
            f"artifacts directory {root} cannot serve --stages {_spec(stages)}:\n  - "
            + "\n  - ".join(problems)
            + f"\nto produce them:{fixes}\nexpected layout:\n{layout()}"
        )
    names = set(stage_list(stages))
    options: dict[str, Any] = {a.option: str(root / a.path) for a in ARTIFACTS if a.stage in names}
    point = read_operating_point(root)
    if point is not None:
        options.update(point.stage_options(names))
    return options


def _spec(stages: str | Sequence[str]) -> str:
    return stages if isinstance(stages, str) else ",".join(stages)


def layout() -> str:
    """The expected layout, one artifact a line."""
    return "\n".join(f"  {a.path:<30s} {a.stage:<9s} {a.what}" for a in ARTIFACTS)


def file_problem(option: str, path: str | os.PathLike) -> str | None:
    """The same checks for a file given on its own (--fasttext-model, --aoa-table, ...): what is
    wrong with it, or None. A table that is not parquet (csv) is left to its loader's checks."""
    path = Path(path)
    if option in ("aoa_table", "word_table") and path.suffix.lower() not in (".parquet", ".pq"):
        return None if path.is_file() else ("not found" if not path.exists() else "is not a file")
    return _check(_BY_OPTION[option], path)


def how_to_rebuild(option: str) -> str:
    """How to produce the artifact that fills a stage option."""
    return _BY_OPTION[option].how


def _check(artifact: Artifact, path: Path) -> str | None:
    if artifact.option == "encoder_model":
        return _check_encoder(path)
    if not path.is_file():
        return "not found" if not path.exists() else "is not a file"
    if artifact.option == "fasttext_model":
        return fasttext_file_problem(path)
    if artifact.option == "aoa_table":
        return _check_columns(path, {"word": "string", "aoa": "numeric"})
    return _check_columns(path, {"word": "string", "beyond_score": "numeric"})


def _check_encoder(path: Path) -> str | None:
    if not path.is_dir():
        return "not found" if not path.exists() else "is not a directory"
    if not (path / "config.json").is_file():
        return "no config.json (not a transformers model directory)"
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return f"config.json is not valid JSON ({exc})"
    if not isinstance(config, dict):
        return "config.json is not a JSON object"
    if not any((path / name).is_file() for name in WEIGHT_FILES):
        return f"no weights ({' or '.join(WEIGHT_FILES[:2])})"
    if not any((path / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt")):
        return "no tokenizer files (save the tokenizer into the same directory)"
    return _check_weights(path)


def _check_weights(path: Path) -> str | None:
    """The weight files are whole: each safetensors file's size is what its header says; a torch
    .bin (a zip archive) opens; a sharded index's shards are there and whole."""
    files = []
    if (path / "model.safetensors").is_file():
        files.append(path / "model.safetensors")
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as exc:
            return f"{index.name} is not a safetensors index ({type(exc).__name__}: {exc})"
        missing = [name for name in shards if not (path / name).is_file()]
        if missing:
            return f"{index.name} names shard(s) that are not there: {missing[:3]}"
        files += [path / name for name in shards]
    for file in files:
        problem = safetensors_problem(file)
        if problem:
            return f"{file.name}: {problem}"
    torch_bin = path / "pytorch_model.bin"
    if not files and torch_bin.is_file():
        with torch_bin.open("rb") as handle:
            zipped = handle.read(2) == b"PK"
        if zipped:
            try:
                with zipfile.ZipFile(torch_bin):
                    pass
            except (zipfile.BadZipFile, OSError) as exc:
                return f"{torch_bin.name} is damaged or truncated ({exc})"
    return None


def safetensors_problem(path: str | os.PathLike) -> str | None:
    """What is wrong with a .safetensors file (header unreadable, file cut short); None if whole.

    The format: an 8-byte little-endian header length N, N bytes of JSON naming each tensor's
    byte range, then the data; the file ends where the last tensor does."""
    path = Path(path)
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            return f"not a safetensors file (only {size} bytes)"
        n = int.from_bytes(head, "little")
        if n > size - 8 or n > 100_000_000:
            return f"not a safetensors file, or cut short (its header does not fit in its {size:,} bytes)"
        try:
            header = json.loads(handle.read(n).decode("utf-8"))
            ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
        except (ValueError, KeyError, TypeError, IndexError, AttributeError, UnicodeDecodeError) as exc:
            return f"not a safetensors file (its header is not readable: {type(exc).__name__})"
    expected = 8 + n + max(ends, default=0)
    if size < expected:
        return f"truncated: its header says {expected:,} bytes but the file has {size:,}"
    return None


def _check_columns(path: Path, required: Mapping[str, str]) -> str | None:
    try:
        schema = pq.read_schema(path)
        rows = pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # pyarrow raises several types for a file that is not parquet
        return f"not a readable parquet file ({type(exc).__name__}: {exc})"
    columns = schema.names
    missing = [name for name in required if name not in columns]
    if missing:
        return f"lacks column(s) {missing}; has {columns}"
    for name, kind in required.items():
        dtype = schema.field(name).type
        ok = (
            pa.types.is_integer(dtype) or pa.types.is_floating(dtype) or pa.types.is_decimal(dtype)
            if kind == "numeric"
            else pa.types.is_string(dtype) or pa.types.is_large_string(dtype) or pa.types.is_dictionary(dtype)
        )
        if not ok:
            return f"column {name!r} is {dtype}, not {kind}"
    return None if rows else "has no rows"


# --- writing the directory ---------------------------------------------------------------------


def export_aoa_table(
    source: str | os.PathLike | pd.DataFrame | Mapping[str, float] | Any, root: str | os.PathLike
) -> Path:
    """Write an AoA table as ROOT/data/aoa.parquet (or to `root` itself when it ends in .parquet).

    `source`: a csv/parquet file with columns word, aoa (read with the filter's normalisation),
    a DataFrame with those columns, a {word: aoa} mapping, or an AoALexicon (its rated table;
    imputation is a stage option, not part of the table). Rows are sorted by word.
    """
    if isinstance(source, AoALexicon):
        table = source.table
    elif isinstance(source, pd.DataFrame):
        missing = {"word", "aoa"} - set(source.columns)
        if missing:
            raise ValueError(f"AoA frame lacks column(s) {sorted(missing)}")
        table = dict(zip(source["word"].astype(str), source["aoa"].astype(float), strict=True))
    elif isinstance(source, Mapping):
        table = {str(word): float(aoa) for word, aoa in source.items()}
    else:
        table = read_aoa_table(source)
    frame = pd.DataFrame({"word": list(table), "aoa": list(table.values())}).sort_values("word")
    frame = frame.astype({"word": "string", "aoa": "float64"})
    out = _target(root, "aoa_table")
    out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(out, index=False)
    return out


def export_word_table(table: pd.DataFrame, root: str | os.PathLike) -> Path:
    """Write a stage-5 word table (word, beyond_score, ...) as ROOT/data/word_log_odds.parquet."""
    return save_word_scores(table, _target(root, "word_table"))


def _target(root: str | os.PathLike, option: str) -> Path:
    root = Path(root)
    return root if root.suffix == ".parquet" else artifact_path(root, option)


def write_artifacts_readme(root: str | os.PathLike, notes: Mapping[str, str] | None = None) -> Path:
    """Write ROOT/README.md: the layout, what is present (size, SHA-256), provenance notes, usage.

    `notes` maps a stage option (e.g. "fasttext_model") to a line on how that artifact was made.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    notes = dict(notes or {})
    unknown = set(notes) - set(_BY_OPTION)
    if unknown:
        raise KeyError(f"notes for unknown artifacts {sorted(unknown)}; known: {', '.join(_BY_OPTION)}")
    lines = [
        "# littlekit filter artifacts",
        "",
        "Everything the five-stage K-5 filter loads, in the layout of the released filter repository,",
        "so these files and the released ones are interchangeable. Stage 4 (symbolic) needs no file.",
        "",
        "```",
        f"littlekit filter --in docs.jsonl --out kept/ --stages all --artifacts {root}",
        "```",
        "",
        "| path | stage | contents | status | bytes | sha256 |",
        "|---|---|---|---|---|---|",
    ]
    for artifact in ARTIFACTS:
        path = root / artifact.path
        problem = _check(artifact, path)
        size, digest = _size_and_digest(path) if problem is None else ("", "")
        status = "ok" if problem is None else problem
        lines.append(
            f"| `{artifact.path}` | {artifact.stage} | {artifact.what} | {status} | {size} | {digest} |"
        )
    lines += ["", f"## Operating point (`{FILTER_CONFIG}`)", ""]
    try:
        point = read_operating_point(root)
        lines.append(
            f"- {point.describe()}."
            if point is not None
            else f"- no {FILTER_CONFIG}: the released rules (keep when the top band is K5)."
        )
    except ValueError as error:
        lines.append(f"- unreadable: {error}")
    lines += ["", "## How each artifact was made", ""]
    for artifact in ARTIFACTS:
        lines.append(f"- `{artifact.path}`: {notes.get(artifact.option, 'not recorded')}.")
        lines.append(f"  To rebuild: `{artifact.how}`.")
    readme = root / "README.md"
    readme.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return readme


def _size_and_digest(path: Path) -> tuple[str, str]:
    """Bytes and SHA-256 (first 16 hex digits) of a file; of a directory, its total bytes and the
    SHA-256 of its files' relative paths and hashes."""
    if path.is_file():
        return f"{path.stat().st_size:,}", sha256_file(path)[:16]
    files = sorted(p for p in path.rglob("*") if p.is_file())
    listing = "".join(f"{file.relative_to(path)}:{sha256_file(file)}\n" for file in files)
    total = sum(file.stat().st_size for file in files)
    return f"{total:,}", hashlib.sha256(listing.encode()).hexdigest()[:16]
