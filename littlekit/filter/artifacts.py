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
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.filter.base import Artifact
from littlekit.filter.filter_config import FILTER_CONFIG, read_operating_point
from littlekit.filter.lexicon import AoALexicon, read_aoa_table
from littlekit.filter.registry import known_stages, stage_names, stage_specs
from littlekit.filter.word_table import save_word_scores
from littlekit.io import sha256_file


def declared_artifacts() -> tuple[Artifact, ...]:
    """Every registered stage's artifacts (`StageSpec.artifacts`), in cascade order."""
    return tuple(artifact for spec in stage_specs().values() for artifact in spec.artifacts)


def _artifact(option: str) -> Artifact:
    by_option = {artifact.option: artifact for artifact in declared_artifacts()}
    if option not in by_option:
        raise KeyError(f"no artifact fills {option!r}; known: {', '.join(by_option)}")
    return by_option[option]


def artifact_path(root: str | os.PathLike, option: str) -> Path:
    """Where the artifact for a stage option ("aoa_table", "fasttext_model", ...) lives under root."""
    return Path(root) / _artifact(option).path


def stage_list(stages: str | Sequence[str] = "all") -> list[str]:
    """Stage names from "all" (every registered stage, cascade order), "aoa,symbolic" or a list."""
    if isinstance(stages, str) and stages.strip() == "all":
        return list(known_stages())
    return stage_names(stages)


def artifact_problems(root: str | os.PathLike, stages: str | Sequence[str] = "all") -> list[str]:
    """One line per artifact the stages need that is missing or malformed; empty when all is well."""
    names = set(stage_list(stages))
    problems = []
    for artifact in declared_artifacts():
        if artifact.stage in names:
            problem = artifact.check(Path(root) / artifact.path)
            if problem:
                problems.append(f"{artifact.path} ({artifact.stage} stage: {artifact.what}): {problem}")
    if any(stage_specs()[name].thresholds for name in names):  # filter_config.json may set them
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
        needed = [a for a in declared_artifacts() if any(p.startswith(a.path + " ") for p in problems)]
        fixes = "".join(f"\n  {a.path}: {a.how}" for a in needed)
        raise FileNotFoundError(
            f"artifacts directory {root} cannot serve --stages {_spec(stages)}:\n  - "
            + "\n  - ".join(problems)
            + f"\nto produce them:{fixes}\nexpected layout:\n{layout()}"
        )
    names = set(stage_list(stages))
    options: dict[str, Any] = {a.option: str(root / a.path) for a in declared_artifacts() if a.stage in names}
    point = read_operating_point(root)
    if point is not None:
        options.update(point.stage_options(names))
    return options


def _spec(stages: str | Sequence[str]) -> str:
    return stages if isinstance(stages, str) else ",".join(stages)


def layout() -> str:
    """The expected layout, one artifact a line."""
    return "\n".join(f"  {a.path:<30s} {a.stage:<9s} {a.what}" for a in declared_artifacts())


def file_problem(option: str, path: str | os.PathLike) -> str | None:
    """The same checks for a file given on its own (--fasttext-model, --aoa-table, ...): what is
    wrong with it, or None."""
    return _artifact(option).check(Path(path))


def how_to_rebuild(option: str) -> str:
    """How to produce the artifact that fills a stage option."""
    return _artifact(option).how


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
    artifacts = declared_artifacts()
    known = [artifact.option for artifact in artifacts]
    unknown = set(notes) - set(known)
    if unknown:
        raise KeyError(f"notes for unknown artifacts {sorted(unknown)}; known: {', '.join(known)}")
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
    for artifact in artifacts:
        path = root / artifact.path
        problem = artifact.check(path)
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
    for artifact in artifacts:
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
