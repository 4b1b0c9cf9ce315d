"""MathCAMPS (Mishra, Poesia et al., 2024) as the paper evaluates it (Section 3.3.2, C.2).

- `load`: the 9,607 problems with their grade (from the CCSS code: "K.OA.A.4" -> K,
  "7.NS.A.1-decimal" -> 7) and band ("K-5" or "Beyond K-5").
- `apply_filters`: the paper's three filters (C.2.1), in its order, with what each removes:
  standards with fewer than 30 unique gold answers (counted over all of a standard's problems),
  questions whose gold answer appears verbatim in the question (as a whole number: "7" inside
  "76" does not count, since the grader would not read it as 7), and standard 6.EE.B.7.
- `prompt`: a base-model few-shot prompt ending in "Answer:"; `evaluate` samples completions with
  `evals.generate`, grades each with `curriculum.answers.grade` and returns per question n and c,
  from which `evals.passk` gives pass@k per grade, band or standard.
- `LEARNING_PATHS`: Figure 15's two CCSS prerequisite chains; `readability_table`: the K-5 vs
  Beyond readability parity check of C.2.1.

Follow-up questions (MathCAMPS' "incremental" and "counterfactual" follow-ups) refer to an earlier
problem; `prompt` gives them the original problem and its gold answer as a solved example first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pandas as pd

from littlekit import paper
from littlekit.argtypes import UsageError, non_negative, positive_int, top_p
from littlekit.curriculum.answers import answer_in_question
from littlekit.curriculum.answers import grade as grade_answer
from littlekit.databuild.corpora import Root, load_mathcamps
from littlekit.evals.benchmark import Benchmark, count_or_all, option
from littlekit.evals.generate import BACKENDS, generate
from littlekit.evals.passk import mean_pass_at_k, pass_at_k_curve
from littlekit.grades import beyond_label, grade_to_band, normalise_grade
from littlekit.readability import metrics_frame

MIN_UNIQUE_ANSWERS = 30
EXCLUDED_STANDARDS: tuple[str, ...] = ("6.EE.B.7",)
GRADE_ORDER: tuple[str, ...] = ("K", "1", "2", "3", "4", "5", "6", "7", "8")
ORIGINAL = "original-problem"

# Figure 15: each standard is a prerequisite of those to its right (labels as in the figure).
LEARNING_PATHS: dict[str, dict[str, str]] = {
    "division": {
        "3.OA.C.7": "Mult/div fluency (within 100)",
        "4.NBT.B.6": "Multi-digit ÷ (1-digit divisor)",
        "5.NBT.B.6": "Multi-digit ÷ (2-digit divisor)",
        "6.NS.B.3": "Fluent decimal arithmetic",
        "6.NS.B.2": "Fluent multi-digit ÷ (std alg.)",
        "7.NS.A.3-decimal": "Rational decimal word problems",
        "7.NS.A.1-decimal": "Rational decimal add/sub",
    },
    "division / multiplication": {
        "3.OA.C.7": "Mult/div fluency (within 100)",
        "4.NBT.B.5": "Multi-digit × (by 1-digit)",
        "4.NBT.B.6": "Multi-digit ÷ (1-digit divisor)",
        "5.NBT.B.5": "Fluent multi-digit × (std alg.)",
        "5.NBT.B.6": "Multi-digit ÷ (2-digit divisor)",
    },
}

# Written for this project (not MathCAMPS problems), one per answer form: integer, fraction,
# decimal; they show a base model the "Question: ... / Answer: <value>" format.
FEW_SHOT: tuple[tuple[str, str], ...] = (
    ("Sam has 3 red balls and 4 blue balls. How many balls does Sam have?", "7"),
    ("What is 1/4 + 2/4?", "3/4"),
    ("A pencil costs $0.25. How much do 3 pencils cost?", "0.75"),
)
STOP: tuple[str, ...] = ("\n\n", "\nQuestion:")


def grade_of_standard(standard: str) -> str:
    """The school grade of a CCSS code: 'K.OA.A.4' -> 'K', '7.NS.A.1-decimal' -> '7'."""
    head = standard.split(".", 1)[0]
    try:
        return normalise_grade(head)
    except ValueError:
        raise ValueError(f"not a CCSS standard code with a grade: {standard!r}") from None


def band_of_grade(grade: str) -> str:
    """'K-5' or 'Beyond K-5'."""
    return beyond_label(grade_to_band(grade))


def load(root: Root = None) -> pd.DataFrame:
    """MathCAMPS with `grade` and `band` columns added (rows in file order)."""
    frame = load_mathcamps(root)
    for i, row in frame.iterrows():
        for field in ("id", "standard", "statement", "answer"):
            if not isinstance(row[field], str) or not row[field].strip():
                raise ValueError(f"mathcamps.jsonl line {i + 1}: field {field!r} is empty or not a string")
    frame = frame.copy()
    frame["grade"] = [grade_of_standard(s) for s in frame["standard"]]
    frame["band"] = [band_of_grade(g) for g in frame["grade"]]
    return frame


def apply_filters(
    frame: pd.DataFrame,
    min_unique_answers: int = MIN_UNIQUE_ANSWERS,
    excluded_standards: Sequence[str] = EXCLUDED_STANDARDS,
    whole_number: bool = True,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(kept questions, counts table): the paper's three filters in order; the table has one row per
    filter (removed questions, removed standards, what remains) so removed + remaining add up."""
    unique = frame.groupby("standard")["answer"].nunique()
    low = sorted(unique[unique < min_unique_answers].index)
    steps = [
        (f"standards with < {min_unique_answers} unique gold answers", lambda f: f["standard"].isin(low)),
        (
            "gold answer verbatim in the question",
            lambda f: pd.Series(
                [
                    answer_in_question(s, a, whole_number)
                    for s, a in zip(f["statement"], f["answer"], strict=True)
                ],
                index=f.index,
                dtype=bool,
            ),
        ),
        (f"standard {', '.join(excluded_standards)}", lambda f: f["standard"].isin(list(excluded_standards))),
    ]
    rows = [
        {
            "step": "MathCAMPS as released",
            "removed": 0,
            "remaining": len(frame),
            "standards_remaining": frame["standard"].nunique(),
            "removed_standards": "",
        }
    ]
    kept = frame
    for name, removes in steps:
        mask = removes(kept)
        gone = sorted(set(kept.loc[mask, "standard"]) - set(kept.loc[~mask, "standard"]))
        kept = kept.loc[~mask]
        rows.append(
            {
                "step": name,
                "removed": int(mask.sum()),
                "remaining": len(kept),
                "standards_remaining": kept["standard"].nunique(),
                "removed_standards": ", ".join(gone),
            }
        )
    return kept, pd.DataFrame(rows)


def sample_per_standard(frame: pd.DataFrame, per_standard: int | None, seed: int = 0) -> pd.DataFrame:
    """At most `per_standard` questions of each standard (all when None), a seeded random choice."""
    if per_standard is None:
        return frame
    parts = [
        group.sample(min(per_standard, len(group)), random_state=seed)
        for _, group in frame.groupby("standard")
    ]
    return pd.concat(parts).loc[lambda f: f.index.sort_values()]


def clean_answer(answer: str) -> str:
    """A gold answer as a person writes it: MathCAMPS stores decimals with 15 significant digits
    ("27.3000000000000" -> "27.3", "87.0000000000000" -> "87"); other answers are unchanged."""
    if re.fullmatch(r"-?\d+\.\d+", answer.strip()):
        return answer.strip().rstrip("0").rstrip(".")
    return answer.strip()


def prompt(question: str, context: Sequence[tuple[str, str]] = ()) -> str:
    """Few-shot base-model prompt: the examples, any solved context (question, answer), then the
    question, ending in "Answer:"."""
    shots = [*FEW_SHOT, *context]
    body = "".join(f"Question: {q.strip()}\nAnswer: {a}\n\n" for q, a in shots)
    return f"{body}Question: {question.strip()}\nAnswer:"


def question_prompts(questions: pd.DataFrame, everything: pd.DataFrame) -> list[str]:
    """The prompt of each question; a follow-up gets its original problem and gold answer first."""
    by_id = everything.set_index("id")
    prompts = []
    for _, row in questions.iterrows():
        context: list[tuple[str, str]] = []
        parent = row.get("followup_to")
        if isinstance(parent, str) and parent:
            if parent not in by_id.index:
                raise ValueError(f"question {row['id']}: followup_to {parent!r} is not a MathCAMPS id")
            context.append((by_id.at[parent, "statement"], by_id.at[parent, "answer"]))
        prompts.append(prompt(row["statement"], context))
    return prompts


def evaluate(
    model: Any,
    tokenizer: Any,
    questions: pd.DataFrame,
    everything: pd.DataFrame | None = None,
    n_samples: int = 16,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 24,
    batch_size: int = 64,
    seed: int = 0,
    backend: str = "auto",
    keep_completions: int = 1,
) -> pd.DataFrame:
    """One row per question: id, standard, grade, band, answer, n, c (correct samples), and the first
    `keep_completions` completions. Greedy (one sample) when temperature is 0."""
    everything = questions if everything is None else everything
    prompts = question_prompts(questions, everything)
    completions = generate(
        model,
        tokenizer,
        prompts,
        n_samples=n_samples,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        batch_size=batch_size,
        seed=seed,
        stop=STOP,
        backend=backend,
    )
    out = questions[["id", "standard", "grade", "band", "answer"]].reset_index(drop=True).copy()
    out["n"] = [len(c) for c in completions]
    out["c"] = [
        sum(grade_answer("Answer:" + text, gold) for text in texts)
        for texts, gold in zip(completions, out["answer"], strict=True)
    ]
    out["completions"] = [texts[:keep_completions] for texts in completions]
    return out


def _grouped(results: pd.DataFrame, by: str | list[str], k: int, **ci: Any) -> pd.DataFrame:
    rows = []
    for key, group in results.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        names = by if isinstance(by, list) else [by]
        rows.append({**dict(zip(names, key, strict=True)), **mean_pass_at_k(group["n"], group["c"], k, **ci)})
    return pd.DataFrame(rows)


def accuracy_by(results: pd.DataFrame, by: str | list[str] = "grade", k: int = 1, **ci: Any) -> pd.DataFrame:
    """pass@k (mean over questions) with its 95% CI per group (e.g. grade, band, standard, and a
    `model` column when results of several models are stacked), grades in K..8 order."""
    table = _grouped(results, by, k, **ci)
    if "grade" in table:
        table["grade"] = pd.Categorical(table["grade"], categories=list(GRADE_ORDER), ordered=True)
    order = [c for c in ("model", "grade", "band", "standard") if c in table]
    return table.sort_values(order).reset_index(drop=True)


def curves_by(
    results: pd.DataFrame, by: str | list[str] = "grade", ks: Sequence[int] | None = None, **ci: Any
) -> pd.DataFrame:
    """pass@k curves over k per group: the columns of `by`, then k, pass_at_k, low, high, problems."""
    names = by if isinstance(by, list) else [by]
    parts = []
    for key, group in results.groupby(names, sort=False):
        curve = pass_at_k_curve(group["n"], group["c"], ks, **ci)
        for name, value in zip(names, key if isinstance(key, tuple) else (key,), strict=True):
            curve.insert(0, name, value)
        parts.append(curve)
    return pd.concat(parts, ignore_index=True)


def learning_path_table(results: pd.DataFrame, path: str, k: int = 1, **ci: Any) -> pd.DataFrame:
    """pass@k per standard along a Figure 15 path, in prerequisite order (columns `position`,
    `standard`, `label`, plus `model` when present); a standard with no results is missing."""
    if path not in LEARNING_PATHS:
        raise ValueError(f"unknown learning path {path!r}; expected one of {list(LEARNING_PATHS)}")
    standards = LEARNING_PATHS[path]
    chosen = results[results["standard"].isin(list(standards))]
    by = ["model", "standard"] if "model" in results else "standard"
    table = _grouped(chosen, by, k, **ci)
    table["position"] = [list(standards).index(s) for s in table["standard"]]
    table["label"] = [standards[s] for s in table["standard"]]
    return table.sort_values([c for c in ("model", "position") if c in table]).reset_index(drop=True)


READABILITY_ROWS = {
    "flesch_kincaid": "Flesch–Kincaid grade",
    "sentence_length": "Mean sentence length (words)",
    "word_length": "Mean word length (characters)",
    "n_tokens": "Mean question length (words)",
}
PAPER_READABILITY = pd.DataFrame(
    {
        band: [
            paper.number(f"mathcamps_{name}_{suffix}").value for name in ("fk", "sentence", "word", "words")
        ]
        for band, suffix in (("K-5", "k5"), ("Beyond K-5", "beyond"))
    },
    index=list(READABILITY_ROWS.values()),
)


def readability_table(questions: pd.DataFrame) -> pd.DataFrame:
    """Mean readability of the K-5 and the Beyond-K-5 questions (C.2.1's parity table), one row per
    metric, one column per band, plus the question counts."""
    metrics = metrics_frame(questions["statement"], index=questions.index)
    metrics["band"] = questions["band"].to_numpy()
    means = metrics.groupby("band")[list(READABILITY_ROWS)].mean().T
    means.index = [READABILITY_ROWS[m] for m in means.index]
    means = means.reindex(columns=[b for b in ("K-5", "Beyond K-5") if b in means.columns])
    counts = questions["band"].value_counts()
    means.loc["Questions"] = [counts.get(b, 0) for b in means.columns]
    return means


# --- `littlekit eval mathcamps` (the interface: littlekit.evals.benchmark) -----------------------


def _check_benchmark(args: Any) -> None:
    if args.samples > 1 and args.temperature == 0:
        raise UsageError("--samples > 1 needs --temperature > 0 (greedy samples are all the same)",
                         "littlekit eval mathcamps")  # fmt: skip


def _load_benchmark(args: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the questions to ask: the filtered set, original problems unless --question-types all, at
    most --per-standard per standard; every question, for follow-ups' originals)."""
    everything = load(args.data_root)
    kept, _ = apply_filters(everything)
    pool = kept if args.question_types == "all" else kept[kept["type"] == ORIGINAL]
    return sample_per_standard(pool, args.per_standard, seed=args.seed), everything


def _score_benchmark(model: Any, tokenizer: Any, items: tuple[pd.DataFrame, pd.DataFrame], args: Any):
    """`evaluate` on the questions the model's training text does not hold (held out means unseen)."""
    from littlekit.evals.seen import seen_items

    questions, everything = items
    questions = questions[~seen_items({"model": model}, questions["statement"]).mask]
    return evaluate(model, tokenizer, questions, everything, n_samples=args.samples,
                    temperature=args.temperature, top_p=args.top_p, max_new_tokens=args.max_new_tokens,
                    batch_size=args.batch_size, seed=args.seed, backend=args.backend)  # fmt: skip


def band_grade_table(results: pd.DataFrame, args: Any) -> pd.DataFrame:
    """pass@1 (and pass@samples) with its 95% CI per band, then per grade: by, group, k, ..."""
    parts = []
    for k in sorted({1, args.samples}):
        for by in ("band", "grade"):
            table = accuracy_by(results, by, k=k, seed=args.seed).rename(columns={by: "group"})
            parts.append(table.assign(by=by, group=table["group"].astype(str)))
    table = pd.concat(parts, ignore_index=True)
    return table[["k", "by", "group", "problems", "pass_at_k", "low", "high"]]


BENCHMARK = Benchmark(
    name="mathcamps",
    measures="pass@k on MathCAMPS questions by band and grade",
    paper="the paper's Figure 6",
    load=_load_benchmark,
    score=_score_benchmark,
    table=band_grade_table,
    options=(
        option(
            "--per-standard",
            type=count_or_all,
            default=4,
            help="questions per standard, a seeded sample, or 'all' (default 4)",
        ),
        option(
            "--question-types",
            choices=("original", "all"),
            default="original",
            help="original problems only, or also follow-ups (default original)",
        ),
        option("--samples", type=positive_int, default=16, help="completions per question (default 16)"),
        option("--temperature", type=non_negative, default=1.0, help="0 greedy (default 1.0)"),
        option("--top-p", type=top_p, default=1.0, help="nucleus sampling (default 1.0: off)"),
        option("--max-new-tokens", type=positive_int, default=24, help="tokens per completion (default 24)"),
        option("--backend", choices=BACKENDS, default="auto", help="generation backend (default auto)"),
    ),
    check=_check_benchmark,
)
