"""What judging costs: token usage times list prices, the paper's figures, and our cascade beside them.

The paper (Appendix A.2) reports per-sample judge costs of $0.0014 (OpenEvolve ensemble),
$0.0017 (the GEPA-optimised prompt) and $0.0035 (the seed prompts): $0.0066 per sample for
the whole ensemble, or about USD 45.87M for the 6.95B documents of FineWeb-Edu.
`cascade_cost` prices our filter from measured throughputs (docs/s per core or per GPU) and
hourly prices, so the two can be put side by side with `compare_with_judge`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from littlekit import paper
from littlekit.judge.backends import token_count

FINEWEB_EDU_DOCS = paper.number("fineweb_edu_docs").value
PAPER_COST_PER_SAMPLE: dict[str, float] = {
    setup: paper.number(f"judge_cost_{setup}").value for setup in ("openevolve", "gepa", "seed")
}
PAPER_ENSEMBLE_PER_SAMPLE = round(sum(PAPER_COST_PER_SAMPLE.values()), 10)  # the paper's $0.0066
PAPER_TOTAL_USD = paper.number("judge_cost_total").value  # as printed in the paper


@dataclass(frozen=True)
class Price:
    """List price in USD per million tokens; `as_of` is when that price was published."""

    input_per_million: float
    output_per_million: float
    as_of: str
    source: str = ""


_GOOGLE = "https://ai.google.dev/gemini-api/docs/pricing"
_OPENAI = "https://openai.com/api/pricing/"

# Standard (non-batch) text prices for prompts under 200k tokens. Reasoning ("thinking")
# tokens are billed as output and are included in the server's completion_tokens count.
DEFAULT_PRICES: dict[str, Price] = {
    "gemini-3-flash-preview": Price(0.50, 3.00, "2025-12-17", _GOOGLE),
    "gemini-2.5-flash": Price(0.30, 2.50, "2025-06-17", _GOOGLE),
    "gemini-2.5-flash-lite": Price(0.10, 0.40, "2025-07-22", _GOOGLE),
    "gpt-4o-mini": Price(0.15, 0.60, "2024-07-18", _OPENAI),
    "gpt-4.1-mini": Price(0.40, 1.60, "2025-04-14", _OPENAI),
    "gpt-5-mini": Price(0.25, 2.00, "2025-08-07", _OPENAI),
}


def price_for(model: str, prices: Mapping[str, Price] | None = None) -> Price:
    """The price of `model` in `prices` (default table), tolerating a provider prefix."""
    table = DEFAULT_PRICES if prices is None else prices
    for name in (model, model.split("/")[-1]):
        if name in table:
            return table[name]
    raise KeyError(f"no price for model {model!r}; pass prices={{{model!r}: Price(...)}}")


def usage_cost(input_tokens: float, output_tokens: float, price: Price) -> float:
    """USD for a number of input and output tokens."""
    return (input_tokens * price.input_per_million + output_tokens * price.output_per_million) / 1e6


def total_usage(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Summed token usage of judge label records (cached answers count what they once cost).

    `unknown` counts the answers whose cost the server did not report usably (`usage["unknown"]`
    of each record), plus every count in a record that is not a non-negative whole number (it is
    left out of the sums, not a crash)."""
    totals = {"documents": 0, "input_tokens": 0, "output_tokens": 0, "cached": 0, "unknown": 0}
    for record in records:
        usage = (record.get("judge") or {}).get("usage") or {}
        usage = usage if isinstance(usage, Mapping) else {}
        totals["documents"] += 1
        for key in ("input_tokens", "output_tokens", "cached", "unknown"):
            count = token_count(usage.get(key, 0))
            if count is None:
                totals["unknown"] += 1
            else:
                totals[key] += count
    return totals


def cost_per_sample(records: Sequence[Mapping[str, Any]], price: Price | None = None,
                    prices: Mapping[str, Price] | None = None) -> float:
    """Mean USD per document of judge records, priced by `price` or by the records' model."""
    if not records:
        raise ValueError("no records to price")
    if price is None:
        price = price_for(records[0]["judge"]["model"], prices)
    totals = total_usage(records)
    return usage_cost(totals["input_tokens"], totals["output_tokens"], price) / totals["documents"]


def judge_everything_cost(n_docs: float = FINEWEB_EDU_DOCS,
                          per_sample: float = PAPER_ENSEMBLE_PER_SAMPLE) -> float:
    """USD to run the judge on every document: per-sample cost times documents."""
    return per_sample * n_docs


def paper_cost_table(n_docs: float = FINEWEB_EDU_DOCS) -> pd.DataFrame:
    """The paper's per-sample costs and what each would cost over `n_docs` documents."""
    rows = [(name, usd, usd * n_docs) for name, usd in PAPER_COST_PER_SAMPLE.items()]
    rows.append(("ensemble (all three)", PAPER_ENSEMBLE_PER_SAMPLE, PAPER_ENSEMBLE_PER_SAMPLE * n_docs))
    return pd.DataFrame(rows, columns=["setup", "usd_per_sample", "usd_total"])


CHARS_PER_TOKEN = 4.0  # a rough tokenizer: English text averages about four characters a token
ANSWER_TOKENS = 100  # the answer the prompts ask for: a one-or-two-sentence rationale and a band
MAX_ANSWER_TOKENS = 1024  # the paper's token cap per judge call (thinking tokens included)


def estimate_usage(texts: Iterable[str], prompts: Sequence[Any],
                   output_tokens_per_answer: float = ANSWER_TOKENS,
                   chars_per_token: float = CHARS_PER_TOKEN) -> dict[str, float]:
    """Tokens the judge would use on `texts` before any call is made (no tokenizer needed).

    Input: every prompt's messages for every text (system rubric, template, truncated text),
    counted as characters / `chars_per_token`. Output: `output_tokens_per_answer` per call.
    `prompts` are `JudgePrompt`s (anything with `.messages(text)`).
    """
    if chars_per_token <= 0 or output_tokens_per_answer < 0:
        raise ValueError("chars_per_token must be positive and output_tokens_per_answer not negative")
    documents, chars = 0, 0
    for text in texts:
        documents += 1
        chars += sum(len(m["content"]) for p in prompts for m in p.messages(text))
    calls = documents * len(prompts)
    return {"documents": documents, "calls": calls, "input_tokens": chars / chars_per_token,
            "output_tokens": calls * output_tokens_per_answer}


RUBRIC_ANSWER_TOKENS = 20  # a single-rubric answer: id, band, grade and an evidence note (at most 12 words)


def rubric_usage(texts: Iterable[str], rubric: str,
                 output_tokens_per_answer: float = RUBRIC_ANSWER_TOKENS,
                 chars_per_token: float = CHARS_PER_TOKEN) -> dict[str, float]:
    """Tokens a single-rubric judge would use on `texts`, one call per passage (no tokenizer needed).

    Each call sends the whole `rubric` and one passage, counted as characters / `chars_per_token`,
    and gets one answer of `output_tokens_per_answer`. Returns what `estimate_usage` returns
    (documents, calls, input_tokens, output_tokens), so `price_table` prices it.
    """
    if chars_per_token <= 0 or output_tokens_per_answer < 0:
        raise ValueError("chars_per_token must be positive and output_tokens_per_answer not negative")
    documents, chars = 0, 0
    for text in texts:
        documents += 1
        chars += len(rubric) + len(text)
    return {"documents": documents, "calls": documents, "input_tokens": chars / chars_per_token,
            "output_tokens": documents * output_tokens_per_answer}


def price_table(usage: Mapping[str, float] | None = None,
                prices: Mapping[str, Price] | None = None) -> pd.DataFrame:
    """The price table (USD per million tokens, date, source); with `usage`, what it would cost.

    `usage` has input_tokens, output_tokens and documents (e.g. from `estimate_usage` or
    `total_usage`); it adds the columns usd_total and usd_per_document.
    """
    table = DEFAULT_PRICES if prices is None else prices
    rows = []
    for model, price in table.items():
        row = {"model": model, "input_per_million": price.input_per_million,
               "output_per_million": price.output_per_million, "as_of": price.as_of,
               "source": price.source}
        if usage is not None:
            usd = usage_cost(usage["input_tokens"], usage["output_tokens"], price)
            row["usd_total"] = usd
            row["usd_per_document"] = usd / usage["documents"] if usage["documents"] else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).set_index("model")


@dataclass(frozen=True)
class StageRate:
    """A cascade stage's measured throughput and the price of the hardware unit it runs on.

    `fraction` is the share of the corpus that reaches the stage (earlier stages drop the rest).
    """

    name: str
    docs_per_second: float
    unit: str  # "core" or "gpu"
    usd_per_unit_hour: float
    fraction: float = 1.0


def cascade_cost(stages: Sequence[StageRate], n_docs: float = FINEWEB_EDU_DOCS) -> pd.DataFrame:
    """Per-stage unit-hours and USD to filter `n_docs` documents, with a total row."""
    rows = []
    for stage in stages:
        if stage.docs_per_second <= 0:
            raise ValueError(f"stage {stage.name!r}: docs_per_second must be positive")
        if stage.unit not in ("core", "gpu"):
            raise ValueError(f"stage {stage.name!r}: unit must be 'core' or 'gpu'")
        docs = n_docs * stage.fraction
        hours = docs / stage.docs_per_second / 3600
        rows.append({
            "stage": stage.name, "unit": stage.unit, "fraction": stage.fraction, "docs": docs,
            "docs_per_second": stage.docs_per_second, "unit_hours": hours,
            "usd": hours * stage.usd_per_unit_hour,
        })
    frame = pd.DataFrame(rows)
    total = {"stage": "total", "unit": "", "fraction": float("nan"), "docs": n_docs,
             "docs_per_second": float("nan"), "unit_hours": frame["unit_hours"].sum(),
             "usd": frame["usd"].sum()}
    return pd.concat([frame, pd.DataFrame([total])], ignore_index=True)


def compare_with_judge(stages: Sequence[StageRate], n_docs: float = FINEWEB_EDU_DOCS,
                       judge_per_sample: float = PAPER_ENSEMBLE_PER_SAMPLE,
                       labelled_docs: float = 0.0) -> pd.DataFrame:
    """Our cascade's cost (plus judging `labelled_docs` training documents) beside judging everything."""
    cascade = cascade_cost(stages, n_docs)
    cascade_usd = float(cascade["usd"].iloc[-1]) + judge_everything_cost(labelled_docs, judge_per_sample)
    judge_usd = judge_everything_cost(n_docs, judge_per_sample)
    rows = [
        {"approach": "LLM judge on every document (paper's ensemble)", "usd": judge_usd},
        {"approach": "littlekit cascade (measured rates)", "usd": cascade_usd},
    ]
    frame = pd.DataFrame(rows)
    frame["share_of_judge"] = frame["usd"] / judge_usd
    return frame
