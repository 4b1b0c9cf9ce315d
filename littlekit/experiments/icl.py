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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

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
PAPER_TABLE5 = pd.DataFrame(  # SFT'd 5B LittleLearner on MathCAMPS: accuracy (%) and output length
    {
        "condition": ["direct", "prose", "compact", "qa"],
        "K5": [34.0, 36.8, 17.0, 9.2],
        "BEYOND": [6.0, 5.9, 1.6, 0.2],
        "mean output (chars)": [352, 374, 99, 41],
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


def explanation(unit: Any, example: dict[str, Any]) -> str:
    """A method explanation for `unit`: what the problems ask, how to work them, and one worked
    example with concrete numbers."""
    steps = "; then ".join(example["steps"]) if example["steps"] else "read the answer off the question"
    return (
        f"Method for this kind of problem ({unit.title}, {', '.join(unit.ccss)}): work it one step at a "
        f"time, one computation per line, then write the answer on a line that starts with Answer. "
        f'For example, for "{example["statement"]}": {steps}; the answer is {example["answer"]}.'
    )


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
    """Every record's prompt under `condition` (see CONDITIONS), shots from its own unit."""
    from littlekit.curriculum.units import UNITS

    if condition not in CONDITIONS:
        raise ValueError(f"unknown condition {condition!r}; choose from {', '.join(CONDITIONS)}")
    style, with_method = CONDITIONS[condition]
    cache: dict[str, tuple[list[dict[str, Any]], str]] = {}
    prompts = []
    for record in records:
        if record["unit"] not in cache:
            drawn = shot_records(UNITS[record["unit"]])
            cache[record["unit"]] = (drawn[:N_SHOTS], explanation(UNITS[record["unit"]], drawn[N_SHOTS]))
        shots, method = cache[record["unit"]]
        prompts.append(icl_prompt(record, shots, style, method if with_method else None))
    return prompts


@dataclass(frozen=True)
class IclJob:
    """Every condition on one checkpoint (what one process runs)."""

    label: str
    path: str
    records: tuple[dict[str, Any], ...]
    conditions: tuple[str, ...] = tuple(CONDITIONS)


def run_icl(job: IclJob) -> pd.DataFrame:
    """`evals.curriculum.evaluate` rows per condition (greedy), with `model`, `condition`, the
    prompt's length in tokens and the completion's in characters."""
    from littlekit.evals.curriculum import evaluate, model_completer
    from littlekit.evals.models import load_causal_lm
    from littlekit.experiments.posttraining import quiet_trainers

    quiet_trainers()
    model, tokenizer = load_causal_lm(job.path)
    complete = model_completer(model, tokenizer, "scratchpad")
    parts = []
    for condition in job.conditions:
        prompts = condition_prompts(job.records, condition)
        rows = evaluate(job.records, complete, prompts=prompts)
        rows["prompt_tokens"] = [len(tokenizer(p)["input_ids"]) for p in prompts]
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
