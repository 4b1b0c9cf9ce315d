"""The book's work stays lean: each chapter's default parameters may not grow what it computes.

Work is counted, never timed: training steps and tokens, problems, samples, documents. Each
chapter's ceilings are its defaults when its time was measured (the per-chapter times RESULTS.md records);
raising a default past its ceiling fails here, so a slower book is a decision someone writes down
(by raising the ceiling beside the new budget) rather than an accident. A default of None ("all
of them") stays allowed only where it is pinned as None.
"""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ALL = None  # a default that means "every item": allowed only where pinned so

# chapter -> {parameter: ceiling}; numbers are upper bounds, ALL must stay ALL
CEILINGS: dict[str, dict[str, object]] = {
    "01": {"sample_size": 2000, "passages_per_band": ALL},
    "02": {"judge_sample_size": 200, "sample_per_band": ALL},
    "03": {"epoch": 10, "dim": 32, "word_ngrams": 2, "tuning_folds": 5},
    "04": {"max_length": 128, "train_sample_size": 1200, "speed_sample_size": 8},
    "05": {"adversarial_chars": 1_000_000},
    "06": {"budget_tokens": ALL},
    "07": {"rate_sample_size": 120, "rate_repeats": 1, "n_terms": 126},
    "08": {"vocab_size": 4096, "math_per_unit": 1000, "max_number": 9999},
    "09": {"max_steps": 560, "batch_size": 16, "seq_len": 256, "max_val_tokens": 15_000, "max_per_band": 150,
           "seed_count": 3, "seed_steps": 200},  # the seed study: 3 pairs x 200 steps, about 430 s on an EPYC
    "10": {"per_bin": 100, "n_boot": 1000, "seed_per_bin": 40},
    "11": {"max_new_tokens": 16},
    "12": {"per_standard": 4, "n_samples": 16, "max_new_tokens": 24, "curriculum_per_unit": 30,
           "seed_per_unit": 10},
    "13": {"per_unit": 300, "distribution_size": 3000, "tokenizer_sample": 3000, "throughput_per_unit": 100},
    "14": {"per_unit": 10, "n_boot": 2000},
    "15": {"per_unit": 10, "n_boot": 2000},
    "16": {
        "sft_steps": 40,
        "sft_batch": 16,
        "grpo_segments": 2,
        "grpo_steps": 8,
        "grpo_batch": 32,
        "num_generations": 8,
        "pool_per_unit": 2,
        "pool_gsm8k": 8,
        "gsm8k_sample": 300,
        "eval_per_unit": 3,
        "sampled_per_unit": 2,
        "n_boot": 2000,
    },
    "17": {"per_unit": 2, "n_boot": 2000},
    "18": {
        "k0": 100,
        "pool": 48,
        "budget": 16,
        "rounds": 3,
        "rollouts": 2,
        "samples": 4,
        "epochs": 3,
        "eval_per_unit": 2,
        "n_boot": 2000,
    },
}
# products that bound a chapter's main cost, in the same units as the ceilings above
PRODUCT_CEILINGS: dict[str, dict[tuple[str, ...], int]] = {
    "09": {("max_steps", "batch_size", "seq_len"): 560 * 16 * 256},  # training tokens per model
    "16": {("grpo_segments", "grpo_steps", "grpo_batch"): 2 * 8 * 32, ("sft_steps", "sft_batch"): 40 * 16},
    "18": {("rounds", "budget", "rollouts"): 3 * 16 * 2},
}
# chapters whose sizes list must not grow (each size trains two models)
SIZES = {"14": ("pico", "nano", "micro")}


def defaults(number: str) -> dict[str, object]:
    """The literal defaults of a chapter's `parameters` cell (`name = value` or `name: T = value`)."""
    path = next(NOTEBOOKS.glob(f"{number}_*.ipynb"))
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    source = next(
        "".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])
    )
    found: dict[str, object] = {}
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            try:
                found[target.id] = ast.literal_eval(node.value)
            except ValueError:
                continue  # not a literal (an expression): nothing to bound
    return found


@pytest.mark.parametrize("number", sorted(CEILINGS))
def test_no_chapter_default_grows_its_work(number):
    given = defaults(number)
    for name, ceiling in CEILINGS[number].items():
        assert name in given, f"chapter {number} no longer has the parameter {name}: update its ceiling"
        value = given[name]
        if ceiling is ALL:
            assert value is None, f"chapter {number}: {name} = {value!r}, pinned as None (all)"
        else:
            assert value is not None, (
                f"chapter {number}: {name} = None (all) where at most {ceiling} is allowed"
            )
            assert value <= ceiling, f"chapter {number}: {name} = {value} grows its work past {ceiling}"
    for names, ceiling in PRODUCT_CEILINGS.get(number, {}).items():
        product = math.prod(int(given[n]) for n in names)
        assert product <= ceiling, f"chapter {number}: {' x '.join(names)} = {product:,} > {ceiling:,}"
    if number in SIZES:
        assert tuple(given["sizes"]) == SIZES[number]


def test_the_ceilings_can_fail():
    # a default above its ceiling is caught (the rule is not vacuous)
    given = defaults("09")
    assert (
        given["max_steps"] * given["batch_size"] * given["seq_len"]
        == PRODUCT_CEILINGS["09"][("max_steps", "batch_size", "seq_len")]
    )
    assert not given["max_steps"] + 1 <= CEILINGS["09"]["max_steps"]
