"""In-context examples and method explanations (Section 4.3, C.5; Figure 9, Table 5).

The paper synthesizes three problems per standard with worked solutions and prompts its SFT'd
model with them in three styles, with a method explanation instead of shots, and with both:

- "direct": the problem alone (zero-shot);
- "prose": three shots whose solutions are natural prose ("We need to find the answer. First, ...
  Then, ..." and an `Answer:` line);
- "compact": three shots whose solutions are the steps as equations, one per line (here this is
  the curriculum's scratchpad, the very format the models were pretrained on);
- "qa": three shots with the question and the `Answer:` line only;
- "explanation": a method explanation of the unit, no shots;
- "prose+explanation": the explanation, then the prose shots.

Shots are three verified problems of the problem's own unit drawn from a run seed (`SHOT_SEED`)
no pretraining, post-training or evaluation set uses; the paper's explanations are written by an
LLM from the standard, ours (`explanation`) from the unit's title and standards with one more
derived worked example, concrete numbers and no letters, as the paper's prompt asks. Completions
are read and graded as `evals.curriculum` does (the first `Answer:` line).

**Prompts fit the trained context.** A nano model was pretrained on rows of `seq_len` tokens
(`training_context`); three prose shots and an explanation run far past that. With a token counter
and the context, `fitted_prompts` shortens a prompt until it and the room its answer needs (the
longest worked solution among its unit's shots, `answer_room`) fit: shots are dropped from the
first on, then the explanation's worked example, then the explanation; the problem itself is
never cut. Each prompt says how many shots it kept and whether it was shortened.

**Held out from the prompts.** `prompt_training_set` holds every shot and explanation example of
the units asked, and `sft_training_set` every curriculum problem chapter 16's SFT could have
drawn its rows from: the test problems are drawn apart from both, as from the pretraining text.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.paper import number

SHOT_SEED = 3  # the run seed shots and explanations come from (pretraining uses 0, SFT 1, GRPO 2)
N_SHOTS = 3
STYLES = ("prose", "compact", "qa")
CONDITIONS: dict[str, tuple[str | None, bool]] = {  # condition: (shot style or None, explanation?)
    "direct": (None, False),
    "prose": ("prose", False),
    "compact": ("compact", False),
    "qa": ("qa", False),
    "explanation": (None, True),
    "prose+explanation": ("prose", True),
}
PAPER_TABLE5_CONDITIONS = ("direct", "prose", "compact", "qa")
# SFT'd 5B LittleLearner on MathCAMPS: accuracy (%) and output length, from the paper's numbers
PAPER_TABLE5 = pd.DataFrame(
    {
        "condition": list(PAPER_TABLE5_CONDITIONS),
        "K5": [round(100 * number(f"icl_{c}_k5").value, 1) for c in PAPER_TABLE5_CONDITIONS],
        "BEYOND": [round(100 * number(f"icl_{c}_beyond").value, 1) for c in PAPER_TABLE5_CONDITIONS],
        "mean output (chars)": [int(number(f"icl_{c}_chars").value) for c in PAPER_TABLE5_CONDITIONS],
    }
)
PAPER_FINDING = (
    "Few-shot prompting with natural-prose shots slightly improves K-5 accuracy and not Beyond-K-5; "
    "other shot styles hurt though the model follows them (shorter outputs); explanations change "
    "nothing (Section 4.3, Figure 9, Table 5)."
)


def shot_records(unit: Any, n: int = N_SHOTS + 1, seed: int = SHOT_SEED) -> list[dict[str, Any]]:
    """`n` verified scratchpad problems of `unit` (the shots and, after them, the explanation's
    example), from a run seed no other set uses."""
    from littlekit.curriculum.generate import generate_unit

    return list(generate_unit(unit, n, seed=seed, register="compact", fmt="scratchpad"))


def prose_solution(record: dict[str, Any]) -> str:
    """The steps as one line of prose and the answer line: "We need to find the answer. First,
    9 × 10 = 90. Answer: 90" (the paper's hand-written style)."""
    sentences = ["We need to find the answer."]
    for i, step in enumerate(record["steps"]):
        sentences.append(f"{'First' if i == 0 else 'Then'}, {step}.")
    return " ".join(sentences) + f"\nAnswer: {record['answer']}"


def render_shot(record: dict[str, Any], style: str) -> str:
    """One worked example in `style` (see STYLES), starting with its statement."""
    if style == "prose":
        return f"{record['statement']}\n{prose_solution(record)}"
    if style == "compact":
        steps = "".join(f"{step}\n" for step in record["steps"])
        return f"{record['statement']}\n{steps}Answer: {record['answer']}"
    if style == "qa":
        return f"{record['statement']}\nAnswer: {record['answer']}"
    raise ValueError(f"unknown shot style {style!r}; choose from {', '.join(STYLES)}")


def explanation(unit: Any, example: dict[str, Any] | None) -> str:
    """A method explanation for `unit`: what the problems ask, how to work them, and one worked
    example with concrete numbers (none when `example` is None: the shortened explanation)."""
    text = (
        f"Method for this kind of problem ({unit.title}, {', '.join(unit.ccss)}): work it one step at a "
        f"time, one computation per line, then write the answer on a line that starts with Answer."
    )
    if example is None:
        return text
    steps = "; then ".join(example["steps"]) if example["steps"] else "read the answer off the question"
    return text + f' For example, for "{example["statement"]}": {steps}; the answer is {example["answer"]}.'


def icl_prompt(record: dict[str, Any], shots: Sequence[dict[str, Any]], style: str | None,
               method: str | None = None) -> str:
    """The prompt of one condition: the explanation (if any), the shots (if any) and the problem's
    own prompt (`evals.curriculum.prompt`), separated by blank lines."""
    from littlekit.evals.curriculum import prompt

    parts = [method] if method else []
    if style is not None:
        parts += [render_shot(shot, style) for shot in shots]
    return "\n\n".join([*parts, prompt(record)]) if parts else prompt(record)


def condition_prompts(records: Sequence[dict[str, Any]], condition: str) -> list[str]:
    """Every record's prompt under `condition` (see CONDITIONS), shots from its own unit, in full."""
    return [fitted["prompt"] for fitted in fitted_prompts(records, condition)]


def solution_text(record: dict[str, Any]) -> str:
    """What a model writes after a scratchpad record's prompt: its steps and the answer line."""
    from littlekit.evals.curriculum import prompt

    return record["text"][len(prompt(record)) :]


def answer_room(drawn: Sequence[dict[str, Any]], count: Callable[[str], int]) -> int:
    """The tokens a unit's answer needs: the longest worked solution among its drawn shots (the
    test problem's own solution is not looked at)."""
    return max(count(solution_text(record)) for record in drawn)


def fitted_prompts(
    records: Sequence[dict[str, Any]],
    condition: str,
    count: Callable[[str], int] | None = None,
    context: int | None = None,
) -> list[dict[str, Any]]:
    """Every record's prompt under `condition`, as {prompt, prompt_tokens, room, shots, explanation,
    shortened}. With `count` (text -> tokens) and `context` (`training_context`), a prompt whose
    tokens plus the unit's `answer_room` exceed the context is shortened (see the module): the
    fullest of full explanation with N_SHOTS..0 shots, the explanation without its example, no
    explanation, that fits; a direct prompt that does not fit stays as it is."""
    from littlekit.curriculum.registry import UNITS

    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    if (count is None) != (context is None):
        raise ValueError("give both count and context to fit prompts, or neither")
    style, with_method = CONDITIONS[condition]
    options = shortening_order(N_SHOTS if style else 0, with_method)
    units: dict[str, tuple[list[dict[str, Any]], dict[str, str], int | None]] = {}
    fitted = []
    for record in records:
        if record["unit"] not in units:
            unit = UNITS[record["unit"]]
            drawn = shot_records(unit)
            methods = {"worked": explanation(unit, drawn[N_SHOTS]), "plain": explanation(unit, None)}
            units[record["unit"]] = (drawn, methods, None if count is None else answer_room(drawn, count))
        drawn, methods, room = units[record["unit"]]
        for kept, level in options:
            shots = drawn[N_SHOTS - kept : N_SHOTS]  # dropped from the first on
            text = icl_prompt(record, shots, style if kept else None, methods.get(level))
            tokens = None if count is None else count(text)
            if tokens is None or context is None or room is None or tokens + room <= context:
                break
        fitted.append({"prompt": text, "prompt_tokens": tokens, "room": room, "shots": kept,
                       "explanation": level, "shortened": (kept, level) != options[0]})  # fmt: skip
    return fitted


def shortening_order(shots: int, with_method: bool) -> list[tuple[int, str]]:
    """(shots kept, explanation: "worked", "plain" or "none") from the full prompt to the barest:
    shots dropped first, then the explanation's worked example, then the explanation."""
    first = "worked" if with_method else "none"
    return [(n, first) for n in range(shots, -1, -1)] + ([(0, "plain"), (0, "none")] if with_method else [])


def training_context(model: str | os.PathLike) -> int:
    """The sequence length a model folder was trained on: `seq_len` of its `littlekit train` config
    (trainer_state.json, or train_config.json beside the folder or above it), else config.json's
    max_position_embeddings (the most its position encoding was set up for)."""
    folder = Path(model)
    state = folder / "trainer_state.json"
    if state.is_file():
        config = json.loads(state.read_text(encoding="utf-8")).get("config")
        if isinstance(config, dict) and isinstance(config.get("seq_len"), int):
            return config["seq_len"]
    for where in (folder, folder.parent):
        train_config = where / "train_config.json"
        if train_config.is_file():
            return int(json.loads(train_config.read_text(encoding="utf-8"))["seq_len"])
    config_file = folder / "config.json"
    if config_file.is_file():
        positions = json.loads(config_file.read_text(encoding="utf-8")).get("max_position_embeddings")
        if isinstance(positions, int):
            return positions
    raise FileNotFoundError(f"{folder}: no training config or config.json says its sequence length")


def prompt_training_set(units: Sequence[Any]) -> Any:
    """Every shot and explanation example of `units` (an `evals.curriculum.TrainingSet`): a test
    problem equal to one would have its answer in its own prompt."""
    return _problems_set([record for unit in units for record in shot_records(unit)])


def sft_training_set(seed: int, per_unit: int = 40) -> Any:
    """Every curriculum problem chapter 16's SFT rows are drawn from, for either model, in both
    registers (`posttraining.sft_jobs` at run seed `seed` with its default settings): a superset
    of the rows, so the test problems drawn apart from it are apart from the SFT rows."""
    from littlekit.experiments import posttraining as pt

    config = pt.PostTrainingConfig(seed=seed)
    return _problems_set(
        pt.curriculum_records("all", per_unit, config.seed + pt.SFT_SEED_OFFSET, config.sft_registers)
    )


def _problems_set(records: Sequence[dict[str, Any]]) -> Any:
    """Curriculum records as an `evals.curriculum.TrainingSet`: their statements and seeds."""
    from littlekit.evals.curriculum import TrainingSet

    seeds = TrainingSet(seeds=frozenset(record["seed"] for record in records))
    return TrainingSet.of_texts(record["statement"] for record in records) | seeds


@dataclass(frozen=True)
class IclJob:
    """Every condition on one checkpoint (what one process runs)."""

    label: str
    path: str
    records: tuple[dict[str, Any], ...]
    conditions: tuple[str, ...] = tuple(CONDITIONS)
    context: int | None = None  # the trained sequence length prompts are fitted to (None: in full)


def run_icl(job: IclJob) -> pd.DataFrame:
    """`evals.curriculum.evaluate` rows per condition (greedy), with `model`, `condition`, the
    prompt's length in tokens, what fitting it to `job.context` kept (`fitted_prompts`: room,
    shots, explanation, shortened) and the completion's length in characters."""
    from littlekit.evals.curriculum import evaluate, model_completer
    from littlekit.evals.models import load_causal_lm
    from littlekit.experiments.posttraining import quiet_trainers

    quiet_trainers()
    model, tokenizer = load_causal_lm(job.path)
    complete = model_completer(model, tokenizer, "scratchpad")
    parts = []

    def count(text: str) -> int:
        return len(tokenizer(text)["input_ids"])

    for condition in job.conditions:
        fitted = fitted_prompts(job.records, condition, count if job.context else None, job.context)
        rows = evaluate(job.records, complete, prompts=[f["prompt"] for f in fitted])
        rows["prompt_tokens"] = [count(f["prompt"]) for f in fitted]
        for column in ("room", "shots", "explanation", "shortened"):
            rows[column] = [f[column] for f in fitted]
        rows["output_chars"] = [len(c[0]) for c in rows["completions"]]
        parts.append(rows.assign(model=job.label, condition=condition))
    return pd.concat(parts, ignore_index=True)


def run_icl_side_by_side(jobs: Sequence[IclJob], processes: int = 2) -> pd.DataFrame:
    """`run_icl` for each job in parallel one-thread processes, the rows stacked."""
    from littlekit.processes import side_by_side

    return pd.concat(side_by_side(run_icl, list(jobs), processes), ignore_index=True)


def table5(results: pd.DataFrame) -> pd.DataFrame:
    """Per model and condition: accuracy (%) by band and mean output length in characters."""
    accuracy = (
        results.assign(correct=results["c"] / results["n"] * 100)
        .pivot_table(index=["model", "condition"], columns="band", values="correct", aggfunc="mean")
        .reset_index()
    )
    length = results.groupby(["model", "condition"], as_index=False)["output_chars"].mean()
    table = accuracy.merge(
        length.rename(columns={"output_chars": "mean output (chars)"}), on=["model", "condition"]
    )
    order = {c: i for i, c in enumerate(CONDITIONS)}
    return table.sort_values(
        ["model", "condition"], key=lambda s: s.map(order) if s.name == "condition" else s
    )
