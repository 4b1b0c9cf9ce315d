"""Stage 5: the frequency-ratio word table, the blocklist, the released drop rule, the sampler."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest

from littlekit.filter import word_table as bl
from littlekit.filter.frequency import (
    REASON,
    FrequencyStage,
    default_tier_edges,
    sample_to_budget,
)
from littlekit.text import word_tokens

# K-5 pool: the x3, cat x2, sat, ran, dog -> 8 tokens.
K5 = ["The cat sat.", "the cat ran", "THE dog"]
# Beyond pool: the x2, photosynthesis x3, cat -> 6 tokens.
BEYOND = ["the photosynthesis, the cat", "Photosynthesis photosynthesis"]


def table_of(scores: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame({"word": list(scores), "beyond_score": list(scores.values())})


# --- the word table -------------------------------------------------------------------------


def test_count_words_streams_and_totals():
    counts, total = bl.count_words(text for text in K5)  # a generator: consumed once
    assert total == 8
    assert counts == {"the": 3, "cat": 2, "sat": 1, "ran": 1, "dog": 1}


def test_log_odds_formula_on_hand_counts():
    table = bl.score_words(K5, BEYOND, min_count=1, alpha=0).set_index("word")
    assert table.loc["the", "beyond_score"] == pytest.approx(math.log2((2 / 6) / (3 / 8)))
    assert table.loc["cat", "beyond_score"] == pytest.approx(math.log2((1 / 6) / (2 / 8)))
    assert table.loc["the", "rate_k5"] == pytest.approx(3 / 8)
    assert table.loc["the", "rate_beyond"] == pytest.approx(2 / 6)
    assert (table.loc["cat", "count_k5"], table.loc["cat", "count_beyond"]) == (2, 1)
    # alpha = 0 is the paper's formula exactly: absent from a pool gives +/- infinity.
    assert table.loc["photosynthesis", "beyond_score"] == math.inf
    assert table.loc["dog", "beyond_score"] == -math.inf


def test_min_count_applies_to_the_combined_count():
    table = bl.score_words(K5, BEYOND, min_count=3, alpha=1)
    # the: 3+2, cat: 2+1, photosynthesis: 0+3 pass; sat, ran, dog (1 each) are dropped.
    assert set(table["word"]) == {"the", "cat", "photosynthesis"}
    assert set(bl.score_words(K5, BEYOND, min_count=4)["word"]) == {"the"}


def test_smoothing_scores_a_frequent_beyond_only_word_high():
    k5 = ["kids play ball"] * 40  # 120 tokens
    beyond = ["mitochondria mitochondria play"] * 40  # 120 tokens
    table = bl.score_words(k5, beyond, min_count=5).set_index("word")  # default alpha = 1
    assert bl.DEFAULT_ALPHA == 1.0
    # count_beyond 80, count_k5 0, equal totals: log2((80 + 1) / (0 + 1)).
    assert table.loc["mitochondria", "beyond_score"] == pytest.approx(math.log2(81))
    assert table.loc["mitochondria", "beyond_score"] >= bl.MIN_BEYOND_SCORE
    assert table.loc["play", "beyond_score"] == pytest.approx(0.0)
    assert table.loc["kids", "beyond_score"] == pytest.approx(-math.log2(41))
    # Smoothing also follows the pool sizes: the same word in a pool 4x larger scores 2 bits less.
    wider = bl.score_words(k5, beyond + ["filler words here"] * 120, min_count=5).set_index("word")
    assert wider.loc["mitochondria", "beyond_score"] == pytest.approx(math.log2(81) - 2)


def test_scoring_refuses_empty_pools_and_negative_alpha():
    with pytest.raises(ValueError, match="both pools need tokens"):
        bl.score_words([], BEYOND)
    with pytest.raises(ValueError, match="alpha"):
        bl.score_words(K5, BEYOND, alpha=-1)


def test_ranking_is_score_descending_then_word():
    table = table_of({"zeta": 5.0, "alpha": 5.0, "mid": 4.0, "low": 1.0, "top": 9.5, "gap": float("nan")})
    ranked = bl.rank_words(table)
    assert ranked["word"].tolist() == ["top", "alpha", "zeta", "mid", "low", "gap"]
    # The blocklist keeps score >= cut-off, in rank order; NaN is never blocked.
    assert bl.blocklist(table) == ["top", "alpha", "zeta", "mid"]
    assert bl.blocklist(table, min_beyond_score=5.0) == ["top", "alpha", "zeta"]


def test_built_table_is_ranked():
    table = bl.score_words(K5, BEYOND, min_count=1)
    scores = table["beyond_score"].tolist()
    assert scores == sorted(scores, reverse=True)
    assert table["word"].iloc[0] == "photosynthesis"


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_save_load_round_trip(tmp_path, suffix):
    table = bl.score_words(K5, BEYOND, min_count=1, alpha=0)  # holds +inf and -inf
    path = bl.save_word_scores(table, tmp_path / f"word_log_odds{suffix}")
    back = bl.load_word_scores(path)
    assert list(back.columns[:2]) == ["word", "beyond_score"]
    assert back["word"].tolist() == table["word"].tolist()
    assert back["beyond_score"].tolist() == table["beyond_score"].tolist()
    assert back["count_beyond"].tolist() == table["count_beyond"].tolist()


def test_csv_round_trip_keeps_words_that_look_missing(tmp_path):
    table = table_of({"nan": 6.0, "null": 5.0, "na": 4.5})
    back = bl.load_word_scores(bl.save_word_scores(table, tmp_path / "t.csv"))
    assert back["word"].tolist() == ["nan", "null", "na"]


def test_released_shape_loads_as_is(tmp_path):
    # The released artifact: word, beyond_score (+ whatever else); NaN scores are skipped.
    path = tmp_path / "word_log_odds.parquet"
    pd.DataFrame({
        "word": ["integral", "photosynthesis", "cat", "oddity"],
        "beyond_score": [7.2, 4.0, -1.5, float("nan")],
        "count_k5": [0, 3, 900, 1],
    }).to_parquet(path, index=False)
    stage = FrequencyStage(path)
    assert stage.scores_by_word == {"integral": 7.2, "photosynthesis": 4.0, "cat": -1.5}
    assert stage.blocked == {"integral", "photosynthesis"}


def test_bad_tables_fail_clearly(tmp_path):
    pd.DataFrame({"token": ["cat"], "score": [1.0]}).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['word', 'beyond_score'\]"):
        bl.load_word_scores(tmp_path / "bad.parquet")
    pd.DataFrame({"word": ["cat"]}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match=r"\['beyond_score'\]"):
        FrequencyStage(tmp_path / "bad.csv")
    pd.DataFrame({"word": ["cat"], "beyond_score": ["high"]}).to_csv(tmp_path / "text.csv", index=False)
    with pytest.raises(ValueError, match="must be numeric"):
        bl.load_word_scores(tmp_path / "text.csv")
    with pytest.raises(ValueError, match="use .parquet or .csv"):
        bl.load_word_scores(tmp_path / "table.json")
    with pytest.raises(ValueError, match="use .parquet or .csv"):
        bl.save_word_scores(table_of({"cat": 1.0}), tmp_path / "table.txt")


def test_duplicate_words_keep_their_highest_score():
    for scores in ([2.0, 4.5], [4.5, 2.0]):
        table = pd.DataFrame({"word": ["atom", "atom"], "beyond_score": scores})
        assert bl.score_lookup(table) == {"atom": 4.5}


def test_default_table_comes_from_the_data_root(tmp_path, monkeypatch):
    bl.save_word_scores(table_of({"integral": 7.0}), tmp_path / "word_log_odds.parquet")
    monkeypatch.setenv("LITTLEKIT_DATA", str(tmp_path))
    assert FrequencyStage().scores_by_word == {"integral": 7.0}


# --- the released rule: drop at >= 4.0 --------------------------------------------------------

SCORES = {"integral": 7.5, "photosynthesis": 4.0, "molecule": 3.999, "cat": -2.0, "dog": -1.0}


def test_drop_at_exactly_the_cut_off():
    stage = FrequencyStage(table_of(SCORES))
    assert stage.name == "frequency"
    assert stage.min_beyond_score == 4.0
    at_cut = stage("Plants do Photosynthesis.")
    assert (at_cut.keep, at_cut.reason) == (False, REASON)
    assert at_cut.scores["worst_word"] == "photosynthesis"
    assert at_cut.scores["worst_score"] == 4.0
    below = stage("A molecule and a cat.")
    assert (below.keep, below.reason) == (True, None)
    assert below.scores["worst_word"] == "molecule"
    assert below.scores["n_blocked_tokens"] == 0 and below.scores["blocked_words"] == []


def test_scores_count_blocked_tokens_and_list_the_worst_five():
    words = {f"w{c}x": 4.0 + i for i, c in enumerate("abcdefg")}  # 7 blocked words, 4.0 .. 10.0
    stage = FrequencyStage({**words, "cat": 0.5})
    text = "cat wgx wax wax " + " ".join(words)
    scores = stage.score(text)
    assert scores["n_blocked_tokens"] == 10  # 7 distinct + wgx and wax repeated
    assert scores["blocked_words"] == ["wgx", "wfx", "wex", "wdx", "wcx"]
    assert (scores["worst_word"], scores["worst_score"]) == ("wgx", 10.0)
    tied = FrequencyStage({"zz": 6.0, "bb": 5.0, "yy": 5.0, "aa": 5.0}).score("yy zz bb aa")
    assert tied["blocked_words"] == ["zz", "aa", "bb", "yy"]


def test_ties_in_worst_score_go_to_the_first_word_alphabetically():
    stage = FrequencyStage({"zebra": 5.0, "aardvark": 5.0})
    assert stage.score("zebra aardvark")["worst_word"] == "aardvark"


@pytest.mark.parametrize("text", ["", "   ", "12 + 7 = 19 !", "a b c"])
def test_documents_without_tokens_are_kept(text):
    decision = FrequencyStage(table_of(SCORES))(text)
    assert decision.keep and decision.reason is None
    empty = {
        "worst_word": None,
        "worst_score": None,
        "n_blocked_tokens": 0,
        "blocked_share": 0.0,
        "blocked_words": [],
    }
    assert decision.scores == empty


def test_words_missing_from_the_table_are_ignored():
    decision = FrequencyStage(table_of(SCORES))("Zebras graze on the savanna.")
    assert decision.keep and decision.scores["worst_score"] is None


def test_cut_off_is_a_parameter_and_decide_can_be_swept():
    strict = FrequencyStage(table_of(SCORES), min_beyond_score=3.0)
    assert not strict("a molecule").keep
    scores = FrequencyStage(table_of(SCORES)).score("integral")
    assert not FrequencyStage(table_of(SCORES), min_beyond_score=7.5).decide(scores).keep
    assert FrequencyStage(table_of(SCORES), min_beyond_score=8.0).decide(scores).keep


def test_stage_agrees_with_the_released_set_rule():
    # The released script keeps a document when its token set is disjoint from the blocklist.
    k5 = ["the cat sat on the mat and the dog ran"] * 30
    beyond = ["the derivative of the integral is the function and the cat"] * 30
    table = bl.score_words(k5, beyond, min_count=5)
    blocked = frozenset(bl.blocklist(table))
    assert blocked  # the test means something only if words are blocked
    stage = FrequencyStage(table)
    vocab = sorted(set(word_tokens(" ".join(k5 + beyond)))) + ["unseen"]
    rng = random.Random(3)
    for _ in range(300):
        text = " ".join(rng.choices(vocab, k=rng.randint(0, 6)))
        assert stage(text).keep == set(word_tokens(text)).isdisjoint(blocked), text


def test_from_pools_builds_table_and_stage():
    stage = FrequencyStage.from_pools(["cats play"] * 20, ["cats integrate"] * 20, min_count=5)
    assert not stage("we integrate").keep
    assert stage("cats play").keep


# --- the paper's mode: sample to a token budget -----------------------------------------------


def corpus() -> pd.DataFrame:
    rows = []
    for i in range(20):  # clean: 3 tokens each, 60 tokens
        rows.append((f"clean{i}", "the cat sat"))
    for i in range(10):  # worst 4.0 -> tier [4, 5): 2 tokens each
        rows.append((f"mild{i}", "cat photosynthesis"))
    for i in range(10):  # worst 7.5 -> tier [6, 8): 2 tokens each
        rows.append((f"hard{i}", "cat integral"))
    return pd.DataFrame(rows, columns=["id", "text"])


def test_budget_within_clean_documents_takes_only_clean():
    result = sample_to_budget(corpus(), table_of(SCORES), budget_tokens=30, seed=1)
    assert result.tokens == 30
    assert len(result.ids) == 10 and all(i.startswith("clean") for i in result.ids)
    report = result.report().set_index("label")
    assert report.loc["clean", "n_docs"] == 20 and report.loc["clean", "n_taken"] == 10
    assert report["tokens_taken"].sum() == 30


def test_budget_beyond_clean_fills_tiers_in_order():
    result = sample_to_budget(corpus(), table_of(SCORES), budget_tokens=70, seed=1)
    taken = {label: n for label, n in zip(result.report()["label"], result.report()["n_taken"], strict=True)}
    assert taken == {"clean": 20, "[4, 5)": 5, "[5, 6)": 0, "[6, 8)": 0, ">= 8": 0}
    assert result.tokens == 70
    report = result.report()
    assert report["n_docs"].tolist() == [20, 10, 0, 10, 0]
    assert report["tokens"].tolist() == [60, 20, 0, 20, 0]


def test_budget_is_never_exceeded_and_filled_exactly_when_possible():
    docs = [(i, " ".join(["cat"] * n)) for i, n in enumerate([7, 5, 9, 3, 4, 1, 8, 2])]
    for budget in range(0, 45):
        result = sample_to_budget(docs, table_of(SCORES), budget_tokens=budget, seed=budget)
        lengths = {i: len(word_tokens(t)) for i, t in docs}
        assert sum(lengths[i] for i in result.ids) == result.tokens <= budget
        assert len(set(result.ids)) == len(result.ids)
    # A 1-token document exists, so first-fit always reaches the budget while documents remain.
    assert sample_to_budget(docs, table_of(SCORES), budget_tokens=23, seed=5).tokens == 23
    assert sample_to_budget(docs, table_of(SCORES), budget_tokens=100).tokens == 39


def test_sampler_is_deterministic_for_a_seed():
    first = sample_to_budget(corpus(), table_of(SCORES), budget_tokens=45, seed=7)
    again = sample_to_budget(corpus(), table_of(SCORES), budget_tokens=45, seed=7)
    other = sample_to_budget(corpus(), table_of(SCORES), budget_tokens=45, seed=8)
    assert first.ids == again.ids
    assert first.ids != other.ids
    assert first.seed == 7 and first.budget_tokens == 45


def test_ascending_order_takes_the_lowest_worst_scores_first():
    docs = [("c", "the cat"), ("d", "the dog"), ("m", "a molecule"), ("n", "nothing scored")]
    result = sample_to_budget(docs, table_of(SCORES), budget_tokens=4, within_tier="ascending")
    # Worst scores: n None (lowest), c -2.0, d -1.0, m 3.999; 2 tokens each -> n, c.
    assert result.ids == ["n", "c"]


def test_documents_without_tokens_are_never_selected():
    docs = [("empty", ""), ("digits", "12 34"), ("cat", "the cat")]
    result = sample_to_budget(docs, table_of(SCORES), budget_tokens=10, seed=0)
    assert result.ids == ["cat"] and result.tokens == 2
    assert result.report().loc[0, "n_docs"] == 3


def test_sampler_uses_given_token_counts_and_a_custom_counter():
    frame = corpus().assign(n_tokens=100)
    assert len(sample_to_budget(frame, table_of(SCORES), budget_tokens=250).ids) == 2
    docs = list(corpus().itertuples(index=False, name=None))
    by_chars = sample_to_budget(docs, table_of(SCORES), budget_tokens=22, count_tokens=len)
    assert by_chars.tokens == 22 and len(by_chars.ids) == 2  # "the cat sat" is 11 characters


def test_sampler_accepts_a_stage_and_its_cut_off_sets_the_tiers():
    stage = FrequencyStage(table_of(SCORES), min_beyond_score=3.0)
    assert default_tier_edges(3.0) == (3.0, 4.0, 5.0, 7.0)
    report = sample_to_budget(corpus(), stage, budget_tokens=10).report()
    assert report["label"].tolist() == ["clean", "[3, 4)", "[4, 5)", "[5, 7)", ">= 7"]
    assert report["n_docs"].tolist() == [20, 0, 10, 0, 10]


def test_sampler_rejects_bad_arguments():
    with pytest.raises(ValueError, match="budget_tokens"):
        sample_to_budget(corpus(), table_of(SCORES), budget_tokens=-1)
    with pytest.raises(ValueError, match="strictly increasing"):
        sample_to_budget(corpus(), table_of(SCORES), budget_tokens=5, tier_edges=[5.0, 4.0])
    with pytest.raises(ValueError, match="within_tier"):
        sample_to_budget(corpus(), table_of(SCORES), budget_tokens=5, within_tier="best")
    with pytest.raises(ValueError, match=r"lack column\(s\) \['text'\]"):
        sample_to_budget(pd.DataFrame({"id": [1]}), table_of(SCORES), budget_tokens=5)


# --- the length-aware document rule and the minimum document count -----------------------------


def test_blocked_share_rule_is_the_same_test_at_any_length():
    stage = FrequencyStage(table_of({"photosynthesis": 6.0, "cat": 0.0}), min_blocked_share=0.01)
    short = "photosynthesis " + "cat " * 49  # 1 blocked token in 50 = 2%
    long = "photosynthesis " + "cat " * 499  # 1 in 500 = 0.2%
    assert stage(short).keep is False and stage(short).reason == REASON
    assert stage(long).keep is True
    assert stage(long).scores["blocked_share"] == pytest.approx(1 / 500)
    dense_long = "photosynthesis " * 5 + "cat " * 495  # 1%: exactly the share is dropped
    assert stage(dense_long).keep is False
    released = FrequencyStage(table_of({"photosynthesis": 6.0, "cat": 0.0}))
    assert released(long).keep is False  # any blocklisted word drops, whatever the length


def test_blocked_share_must_be_a_share():
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="min_blocked_share"):
            FrequencyStage(table_of({"a": 1.0}), min_blocked_share=bad)


def test_min_documents_drops_words_that_one_document_repeats():
    k5 = ["the cat sat"] * 6
    beyond = ["zorblax " * 30, "the mitochondria", "mitochondria now", "mitochondria here", "a mitochondria",
              "mitochondria then"]
    counts = bl.score_words(k5, beyond, min_count=5, min_documents=1).set_index("word")
    assert "zorblax" in counts.index and counts.loc["zorblax", "documents"] == 1
    spread = bl.score_words(k5, beyond, min_count=5, min_documents=5).set_index("word")
    assert "zorblax" not in spread.index
    assert spread.loc["mitochondria", "documents"] == 5
    assert set(spread.index) <= set(counts.index)


def test_min_documents_needs_document_counts():
    with pytest.raises(ValueError, match="document counts"):
        bl.score_counts({"a": 20}, 20, {"a": 5}, 5, min_documents=3)
    assert bl.count_documents(["owl owl bat", "owl", ""]) == {"owl": 2, "bat": 1}
