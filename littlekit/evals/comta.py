"""Bits per byte on CoMTA's student turns, by math category (the paper's Figure 4).

CoMTA (Khan Academy, https://github.com/Khan/tutoring-accuracy-dataset) is a JSON list of tutoring
dialogues `{test_id, math_level, expected_result, data: [{role, content}]}`, role `user` (the
student) or `assistant` (the tutor). Its licence allows internal evaluation only, so the file is
never part of this repository: `load_comta` reads a `CoMTA_dataset.json` the user supplies.

Scoring. A dialogue is written as a plain transcript, one turn per paragraph, `Student: ...` or
`Tutor: ...`. Every non-empty student turn is one (context, text) pair for `corpus_bpb`: the
context is the transcript so far ending in `Student:`, the text is a space and the turn's content.
Only student text is scored and only its bytes are counted: the turn's content plus the one space
that separates it from the speaker label (scored with the turn, since tokenisers attach it to the
first word; the `content_bytes` column leaves it out). Tutor turns are context only. Categories
(the paper's section C.1): Elementary is K-5; Algebra, Trigonometry and Calculus are Beyond K-5;
Geometry is excluded and counted as such.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from littlekit.argtypes import positive_int
from littlekit.evals.benchmark import Benchmark, file_option, option
from littlekit.evals.bpb import bpb_from_token_losses, corpus_bpb, paired_bootstrap_table

MATH_LEVELS: dict[str, str | None] = {
    "Elementary": "K-5",
    "Algebra": "Beyond K-5",
    "Trigonometry": "Beyond K-5",
    "Calculus": "Beyond K-5",
    "Geometry": None,  # excluded
}
CATEGORY_ORDER: tuple[str, ...] = ("Elementary", "Algebra", "Trigonometry", "Calculus")
SPLIT_ORDER: tuple[str, ...] = ("K-5", "Beyond K-5")
ROLES: dict[str, str] = {"user": "Student", "assistant": "Tutor"}
FIELDS: tuple[str, ...] = ("test_id", "math_level", "expected_result", "data")
SOURCE_URL = "https://github.com/Khan/tutoring-accuracy-dataset"


class CoMTAFormatError(ValueError):
    """A CoMTA file that is not the expected shape; the message names the file, dialogue and field."""


def _check_dialogue(where: str, index: int, dialogue: Any) -> dict[str, Any]:
    here = f"{where}: dialogue {index}"
    if not isinstance(dialogue, dict):
        raise CoMTAFormatError(f"{here} is a {type(dialogue).__name__}, expected an object")
    missing = [field for field in FIELDS if field not in dialogue]
    if missing:
        raise CoMTAFormatError(f"{here} lacks field(s) {', '.join(missing)}")
    level = dialogue["math_level"]
    if level not in MATH_LEVELS:
        raise CoMTAFormatError(
            f"{here}: unknown math_level {level!r}, expected one of {', '.join(MATH_LEVELS)}"
        )
    turns = dialogue["data"]
    if not isinstance(turns, list):
        raise CoMTAFormatError(f"{here}: data is a {type(turns).__name__}, expected a list of turns")
    for t, turn in enumerate(turns):
        if not isinstance(turn, dict) or "role" not in turn or "content" not in turn:
            raise CoMTAFormatError(
                f"{here}, turn {t}: expected an object with role and content, got {turn!r:.80}"
            )
        if turn["role"] not in ROLES:
            raise CoMTAFormatError(
                f"{here}, turn {t}: unknown role {turn['role']!r}, expected user or assistant"
            )
        if not isinstance(turn["content"], str):
            raise CoMTAFormatError(
                f"{here}, turn {t}: content is a {type(turn['content']).__name__}, not text"
            )
    return dialogue


def load_comta(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The dialogues of a CoMTA_dataset.json, checked: a list of objects with every field, known
    math levels and roles, text contents, UTF-8. Raises CoMTAFormatError (or FileNotFoundError)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no CoMTA file there; download CoMTA_dataset.json from {SOURCE_URL} "
            "(Khan Academy's evaluation licence: internal evaluation only, do not redistribute)"
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CoMTAFormatError(
            f"{path}: not UTF-8 (byte {err.start}: {raw[err.start : err.start + 1]!r})"
        ) from err
    try:
        dialogues = json.loads(text)
    except json.JSONDecodeError as err:
        raise CoMTAFormatError(
            f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg})"
        ) from err
    if not isinstance(dialogues, list):
        raise CoMTAFormatError(f"{path}: expected a JSON list of dialogues, got a {type(dialogues).__name__}")
    return [_check_dialogue(str(path), i, d) for i, d in enumerate(dialogues)]


def student_turns(dialogues: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per non-empty student turn of a non-excluded dialogue: dialogue (index), test_id,
    math_level, split, turn (index in data), context, text (what is scored) and content_bytes."""
    rows = []
    for index, dialogue in enumerate(dialogues):
        split = MATH_LEVELS[dialogue["math_level"]]
        if split is None:
            continue
        transcript = ""
        for t, turn in enumerate(dialogue["data"]):
            speaker, content = ROLES[turn["role"]], turn["content"].strip()
            if turn["role"] == "user" and content:
                rows.append(
                    {
                        "dialogue": index,
                        "test_id": dialogue["test_id"],
                        "math_level": dialogue["math_level"],
                        "split": split,
                        "turn": t,
                        "context": f"{transcript}{speaker}:",
                        "text": f" {content}",
                        "content_bytes": len(content.encode("utf-8")),
                    }
                )
            if content:
                transcript += f"{speaker}: {content}\n\n"
    columns = ["dialogue", "test_id", "math_level", "split", "turn", "context", "text", "content_bytes"]
    return pd.DataFrame(rows, columns=columns)


def dialogue_counts(dialogues: list[dict[str, Any]]) -> pd.DataFrame:
    """Per math level: dialogues, whether scored, student turns (non-empty), empty student turns,
    tutor turns. The `excluded` row (Geometry) and the scored rows add up to every dialogue."""
    rows = []
    for level, split in MATH_LEVELS.items():
        chosen = [d for d in dialogues if d["math_level"] == level]
        users = [t for d in chosen for t in d["data"] if t["role"] == "user"]
        rows.append(
            {
                "math_level": level,
                "split": split if split is not None else "excluded",
                "dialogues": len(chosen),
                "student_turns": sum(1 for t in users if t["content"].strip()),
                "empty_student_turns": sum(1 for t in users if not t["content"].strip()),
                "tutor_turns": sum(1 for d in chosen for t in d["data"] if t["role"] == "assistant"),
            }
        )
    return pd.DataFrame(rows).set_index("math_level")


def score_turns(
    models: Mapping[str, tuple[Any, Any]], dialogues: list[dict[str, Any]], **bpb_kwargs: Any
) -> pd.DataFrame:
    """One row per (model, scored student turn): model, dialogue, math_level, split, turn, nats,
    bytes, tokens. bpb_kwargs go to corpus_bpb (batch_size, max_length, stride, device)."""
    if not models:
        raise ValueError("no models to score: pass {label: (model, tokenizer)}")
    turns = student_turns(dialogues)
    if turns.empty:
        raise ValueError("no student turn to score (every dialogue excluded or without student text)")
    pairs = list(zip(turns["context"], turns["text"], strict=True))
    frames = []
    for label, (model, tokenizer) in models.items():
        per_doc = pd.DataFrame(corpus_bpb(model, tokenizer, pairs, per_doc=True, **bpb_kwargs)["per_doc"])
        keys = turns[["dialogue", "math_level", "split", "turn"]]
        frames.append(pd.concat([keys, per_doc], axis=1).assign(model=label))
    columns = ["model", "dialogue", "math_level", "split", "turn", "nats", "bytes", "tokens"]
    return pd.concat(frames, ignore_index=True)[columns]


def group_bpb(scored: pd.DataFrame) -> pd.DataFrame:
    """`score_turns`' rows summed per (model, group), by math category and by split: model, level
    ("category" or "split"), group, dialogues, turns, tokens, nats, bytes, bpb (Σ nats / (ln 2 · Σ bytes))."""
    rows = []
    for label, part in scored.groupby("model", sort=False):
        for level, key, order in (
            ("category", "math_level", CATEGORY_ORDER),
            ("split", "split", SPLIT_ORDER),
        ):
            for group in order:
                chosen = part[part[key] == group]
                if chosen.empty:
                    continue
                n_bytes = int(chosen["bytes"].sum())
                rows.append(
                    {
                        "model": label,
                        "level": level,
                        "group": group,
                        "dialogues": chosen["dialogue"].nunique(),
                        "turns": len(chosen),
                        "tokens": int(chosen["tokens"].sum()),
                        "nats": float(chosen["nats"].sum()),
                        "bytes": n_bytes,
                        "bpb": bpb_from_token_losses(chosen["nats"].sum(), n_bytes),
                    }
                )
    return pd.DataFrame(rows)


def comta_bpb(
    models: Mapping[str, tuple[Any, Any]], dialogues: list[dict[str, Any]], **bpb_kwargs: Any
) -> pd.DataFrame:
    """BPB per model on the student turns, by math category and by split (K-5, Beyond K-5):
    `group_bpb(score_turns(models, dialogues, **bpb_kwargs))`."""
    return group_bpb(score_turns(models, dialogues, **bpb_kwargs))


def bootstrap_gaps(
    scored: pd.DataFrame, n_boot: int = 1000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Percentile bootstrap of each model's Beyond-minus-K-5 BPB gap and of each model's gap minus
    every other's, from `score_turns`' rows. Dialogues (not turns: a dialogue's turns share a
    student and a problem) are resampled with replacement within each split, the same dialogues
    for every model. Rows: `what` (a model, or "A - B"), gap (as scored), ci_low, ci_high."""
    models = list(dict.fromkeys(scored["model"]))
    sums = scored.groupby(["split", "dialogue", "model"])[["nats", "bytes"]].sum().unstack("model")
    by_split = {}
    for split in SPLIT_ORDER:
        if split not in sums.index.get_level_values("split"):
            raise ValueError(f"a gap needs scored turns in both splits; none in {split}")
        part = sums.loc[split]
        by_split[split] = (part["nats"][models].to_numpy(), part["bytes"][models].to_numpy(float))

    def gaps(picks: dict[str, np.ndarray]) -> np.ndarray:
        values = {}
        for split, (nats, n_bytes) in by_split.items():
            chosen = picks[split]
            values[split] = nats[chosen].sum(axis=0) / (np.log(2) * n_bytes[chosen].sum(axis=0))
        return values["Beyond K-5"] - values["K-5"]

    rng = np.random.default_rng(seed)
    everything = {split: np.arange(len(nats)) for split, (nats, _) in by_split.items()}
    point = gaps(everything)
    boots = np.array(
        [
            gaps({s: rng.integers(0, len(i), size=len(i)) for s, i in everything.items()})
            for _ in range(n_boot)
        ]
    )
    return paired_bootstrap_table(models, point, boots, confidence, value="gap")


def split_gaps(results: pd.DataFrame) -> pd.DataFrame:
    """Per model: K-5 BPB, Beyond-K-5 BPB and Beyond minus K-5 (positive: less familiar beyond K-5)."""
    splits = results[results["level"] == "split"].pivot(index="model", columns="group", values="bpb")
    splits = splits.reindex(columns=list(SPLIT_ORDER))
    splits["beyond_minus_k5"] = splits["Beyond K-5"] - splits["K-5"]
    return splits.reindex(results["model"].unique())


# --- `littlekit eval comta` (the interface: littlekit.evals.benchmark) ---------------------------


def _check_benchmark(args: Any) -> None:
    from littlekit.argtypes import UsageError

    if args.comta is None:
        raise UsageError(f"--comta: give the path of CoMTA_dataset.json (not shipped: download it from "
                         f"{SOURCE_URL}; internal evaluation only)", "littlekit eval comta")  # fmt: skip
    file_option(args.comta, "--comta", "littlekit eval comta")


BENCHMARK = Benchmark(
    name="comta",
    measures="bits per byte on CoMTA's student turns by math category and split",
    paper="the paper's Figure 4",
    load=lambda args: load_comta(args.comta),
    score=lambda model, tokenizer, dialogues, args: score_turns(
        {"model": (model, tokenizer)}, dialogues, batch_size=args.batch_size, max_length=args.max_length
    ),
    table=lambda scored, args: group_bpb(scored).drop(columns="model"),
    options=(
        option(
            "--comta",
            type=Path,
            metavar="CoMTA_dataset.json",
            help=f"the CoMTA file (not shipped: {SOURCE_URL}; required)",
        ),
        option(
            "--max-length",
            type=positive_int,
            help="scoring window in tokens (default: the model's context, at most 2,048)",
        ),
    ),
    check=_check_benchmark,
)
