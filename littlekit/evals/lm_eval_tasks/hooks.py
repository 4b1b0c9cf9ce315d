"""What littlekit's lm-evaluation-harness tasks call: their items, drawn by littlekit's own code,
and their metrics, graded by littlekit's own grader (the task configs: the YAML files beside this).

Each task's `custom_dataset` builds its items when the harness loads the task, from local files
only (the data root, the user's CoMTA file; never the Hub), exactly as `littlekit eval NAME`
selects them: CLEAR's excerpts by easiness bin and seeded sample, CoMTA's student turns, the
curriculum's held-out problems (`evals.curriculum.held_out_draw`, the `held_out_seed` namespace),
MathCAMPS' filtered and sampled questions; an item the model's training text holds is left out,
as `littlekit eval` leaves it out (held out means unseen). The harness passes its metadata, the
`--model_args` merged with `--metadata`: `pretrained` is the model folder, and the benchmark's
selection settings (`SETTINGS`) are `littlekit eval`'s flags with underscores, checked by its own
parser, e.g. `--metadata '{"per_bin": 10, "seed": 1}'`; other keys (the model's) are ignored.

Same numbers, by construction:
- BPB (CLEAR, CoMTA) is Σ nats / (ln 2 · Σ UTF-8 bytes) within each group, the harness's
  `bits_per_byte` aggregation over (log-likelihood, bytes) pairs, one metric per easiness bin
  (`bpb_bin0` ...) or math category and split. A CLEAR excerpt is a `loglikelihood_rolling`
  request: the harness scores it after its prefix token (BOS, else EOS), as `evals.bpb` does.
  A CoMTA turn is a `loglikelihood` request whose context opens with that token's text, which
  the harness's tokenizer reads back as the token, so it scores [BOS] + context + turn as
  `evals.bpb` does. Both equal `littlekit eval` while a text (with its context) fits the model's
  window: past it, the harness cuts it into disjoint windows (rolling) or drops the context's
  start, where littlekit slides a window by half its length (every CLEAR excerpt fits the book's
  models: at most 577 of their 1,024 positions).
- Accuracy (curriculum, MathCAMPS) is greedy: each prompt opens with the BOS text (when the
  tokenizer has a BOS, as `evals.generate.prompt_ids` prepends it), stops where littlekit's do,
  and its completion is graded by `evals.curriculum.is_correct` or `curriculum.answers.grade`.
  MathCAMPS here is pass@1 greedy: `littlekit eval mathcamps --samples 1 --temperature 0`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

# the settings each task takes from the harness's metadata (`littlekit eval NAME`'s flags)
SETTINGS: dict[str, tuple[str, ...]] = {
    "clear": ("data_root", "seed", "per_bin", "fold_extremes"),
    "comta": ("comta",),
    "curriculum": ("band", "per_unit", "seed", "register", "sampling", "exclude"),
    "mathcamps": ("data_root", "seed", "per_standard", "question_types"),
}


def metric_name(prefix: str, group: str) -> str:
    """A group's metric name: `bpb_beyond_k_5` for ("bpb", "Beyond K-5"), `acc_grade_k` ..."""
    return f"{prefix}_{re.sub(r'[^a-z0-9]+', '_', str(group).lower()).strip('_')}"


def _flags(key: str, value: Any) -> list[str]:
    flag = "--" + key.replace("_", "-")
    if isinstance(value, bool):
        return [flag] if value else []
    if isinstance(value, (list, tuple)):
        return [part for item in value for part in (flag, str(item))]
    return [flag, str(value)]


def benchmark_settings(name: str, metadata: Mapping[str, Any], **fixed: Any) -> argparse.Namespace:
    """`littlekit eval NAME`'s settings from the harness's metadata (`pretrained` and the keys in
    SETTINGS[name]) and `fixed` ones, through the command's own parser (same defaults and checks)."""
    from littlekit.argtypes import Parser
    from littlekit.evals import registry

    model = metadata.get("pretrained")
    if not model or not isinstance(model, str):
        raise ValueError(f"littlekit_{name}: give the model folder as --model_args pretrained=DIR "
                         f"(its training text is left out and its tokenizer opens each prompt)")  # fmt: skip
    argv = [name, "--model", model]
    for key in SETTINGS[name]:
        if key in metadata:
            argv += _flags(key, metadata[key])
    for key, value in fixed.items():
        argv += _flags(key, value)
    parser = Parser(prog=f"littlekit_{name} (lm-eval task)")
    registry.get(name).add_to(parser.add_subparsers(dest="evaluation"))
    return parser.parse_args(argv)


def _tokenizer(metadata: Mapping[str, Any]) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(metadata.get("tokenizer") or metadata["pretrained"])


def context_opening(tokenizer: Any) -> str:
    """The text of `evals.bpb`'s first id (BOS, else EOS: `special_ids`), which is also the
    harness's prefix token: a context opening with it is read back as that one token."""
    from littlekit.lm.shards import special_ids

    return tokenizer.decode([special_ids(tokenizer)[0]])


def generation_opening(tokenizer: Any) -> str:
    """What `evals.generate.prompt_ids` puts before a prompt, as text: the BOS token, or nothing."""
    return tokenizer.bos_token if tokenizer.bos_token_id is not None else ""


def _dataset(docs: Sequence[dict[str, Any]], name: str, settings: argparse.Namespace, what: str) -> Any:
    """The harness's dataset (one `test` split); one line on stderr says what was drawn."""
    from datasets import Dataset, DatasetDict

    if not docs:
        raise ValueError(f"littlekit_{name}: no {what} to score (every one is in the model's training text?)")
    chosen = ", ".join(f"{key} {getattr(settings, key)}" for key in SETTINGS[name])
    print(f"littlekit_{name}: {len(docs):,} {what} ({chosen}) for {settings.model}", file=sys.stderr)
    return DatasetDict({"test": Dataset.from_list(list(docs))})


# --- CLEAR -----------------------------------------------------------------------------------


def clear_dataset(**metadata: Any) -> Any:
    """The excerpts `littlekit eval clear` scores: binned, unseen by the model, sampled per bin."""
    from littlekit.evals import clear as cl
    from littlekit.evals import registry

    settings = benchmark_settings("clear", metadata)
    frame = registry.get("clear").load(settings)
    frame = frame.assign(bin=cl.assign_bins(frame["bt_easiness"], cl.PAPER_EDGES, settings.fold_extremes))
    frame = cl.unseen_excerpts({"model": settings.model}, frame)[0]
    scored = cl.sample_per_bin(frame, settings.per_bin, settings.seed).reset_index(drop=True)
    labels = cl.bin_table(cl.PAPER_EDGES, settings.fold_extremes).set_index("bin")["label"]
    docs = [{"id": str(row.id), "text": row.text, "bin": int(row.bin), "label": labels[row.bin],
             "bt_easiness": float(row.bt_easiness), "bytes": len(row.text.encode("utf-8"))}
            for row in scored.itertuples()]  # fmt: skip
    return _dataset(docs, "clear", settings, "excerpts")


def clear_results(doc: Mapping[str, Any], results: Sequence[float]) -> dict[str, tuple[float, int]]:
    """(log-likelihood, bytes) for the overall BPB and the excerpt's bin's."""
    pair = (float(results[0]), int(doc["bytes"]))
    return {"bpb": pair, f"bpb_bin{doc['bin']}": pair}


# --- CoMTA -----------------------------------------------------------------------------------


def comta_dataset(**metadata: Any) -> Any:
    """CoMTA's student turns (`evals.comta.student_turns`) of the user's file (`comta`), each
    context opened with the model's first token as text."""
    from littlekit.evals import comta as co
    from littlekit.evals import registry

    settings = benchmark_settings("comta", metadata)
    registry.get("comta").check(settings)
    turns = co.student_turns(co.load_comta(settings.comta))
    opening = context_opening(_tokenizer(metadata))
    docs = [{"context": opening + row.context, "text": row.text, "bytes": len(row.text.encode("utf-8")),
             "math_level": row.math_level, "split": row.split, "dialogue": int(row.dialogue),
             "turn": int(row.turn)} for row in turns.itertuples()]  # fmt: skip
    return _dataset(docs, "comta", settings, "student turns")


def comta_results(doc: Mapping[str, Any], results: Sequence[tuple[float, bool]]) -> dict[str, Any]:
    """(log-likelihood, bytes) for the overall BPB, the turn's math category's and its split's."""
    pair = (float(results[0][0]), int(doc["bytes"]))
    return {"bpb": pair, metric_name("bpb", doc["math_level"]): pair, metric_name("bpb", doc["split"]): pair}


# --- curriculum ------------------------------------------------------------------------------


def _curriculum_dataset(fmt: str, metadata: Mapping[str, Any]) -> Any:
    """The held-out problems `littlekit eval curriculum --format FMT` answers, prompted alike."""
    from littlekit.evals import command
    from littlekit.evals import curriculum as ce

    settings = benchmark_settings("curriculum", metadata, format=fmt)
    draw = command.held_out(settings)[1]
    opening = generation_opening(_tokenizer(metadata))
    docs = [{"id": r["id"], "unit": r["unit"], "grade": r["grade"], "band": r["band"], "format": r["format"],
             "answer": r["answer"], "prompt": opening + ce.prompt(r)} for r in draw.unseen]  # fmt: skip
    return _dataset(docs, "curriculum", settings, f"held-out problems ({fmt})")


def curriculum_plain_dataset(**metadata: Any) -> Any:
    return _curriculum_dataset("plain", metadata)


def curriculum_reversed_dataset(**metadata: Any) -> Any:
    return _curriculum_dataset("reversed", metadata)


def curriculum_scratchpad_dataset(**metadata: Any) -> Any:
    return _curriculum_dataset("scratchpad", metadata)


def curriculum_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, float]:
    """Correct (1.0) or not, overall, in the problem's band and in its grade."""
    from littlekit.evals.curriculum import is_correct

    correct = float(is_correct(results[0], dict(doc)))
    return {"acc": correct, metric_name("acc", doc["band"]): correct,
            metric_name("acc_grade", doc["grade"]): correct}  # fmt: skip


# --- MathCAMPS -------------------------------------------------------------------------------


def mathcamps_dataset(**metadata: Any) -> Any:
    """The questions `littlekit eval mathcamps` asks (filtered, sampled per standard, unseen by
    the model), with their few-shot prompts."""
    from littlekit.evals import mathcamps as mc
    from littlekit.evals import registry
    from littlekit.evals.seen import seen_items

    settings = benchmark_settings("mathcamps", metadata)
    questions, everything = registry.get("mathcamps").load(settings)
    questions = questions[~seen_items({"model": settings.model}, questions["statement"]).mask]
    opening = generation_opening(_tokenizer(metadata))
    prompts = mc.question_prompts(questions, everything)
    docs = [{"id": row.id, "standard": row.standard, "grade": row.grade, "band": row.band,
             "answer": row.answer, "prompt": opening + text}
            for row, text in zip(questions.itertuples(), prompts, strict=True)]  # fmt: skip
    return _dataset(docs, "mathcamps", settings, "questions")


def mathcamps_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, float]:
    """Correct (1.0) or not by `curriculum.answers.grade`, overall, in its band and in its grade."""
    from littlekit.curriculum.answers import grade

    correct = float(grade("Answer:" + results[0], doc["answer"]))
    return {"acc": correct, metric_name("acc", doc["band"]): correct,
            metric_name("acc_grade", doc["grade"]): correct}  # fmt: skip
