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
MathCAMPS grader. Each name is imported from the module that defines it.
"""

