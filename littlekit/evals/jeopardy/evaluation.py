"""Scoring a causal LM on the clues: greedy answers graded (pass@1) and the gold response's
bits per byte given a few-shot prompt."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from littlekit.argtypes import UsageError, positive_int
from littlekit.evals.answers import first_answer, grade_response, normalise_answer
from littlekit.evals.benchmark import Benchmark, count_or_all, file_option, option
from littlekit.evals.jeopardy.labels import SPLITS, attach_split, sample_per_split
from littlekit.evals.jeopardy.loaders import load_authored, load_jeopardy
from littlekit.evals.jeopardy.selection import select_science
from littlekit.io import sha256_file

# Fixed few-shot examples (written for this project; not in the clue set).
SHOTS: tuple[tuple[str, str, str], ...] = (
    ("ANIMALS", "This large gray animal uses its long trunk to drink and to pick up food", "an elephant"),
    ("WEATHER", "Water falling from clouds as drops is called this", "rain"),
    ("THE HUMAN BODY", "This organ in your chest pumps blood around your body", "the heart"),
)
PROMPT_HEADER = "Jeopardy! science clues and their correct responses.\n\n"


def format_prompt(category: str, clue: str, shots: Sequence[tuple[str, str, str]] = SHOTS) -> str:
    """A few-shot base-model prompt ending in "Response:"; the answer follows after a space."""
    blocks = [f"Category: {c}\nClue: {q}\nResponse: {r}\n\n" for c, q, r in shots]
    return PROMPT_HEADER + "".join(blocks) + f"Category: {category}\nClue: {clue}\nResponse:"


def evaluate_generation(
    model: Any,
    tokenizer: Any,
    clues: pd.DataFrame,
    max_new_tokens: int = 16,
    batch_size: int = 16,
    shots: Sequence[tuple[str, str, str]] = SHOTS,
    require_text: bool = True,
    plain: bool = False,
) -> pd.DataFrame:
    """Greedy answers (pass@1) for every clue the model's training text does not hold
    (`unseen_clues`): the clue frame plus `completion`, `empty` (no
    non-whitespace character), `ungradeable` (no word left once the answer is normalised: empty,
    or punctuation only such as ":") and `correct`.

    The answer is the completion's first line. With `require_text` (the default) a newline or EOS can
    end it only after its first non-whitespace token (`generate`'s answer-first rule): the nano models'
    first choice after "Response:" is mostly a newline, which under the plain rule leaves an empty,
    ungradeable answer. `plain=True` also runs the plain rule (stop at the first newline, even before
    any text) and adds `plain_completion`, `plain_empty` and `plain_correct`, so a chapter can show
    what the rule changed; rows whose greedy first token was not a newline get the same answer twice.
    """
    from littlekit.evals.generate import greedy

    clues = unseen_clues({"model": model}, clues)[0]
    prompts = [format_prompt(c, q, shots) for c, q in zip(clues["category"], clues["clue"], strict=True)]
    runs = [("", require_text)] + ([("plain_", False)] if plain else [])
    columns: dict[str, list] = {}
    for prefix, rule in runs:
        completions = greedy(model, tokenizer, prompts, max_new_tokens, batch_size, stop=("\n",),
                             require_text=rule)
        columns[prefix + "completion"] = completions
        columns[prefix + "empty"] = [not c.strip() for c in completions]
        if not prefix:
            columns["ungradeable"] = [not normalise_answer(first_answer(c)) for c in completions]
        columns[prefix + "correct"] = [
            grade_response(c, r) for c, r in zip(completions, clues["response"], strict=True)
        ]
    return clues.assign(**columns)


def unseen_clues(models: Any, clues: pd.DataFrame) -> tuple[pd.DataFrame, Any]:
    """(the clues no model's training text holds, `evals.seen.SeenItems` saying which were seen and
    by whom): both evaluations score only the first, so held out means unseen; a chapter calls it
    with every model first, so that all of them answer the same clues."""
    from littlekit.evals.seen import seen_items

    seen = seen_items(models, clues["clue"].tolist())
    return clues[~seen.mask], seen


# the flags `empty_table` counts, and the prefix of their share and interval columns
EMPTY_FLAGS = {"empty": "", "ungradeable": "ungradeable_", "plain_empty": "plain_"}


def empty_table(results: pd.DataFrame, by: Sequence[str] = ("model", "split")) -> pd.DataFrame:
    """Per group: `n` clues, `empty` completions, their `share` and exact 95% (Clopper-Pearson)
    interval `ci_low, ci_high`; the same for `ungradeable` answers (`ungradeable_share`, ...) and,
    from `evaluate_generation(plain=True)`, for the plain rule (`plain_empty, plain_share,
    plain_ci_low, plain_ci_high`), each where the results have the column."""
    from littlekit.stats import clopper_pearson

    flags = [f for f in EMPTY_FLAGS if f in results.columns]
    table = results.groupby(list(by), sort=False)[flags].agg(["size", "sum"])
    out = table[flags[0]]["size"].rename("n").reset_index()
    for flag in flags:
        prefix = EMPTY_FLAGS[flag]
        counts = table[flag]["sum"].astype(int).to_numpy()
        out[flag] = counts
        out[prefix + "share"] = counts / out["n"]
        bounds = [clopper_pearson(int(k), int(n)) for k, n in zip(counts, out["n"], strict=True)]
        out[prefix + "ci_low"] = [b[0] for b in bounds]
        out[prefix + "ci_high"] = [b[1] for b in bounds]
    return out


def pass_at_1(results: pd.DataFrame, by: Sequence[str] = ("model", "split")) -> pd.DataFrame:
    """Accuracy per group with exact 95% (Clopper-Pearson) intervals: `n, correct, accuracy, ci_low,
    ci_high` (0 of n correct still has an upper bound above 0)."""
    from littlekit.stats import clopper_pearson

    table = results.groupby(list(by), sort=False)["correct"].agg(n="size", correct="sum").reset_index()
    table["correct"] = table["correct"].astype(int)
    table["accuracy"] = table["correct"] / table["n"]
    bounds = [clopper_pearson(int(k), int(n)) for k, n in zip(table["correct"], table["n"], strict=True)]
    table["ci_low"] = [b[0] for b in bounds]
    table["ci_high"] = [b[1] for b in bounds]
    return table


def evaluate_likelihood(
    model: Any,
    tokenizer: Any,
    clues: pd.DataFrame,
    batch_size: int = 16,
    shots: Sequence[tuple[str, str, str]] = SHOTS,
) -> pd.DataFrame:
    """Per clue the model's training text does not hold (`unseen_clues`): nats, bytes and tokens of
    " <gold response>" given the few-shot prompt.

    `logprob` is the response's total log-probability (nats, negative); bits per byte per split
    come from `likelihood_table`, summed over clues as `corpus_bpb` does.
    """
    clues = unseen_clues({"model": model}, clues)[0]
    from littlekit.evals.bpb import corpus_bpb

    pairs = [
        (format_prompt(c, q, shots), " " + r)
        for c, q, r in zip(clues["category"], clues["clue"], clues["response"], strict=True)
    ]
    result = corpus_bpb(model, tokenizer, pairs, batch_size=batch_size, per_doc=True)
    docs = result["per_doc"]
    return clues.assign(
        nats=[d["nats"] for d in docs],
        bytes=[d["bytes"] for d in docs],
        tokens=[d["tokens"] for d in docs],
        logprob=[-d["nats"] for d in docs],
    )


def likelihood_table(scored: pd.DataFrame, by: Sequence[str] = ("model", "split")) -> pd.DataFrame:
    """Per group: clues, corpus bits per byte of the gold responses, mean log-prob per response and token."""
    import math

    table = (
        scored.groupby(list(by), sort=False)
        .agg(
            n=("nats", "size"),
            nats=("nats", "sum"),
            bytes=("bytes", "sum"),
            tokens=("tokens", "sum"),
            mean_logprob=("logprob", "mean"),
        )
        .reset_index()
    )
    table["bpb"] = table["nats"] / (math.log(2) * table["bytes"])
    table["logprob_per_token"] = -table["nats"] / table["tokens"]
    return table


# to record which Jeopardy file a run read
file_sha256 = sha256_file


# --- `littlekit eval jeopardy` (the interface: littlekit.evals.benchmark) ------------------------

PROG = "littlekit eval jeopardy"


def _check_benchmark(args: Any) -> None:
    if (args.clues is None) != (args.labels is None):
        raise UsageError(
            "--clues and --labels go together: a Jeopardy file and the NGSS labels of its "
            "clues (chapter 11's judge writes them); neither: the project-written set",
            PROG,
        )
    file_option(args.clues, "--clues", PROG)
    file_option(args.labels, "--labels", PROG)


def _load_benchmark(args: Any) -> pd.DataFrame:
    """The science clues with their split (K-5, Beyond K-5), at most --per-split of each."""
    from littlekit.judge.labels import read_labels

    if args.clues is None:
        frame, labels = load_authored(args.data_root)
    else:
        frame, labels = load_jeopardy(args.clues, on_error="skip")[0], read_labels(args.labels)
    clues, _ = attach_split(select_science(frame)[0], labels)
    return clues if args.per_split is None else sample_per_split(clues, args.per_split, args.seed)


def _score_benchmark(model: Any, tokenizer: Any, clues: pd.DataFrame, args: Any) -> pd.DataFrame:
    """Per clue the model did not see: its greedy answer graded and the gold response's nats."""
    answers = evaluate_generation(model, tokenizer, clues, args.max_new_tokens, args.batch_size)
    likelihood = evaluate_likelihood(model, tokenizer, clues, args.batch_size)
    columns = ["nats", "bytes", "tokens", "logprob"]  # the same unseen clues, in the same order
    return answers.assign(**{c: likelihood[c].to_numpy() for c in columns})


def split_table(scored: pd.DataFrame, args: Any) -> pd.DataFrame:
    """Per split: pass@1 with its exact interval, and the gold responses' bits per byte."""
    likelihood = likelihood_table(scored, by=("split",))[["split", "bpb", "logprob_per_token"]]
    table = pass_at_1(scored, by=("split",)).merge(likelihood, on="split")
    order = {split: i for i, split in enumerate(SPLITS)}
    return table.sort_values("split", key=lambda s: s.map(order)).reset_index(drop=True)


BENCHMARK = Benchmark(
    name="jeopardy",
    measures="pass@1 and gold-response bits per byte on Jeopardy! science clues by NGSS split",
    paper="the paper's Figure 5",
    load=_load_benchmark,
    score=_score_benchmark,
    table=split_table,
    options=(
        option(
            "--clues",
            type=Path,
            help="a Jeopardy .tsv/.json/.csv (default: the project-written data/science_clues)",
        ),
        option("--labels", type=Path, help="the NGSS labels of --clues' clues (the judge's label format)"),
        option(
            "--per-split",
            type=count_or_all,
            default=None,
            help="clues per split, a seeded sample, or 'all' (default all)",
        ),
        option("--max-new-tokens", type=positive_int, default=16, help="tokens per answer (default 16)"),
    ),
    check=_check_benchmark,
)
