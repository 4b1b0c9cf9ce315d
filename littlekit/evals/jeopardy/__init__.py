"""Jeopardy science questions split by NGSS grade band (the paper's Figure 5).

Pipeline: `load_jeopardy` (season TSV or Kaggle JSON/CSV -> one normalised frame) ->
`select_science` (category keywords) -> `label_clues` (an LLM judge with its own NGSS prompt,
cached, written as label records) or `read_labels` (the project-written set's author labels) ->
`attach_split` (K-5 vs Beyond K-5) -> `evaluate_generation` (few-shot prompt, greedy answer that
starts with text, `grade`; `empty_table` counts empty answers) and `evaluate_likelihood` (bits per
byte of the gold response given the prompt) -> `verdict_lines` (the paper's claim, each part with
its interval).

One module per job: `loaders` (both public schemas, the authored set), `selection` (science
categories), `labels` (the NGSS judge and the split), `evaluation` (generation, likelihood) and
`verdicts` (paired bootstrap over clues, exact intervals for counts).
The judge's NGSS prompt is `littlekit.judge.prompts.build_ngss_prompt`, beside the judge's other
prompts, and the grading rule (`grade`) is `littlekit.evals.answers.grade_response`, beside the
MathCAMPS grader. Every name is importable from `littlekit.evals.jeopardy`.
"""

from __future__ import annotations

from littlekit.evals.answers import first_answer, gold_variants, normalise_answer
from littlekit.evals.answers import grade_response as grade
from littlekit.evals.jeopardy.evaluation import (
    PROMPT_HEADER,
    SHOTS,
    empty_table,
    evaluate_generation,
    evaluate_likelihood,
    file_sha256,
    format_prompt,
    likelihood_table,
    pass_at_1,
    unseen_clues,
)
from littlekit.evals.jeopardy.labels import (
    SPLITS,
    attach_split,
    author_label,
    label_clues,
    ngss_dci_table,
    ngss_prompt,
    sample_per_split,
    save_labels,
)
from littlekit.evals.jeopardy.loaders import (
    AUTHORED_DIR,
    AUTHORED_SOURCE,
    COLUMNS,
    KAGGLE_COLUMNS,
    SOURCE_KAGGLE,
    SOURCE_TSV,
    TSV_COLUMNS,
    JeopardyFormatError,
    LoadReport,
    clue_id,
    judge_text,
    load_authored,
    load_jeopardy,
)
from littlekit.evals.jeopardy.selection import (
    EXCLUDE_KEYWORDS,
    SCIENCE_KEYWORDS,
    science_keyword,
    select_science,
)
from littlekit.evals.jeopardy.verdicts import PAIR, accuracy_gaps, bpb_comparison, empty_lines, verdict_lines
from littlekit.judge.labels import read_labels
from littlekit.judge.prompts import NGSS_SYSTEM, NGSS_USER, dci_code

__all__ = [
    "AUTHORED_DIR", "AUTHORED_SOURCE", "COLUMNS", "EXCLUDE_KEYWORDS", "KAGGLE_COLUMNS", "NGSS_SYSTEM",
    "NGSS_USER", "PAIR", "PROMPT_HEADER", "SCIENCE_KEYWORDS", "SHOTS", "SOURCE_KAGGLE", "SOURCE_TSV",
    "SPLITS", "TSV_COLUMNS", "JeopardyFormatError", "LoadReport", "accuracy_gaps", "attach_split",
    "author_label", "bpb_comparison", "clue_id", "dci_code", "empty_lines", "empty_table",
    "evaluate_generation", "evaluate_likelihood", "file_sha256", "first_answer", "format_prompt",
    "gold_variants", "grade", "judge_text", "label_clues", "likelihood_table", "load_authored",
    "load_jeopardy", "ngss_dci_table", "ngss_prompt", "normalise_answer", "pass_at_1", "read_labels",
    "sample_per_split", "save_labels", "science_keyword", "select_science", "unseen_clues", "verdict_lines",
]
