import math

import pytest

from littlekit.judge.cost import (
    DEFAULT_PRICES,
    FINEWEB_EDU_DOCS,
    PAPER_ENSEMBLE_PER_SAMPLE,
    PAPER_TOTAL_USD,
    Price,
    StageRate,
    cascade_cost,
    compare_with_judge,
    cost_per_sample,
    judge_everything_cost,
    paper_cost_table,
    price_for,
    usage_cost,
)


def test_paper_figures_are_reproduced():
    assert PAPER_ENSEMBLE_PER_SAMPLE == pytest.approx(0.0066)  # 0.0014 + 0.0017 + 0.0035
    total = judge_everything_cost()
    assert total == pytest.approx(45.87e6)
    assert total == pytest.approx(PAPER_TOTAL_USD)
    table = paper_cost_table()
    assert table["usd_per_sample"].iloc[:3].sum() == pytest.approx(table["usd_per_sample"].iloc[3])
    assert table["usd_total"].iloc[3] == pytest.approx(0.0066 * 6.95e9)


def test_usage_cost_and_price_lookup():
    price = Price(0.50, 3.00, "2025-12-17")
    assert usage_cost(1_000_000, 0, price) == pytest.approx(0.50)
    assert usage_cost(2000, 300, price) == pytest.approx(0.001 + 0.0009)
    assert price_for("google/gemini-3-flash-preview") == DEFAULT_PRICES["gemini-3-flash-preview"]
    with pytest.raises(KeyError, match="no price"):
        price_for("mystery-model")
    for item in DEFAULT_PRICES.values():
        assert item.as_of[:2] == "20" and item.source.startswith("https://")
        assert 0 < item.input_per_million <= item.output_per_million


def test_cost_per_sample_from_records_and_own_prices():
    records = [
        {"judge": {"model": "my-model", "usage": {"input_tokens": 3000, "output_tokens": 200, "cached": 0}}},
        {"judge": {"model": "my-model", "usage": {"input_tokens": 1000, "output_tokens": 100, "cached": 3}}},
    ]
    prices = {"my-model": Price(1.0, 10.0, "2026-01-01")}
    assert cost_per_sample(records, prices=prices) == pytest.approx((4000 * 1 + 300 * 10) / 1e6 / 2)
    with pytest.raises(ValueError):
        cost_per_sample([])


def test_cascade_cost_and_comparison():
    stages = [
        StageRate("aoa", docs_per_second=1000, unit="core", usd_per_unit_hour=0.05),
        StageRate("encoder", docs_per_second=500, unit="gpu", usd_per_unit_hour=2.0, fraction=0.1),
    ]
    table = cascade_cost(stages, n_docs=3.6e6)
    assert list(table["stage"]) == ["aoa", "encoder", "total"]
    assert table["unit_hours"].tolist()[:2] == pytest.approx([1.0, 0.2])
    assert table["usd"].tolist() == pytest.approx([0.05, 0.4, 0.45])
    comparison = compare_with_judge(stages, n_docs=3.6e6, labelled_docs=1000)
    judge, ours = comparison["usd"]
    assert judge == pytest.approx(0.0066 * 3.6e6)
    assert ours == pytest.approx(0.45 + 0.0066 * 1000)
    assert comparison["share_of_judge"].iloc[0] == 1.0
    assert math.isclose(cascade_cost(stages)["docs"].iloc[-1], FINEWEB_EDU_DOCS)
    with pytest.raises(ValueError, match="unit"):
        cascade_cost([StageRate("x", 1, "tpu", 1.0)])


def test_estimate_usage_counts_every_prompt_message():
    from littlekit.judge.cost import estimate_usage
    from littlekit.judge.prompts import JudgePrompt

    prompts = [
        JudgePrompt("a", "s" * 40, user_template="{text}"),
        JudgePrompt("b", "", user_template="x{text}"),
    ]
    usage = estimate_usage(["t" * 8, "t" * 4], prompts, output_tokens_per_answer=10, chars_per_token=4)
    # chars: prompt a (40 + 8) + (40 + 4) = 92, prompt b (9) + (5) = 14
    assert usage == {"documents": 2, "calls": 4, "input_tokens": 106 / 4, "output_tokens": 40}
    with pytest.raises(ValueError):
        estimate_usage(["t"], prompts, chars_per_token=0)


def test_price_table_prices_a_usage():
    from littlekit.judge.cost import price_table

    prices = {"m": Price(1.0, 10.0, "2026-01-01", "https://example.org")}
    assert list(price_table()["as_of"]) == [p.as_of for p in DEFAULT_PRICES.values()]
    table = price_table({"documents": 4, "input_tokens": 2e6, "output_tokens": 1e5}, prices)
    assert table.loc["m", "usd_total"] == pytest.approx(2.0 + 1.0)
    assert table.loc["m", "usd_per_document"] == pytest.approx(0.75)
    assert "usd_total" not in price_table(prices=prices).columns


def test_rubric_usage_sends_the_rubric_with_every_passage():
    from littlekit.judge.cost import price_table, rubric_usage

    usage = rubric_usage(["t" * 8, "t" * 4], "r" * 40, output_tokens_per_answer=10, chars_per_token=4)
    assert usage == {"documents": 2, "calls": 2, "input_tokens": (48 + 44) / 4, "output_tokens": 20}
    prices = {"m": Price(1.0, 10.0, "2026-01-01")}
    table = price_table(usage, prices)
    assert table.loc["m", "usd_per_document"] == pytest.approx((23 * 1.0 + 20 * 10.0) / 1e6 / 2)
    assert rubric_usage([], "r")["documents"] == 0
    for bad in ({"chars_per_token": 0}, {"output_tokens_per_answer": -1}):
        with pytest.raises(ValueError):
            rubric_usage(["t"], "r", **bad)


def test_one_rubric_costs_less_than_three_prompts_on_the_judge_labels():
    from littlekit.databuild import corpora
    from littlekit.judge.cost import RUBRIC_ANSWER_TOKENS, estimate_usage, rubric_usage
    from littlekit.judge.prompts import build_prompts

    texts = corpora.load_judge_labels()["text"].head(200).tolist()
    rubric = corpora.load_judge_rubric()
    usage = rubric_usage(texts, rubric)
    assert usage["input_tokens"] == pytest.approx((200 * len(rubric) + sum(map(len, texts))) / 4)
    assert usage["output_tokens"] == 200 * RUBRIC_ANSWER_TOKENS
    three = estimate_usage(texts, build_prompts(corpora.load_standards()))
    price = DEFAULT_PRICES["gemini-3-flash-preview"]
    one_cost = usage_cost(usage["input_tokens"], usage["output_tokens"], price) / 200
    assert one_cost < usage_cost(three["input_tokens"], three["output_tokens"], price) / 200
    assert one_cost < PAPER_ENSEMBLE_PER_SAMPLE
