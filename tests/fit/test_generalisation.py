"""Leave one corpus out: every corpus scored by models that never saw it, the per-corpus keep rates
and the targets."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import pytest

from littlekit.filter.base import Decision
from littlekit.filter.filter_config import OperatingPoint
from littlekit.fit import generalisation as gen
from littlekit.fit.fasttext import DEFAULT_HYPER, train_fasttext
from littlekit.fit.recipe_fasttext import FastTextRecipe
from littlekit.stats import wilson_interval

pytest.importorskip("fasttext")

FAST = {"epoch": 15, "lr": 0.3, "dim": 16, "bucket": 10_000, "minn": 0, "maxn": 0, "wordNgrams": 1}
WORDS = {
    "K5": "cat dog ball sun play run jump red mom park tree fish".split(),
    "K8": "ratio percent equation history science debate region energy".split(),
    "K12": "hypothesis derivative parliament metaphor molecular economy".split(),
}
# three corpora: one with K5 and K8, one with K5 and K12, one Beyond-K-5 only
CORPORA = {"alpha": ("K5", "K8"), "beta": ("K5", "K12"), "gamma": ("K8", "K12")}


@dataclass(frozen=True)
class TinyRecipe:
    """A FastTextRecipe's interface with a small model's settings."""

    seed: int = 0

    def hyper(self):
        return {**DEFAULT_HYPER, **FAST, "seed": self.seed}


def corpus_labels(per_band: int = 10, seed: int = 0) -> pd.DataFrame:
    """Sentences from band vocabularies, each corpus with a word of its own."""
    rng = random.Random(seed)
    rows = []
    for corpus, bands in CORPORA.items():
        for band in bands:
            for i in range(per_band):
                text = " ".join(rng.choice(WORDS[band]) for _ in range(8)) + f" style{corpus}"
                rows.append(
                    {
                        "id": f"{corpus}-{band}-{i}",
                        "source": f"source-label:{corpus}",
                        "band": band,
                        "text": text,
                    }
                )
    return pd.DataFrame(rows)


class CountsDerivatives:
    """A stage 1 stand-in: drops texts with 'derivative', p95_aoa = number of K12 words."""

    name = "count"

    def __call__(self, text):
        p95 = float(sum(word in WORDS["K12"] for word in text.split()))
        return Decision("derivative" not in text, None, {"p95_aoa": p95})


def test_the_corpus_of_a_label_is_its_source_named_in_one_place():
    labels = pd.DataFrame(
        {"source": ["source-label:clear", "source-label:gutenberg", "source-label:new-one", "llm-judge"]},
        index=[4, 5, 6, 7],
    )
    corpora = gen.label_corpora(labels)
    assert list(corpora.index) == [4, 5, 6, 7]
    assert list(corpora) == ["CLEAR", "CCSS exemplar books", "new-one", "llm-judge"]


def test_each_corpus_is_scored_only_by_a_model_that_never_saw_it(tmp_path):
    labels = corpus_labels()
    recipe = TinyRecipe()
    scores = gen.leave_one_corpus_out_fasttext(labels, recipe, first_stage=CountsDerivatives())
    assert list(scores["id"]) == list(labels["id"])
    assert list(scores["corpus"]) == [s.removeprefix("source-label:") for s in labels["source"]]
    # one fold per corpus, and no other corpus in it
    assert scores.groupby("corpus")["fold"].nunique().eq(1).all()
    assert scores.groupby("fold")["corpus"].nunique().eq(1).all() and scores["fold"].nunique() == 3
    for corpus in CORPORA:
        held = scores["corpus"] == corpus
        fold = scores.loc[held, "fold"].iloc[0]
        trained_on = set(scores.loc[scores["fold"] != fold, "id"])
        assert trained_on.isdisjoint(scores.loc[held, "id"])
        assert trained_on == set(labels.loc[~labels["source"].str.endswith(corpus), "id"])
        # the scores are those of a model trained on exactly the other corpora's labels
        other = labels[labels["id"].isin(trained_on)]
        model = train_fasttext(other, tmp_path / f"without-{corpus}.bin", **recipe.hyper())
        expected = model.score_batch(labels.loc[held, "text"].tolist())
        np.testing.assert_allclose(scores.loc[held, "p_k5"], [s["probs"].get("K5", 0.0) for s in expected])
        assert list(scores.loc[held, "pred"]) == [s["band"] for s in expected]
    assert list(scores["first_stage_keeps"]) == [("derivative" not in t) for t in labels["text"]]
    assert list(scores["aoa_p95"]) == [CountsDerivatives()(t).scores["p95_aoa"] for t in labels["text"]]
    assert not scores["shares_text_with_training"].any()  # the sentences share no 8 words across corpora


def test_the_recipe_of_the_book_trains_the_out_of_corpus_models():
    labels = corpus_labels(per_band=4)
    scores = gen.leave_one_corpus_out_fasttext(
        labels, FastTextRecipe(epoch=2, dim=8), first_stage=None, overlap=False
    )
    assert scores["p_k5"].between(0, 1).all() and scores["first_stage_keeps"].all()
    assert scores["aoa_p95"].isna().all() and "shares_text_with_training" not in scores.columns


def test_one_corpus_cannot_be_left_out():
    labels = corpus_labels(per_band=2)
    with pytest.raises(ValueError, match="at least two corpora"):
        gen.leave_one_corpus_out_fasttext(labels, TinyRecipe(), corpora=["one"] * len(labels))
    with pytest.raises(ValueError, match="must match"):
        gen.leave_one_corpus_out_fasttext(labels, TinyRecipe(), corpora=["a", "b"])


def test_shared_text_across_corpora_is_flagged():
    base = "one two three four five six seven eight"
    texts = [base + " nine", "zero " + base, base + " ten", "a b c", "a b c"]
    flags = gen.shares_text_across(texts, ["x", "y", "x", "x", "z"])
    assert list(flags) == [True, True, True, True, True]
    flags = gen.shares_text_across(texts, ["x", "x", "x", "y", "y"])
    assert list(flags) == [False, False, False, False, False]


def random_scores(n: int = 600, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    bands = np.array(["K5", "K8", "K12", "OOS"])
    corpus = rng.choice(["a", "b", "c", "d"], n)
    band = rng.choice(bands, n)
    band[corpus == "c"] = "K5"  # a K-5-only corpus
    band[(corpus == "d") & (band == "K5")] = "OOS"  # a Beyond-only corpus
    return pd.DataFrame(
        {
            "id": [f"doc{i}" for i in range(n)],
            "corpus": corpus,
            "band": band,
            "pred": rng.choice(bands, n, p=[0.6, 0.2, 0.1, 0.1]),
            "p_k5": rng.uniform(0, 1, n),
            "first_stage_keeps": rng.uniform(0, 1, n) < 0.8,
            "aoa_p95": rng.uniform(6, 13, n),
            "enc_pred": rng.choice(bands, n, p=[0.7, 0.1, 0.1, 0.1]),
            "enc_p_k5": rng.uniform(0, 1, n),
        }
    )


def brute_force(scores, ft_min, enc_min, max_aoa, stages, population):
    rows = {}
    for corpus in sorted(set(scores["corpus"])):
        counts = {"n_k5": 0, "k5_kept": 0, "n_beyond": 0, "beyond_kept": 0}
        for r in scores[scores["corpus"] == corpus].itertuples():
            first = r.first_stage_keeps and (max_aoa is None or r.aoa_p95 <= max_aoa)
            if population == "first_stage" and not first:
                continue
            keep = True
            if "aoa" in stages:
                keep = keep and first
            if "fasttext" in stages:
                keep = keep and r.pred == "K5" and (ft_min is None or r.p_k5 >= ft_min)
            if "encoder" in stages:
                keep = keep and r.enc_pred == "K5" and (enc_min is None or r.enc_p_k5 >= enc_min)
            side = "k5" if r.band == "K5" else "beyond"
            counts[f"n_{side}"] += 1
            counts[f"{side}_kept"] += int(keep)
        rows[corpus] = counts
    return rows


STRICT_POINT = OperatingPoint(fasttext_min_k5_prob=0.4, encoder_min_k5_prob=0.5, max_aoa=11.0)


@pytest.mark.parametrize(
    "point, stages, population",
    [
        (None, None, "all"),
        (STRICT_POINT, None, "all"),
        (STRICT_POINT, None, "first_stage"),
        ({"fasttext_min_k5_prob": 0.7}, ("aoa", "fasttext"), "all"),
        ({"fasttext_min_k5_prob": 0.7, "max_aoa": 10.0}, ("aoa", "fasttext"), "first_stage"),
        ({"encoder_min_k5_prob": 0.2}, ("fasttext", "encoder"), "all"),
    ],
)
def test_the_rates_equal_a_brute_force_count(point, stages, population):
    scores = random_scores()
    check = gen.corpus_check(scores, point, stages=stages, population=population)
    thresholds = gen.stage_thresholds(point)
    ft_min, enc_min, max_aoa = (
        thresholds.fasttext_min_k5_prob,
        thresholds.encoder_min_k5_prob,
        thresholds.max_aoa,
    )
    expected = brute_force(scores, ft_min, enc_min, max_aoa, stages or gen.default_stages(scores), population)
    table = check.table
    assert list(table.index) == ["a", "b", "c", "d"]
    for corpus, counts in expected.items():
        row = table.loc[corpus]
        for name, value in counts.items():
            assert row[name] == value, (corpus, name)
        for side in ("k5", "beyond"):
            n, kept = counts[f"n_{side}"], counts[f"{side}_kept"]
            if n == 0:
                assert np.isnan(row[f"{side}_share"]) and row[f"{side}_holds"] is None
                continue
            assert row[f"{side}_share"] == pytest.approx(kept / n)
            low, high = wilson_interval(kept, n)
            assert (row[f"{side}_low"], row[f"{side}_high"]) == pytest.approx((low, high))
    assert table.loc["c", "n_beyond"] == 0 and table.loc["d", "n_k5"] == 0


def test_the_targets_are_flagged_per_corpus():
    # corpus a: 10 K-5 (4 kept), 100 Beyond (3 kept); b: 10 K-5 (3 kept), 100 Beyond (4 kept);
    # c: K-5 only, none kept; d: Beyond only, 0 kept
    rows = []

    def add(corpus, band, n, kept):
        for i in range(n):
            rows.append((corpus, band, "K5" if i < kept else "K8", 0.9))

    add("a", "K5", 10, 4)
    add("a", "K8", 100, 3)
    add("b", "K5", 10, 3)
    add("b", "K12", 100, 4)
    add("c", "K5", 5, 0)
    add("d", "OOS", 20, 0)
    scores = pd.DataFrame(rows, columns=["corpus", "band", "pred", "p_k5"]).assign(
        id=lambda f: [f"id{i}" for i in range(len(f))], first_stage_keeps=True, aoa_p95=5.0
    )
    check = gen.corpus_check(scores, None, stages=("aoa", "fasttext"))
    table = check.table
    assert list(table["k5_holds"]) == [True, False, False, None]
    assert list(table["beyond_holds"]) == [True, False, None, True]
    assert not check.holds and len(check.failures) == 3
    assert "b: keeps 30.0% of its K-5 labels (< 40%)" in check.verdict()
    assert "b: keeps 4.0% of its Beyond-K-5 labels (> 3%)" in check.verdict()
    assert "c: keeps 0.0% of its K-5 labels" in check.verdict() and "a:" not in check.verdict()
    # the targets are parameters
    lax = gen.corpus_check(scores, None, stages=("aoa", "fasttext"), min_k5=0.0, max_beyond=0.04)
    assert lax.holds and lax.verdict().startswith("The targets hold on every held-out corpus")
    # a stricter threshold drops everything at p_k5 0.9
    strict = gen.corpus_check(scores, {"fasttext_min_k5_prob": 0.95}, stages=("aoa", "fasttext"))
    assert strict.table["k5_kept"].sum() == 0 and strict.table["beyond_kept"].sum() == 0
    shown = gen.check_display(check)
    assert list(shown["K-5 >= 40%"]) == ["yes", "NO", "NO", "—"]
    assert shown.loc["a", "Beyond kept [95% Wilson]"].startswith("3.0% [")
    with pytest.raises(KeyError, match="no enc_pred, enc_p_k5 column"):
        gen.corpus_check(scores, None, stages=("aoa", "fasttext", "encoder"))
    with pytest.raises(ValueError, match="population"):
        gen.corpus_check(scores, None, population="some")
    with pytest.raises(KeyError, match="unknown thresholds"):
        gen.corpus_check(scores, {"min_k5_prob": 0.5})


def test_the_encoder_is_trained_without_the_held_out_corpus(one_thread):
    from littlekit.fit.encoder_training import EncoderTrainConfig
    from littlekit.fit.recipe_encoder import EncoderRecipe, EncoderStart

    labels = corpus_labels(per_band=6)
    scores = gen.leave_one_corpus_out_fasttext(labels, TinyRecipe(), first_stage=None, overlap=False)
    recipe = EncoderRecipe(encoder_base="tiny-modernbert", train_sample_size=20, vocab_size=200)
    config = EncoderTrainConfig(epochs=1, max_steps=2, max_length=16, batch_size=8, device="cpu")
    start = EncoderStart("built per corpus", "a tiny ModernBERT per held-out corpus")
    score = scores["corpus"] != "gamma"
    both = gen.leave_one_corpus_out_encoder(scores, labels, recipe, start, config, score=score)
    assert list(both["id"]) == list(scores["id"]) and "text" not in both.columns
    # stage 3 is the encoder with its grade head: the head's band and P3(K5), cross-fitted by corpus,
    # with the encoder's own outputs beside them
    assert both.loc[score, "enc_pred"].isin(["K5", "not-K5"]).all()
    assert both.loc[score, "enc_model_pred"].isin(["K5", "K8", "K12", "OOS"]).all()
    assert both.loc[~score, "enc_p_k5"].isna().all()
    plain = gen.leave_one_corpus_out_encoder(
        scores, labels, replace(recipe, grade_head=False), start, config, score=score
    )
    assert plain.loc[score, "enc_pred"].isin(["K5", "K8", "K12", "OOS"]).all()
    assert "enc_model_pred" not in plain.columns
    check = gen.corpus_check(both, None)
    assert check.stages == ("aoa", "fasttext", "encoder")
    assert check.table.loc["gamma", "beyond_kept"] == 0  # not scored by the encoder: not kept


def test_stage_four_verdicts_join_the_check_when_present():
    labels = pd.DataFrame({"id": ["a", "b"], "text": ["The owl sat in the tree.", "Solve 2x + 3 = 7 for x."]})
    scores = pd.DataFrame({
        "id": ["a", "b"], "band": ["K5", "K8"], "corpus": ["c", "c"], "pred": ["K5", "K5"],
        "p_k5": [0.9, 0.9], "first_stage_keeps": [True, True], "aoa_p95": [5.0, 5.0],
    })
    with_symbolic = gen.add_stage_scores(scores, labels, "symbolic")
    assert with_symbolic["symbolic_keeps"].tolist() == [True, False]  # an equation to solve: stage 4
    assert gen.default_stages(with_symbolic) == ("aoa", "fasttext", "symbolic")
    assert gen.corpus_keeps(with_symbolic).tolist() == [True, False]
    assert gen.corpus_keeps(with_symbolic, stages=("aoa", "fasttext")).tolist() == [True, True]
    with pytest.raises(KeyError, match="symbolic_keeps"):
        gen.corpus_keeps(scores, stages=("aoa", "symbolic"))


def test_loco_holds_tests_the_beyond_ceiling_of_the_named_corpora_only():
    scores = pd.DataFrame({
        "id": list("abcdef"),
        "corpus": ["x", "x", "x", "y", "y", "y"],
        "band": ["K8", "K8", "K5", "K8", "K8", "K5"],
        "pred": ["K5"] * 6,
        "p_k5": [0.9, 0.4, 0.9, 0.95, 0.95, 0.9],
        "first_stage_keeps": [True] * 6,
        "aoa_p95": [5.0] * 6,
    })
    row = pd.Series({"fasttext_min_k5_prob": 0.5, "encoder_min_k5_prob": None, "max_aoa": None})
    assert gen.loco_holds(scores, ["x"], max_beyond=0.5, min_rows=1)(row)  # x keeps 1 of its 2 Beyond labels
    assert not gen.loco_holds(scores, ["x"], max_beyond=0.4, min_rows=1)(row)
    assert not gen.loco_holds(scores, ["x", "y"], max_beyond=0.5, min_rows=1)(row)  # y keeps both
    # two Beyond labels are too few to show a rate at the default minimum: neither corpus is tested
    assert gen.loco_holds(scores, ["x", "y"], max_beyond=0.0)(row)
    strict = row.copy()
    strict["fasttext_min_k5_prob"] = 0.96
    assert gen.loco_holds(scores, ["x", "y"], max_beyond=0.0, min_rows=1)(strict)
    assert "at most 0.03 of the Beyond-K-5 labels of x, y kept" in gen.loco_rule(["x", "y"])


def test_side_by_side_puts_every_corpus_of_either_label_set_in_one_table():
    scores = pd.DataFrame({
        "id": list("abcd"),
        "corpus": ["web", "web", "kids", "kids"],
        "band": ["K5", "K8", "K5", "K5"],
        "pred": ["K5", "K5", "K5", "K8"],
        "p_k5": [0.9, 0.95, 0.8, 0.1],
        "first_stage_keeps": [True] * 4,
        "aoa_p95": [5.0] * 4,
    })
    other = scores.assign(corpus=["books", "books", "web", "web"])
    checks = {
        "judge": gen.corpus_check(scores, None, stages=("aoa", "fasttext")),
        "source": gen.corpus_check(other, None, stages=("aoa", "fasttext")),
    }
    table = gen.side_by_side(checks)
    assert list(table.index) == ["books", "kids", "web"]
    assert table.loc["kids", ("judge", "K-5 kept")] == 0.5
    assert pd.isna(table.loc["kids", ("source", "K-5 kept")])
    assert table.loc["web", ("judge", "Beyond kept")] == 1.0 and table.loc["web", ("source", "n Beyond")] == 0


def test_kept_precision_is_the_k5_share_of_what_is_kept_per_group():
    frame = pd.DataFrame({
        "corpus": ["web"] * 4 + ["kids"] * 2,
        "band": ["K5", "K8", "K8", "K5", "K5", "K8"],
        "kept": [True, True, False, False, False, False],
    })
    table = gen.kept_precision(frame)
    assert table.loc["web", "kept"] == 2 and table.loc["web", "precision"] == 0.5
    assert table.loc["web", "precision_low"] < 0.5 < table.loc["web", "precision_high"]
    assert table.loc["kids", "kept"] == 0 and pd.isna(table.loc["kids", "precision"])


def test_the_out_of_fold_cascade_drops_what_stage_1_drops_and_skips_unscored_labels():
    labels = pd.DataFrame({
        "id": ["a", "b", "c", "d"],
        "text": ["The cat sat on the mat.", "The dog ran.", "Solve x^2 = 4 now.", "A bird sang."],
        "source": ["llm-judge:web"] * 3 + ["source-label:arc"],
        "band": ["K5", "K8", "K5", "K5"],
        "corpus": ["dclm", "dclm", "c4", "arc"],
    })
    fasttext_oof = labels[["id", "source", "band"]].assign(
        pred="K5", p_k5=[0.9, 0.95, 0.9, 0.9], first_stage_keeps=[True, False, True, True], aoa_p95=5.0
    )
    encoder_oof = pd.DataFrame({"id": ["a", "c"], "enc_pred": ["K5", "K5"], "enc_p_k5": [0.8, 0.9]})
    frame = gen.out_of_fold_cascade(fasttext_oof, encoder_oof, labels, {"fasttext_min_k5_prob": 0.5})
    verdicts = frame.set_index("id")["kept"]
    assert verdicts.to_dict() == {"a": True, "b": False, "c": False}  # b: stage 1; c: stage 4; d: unscored
    assert set(frame["corpus"]) == {"dclm", "c4"}


def test_the_side_by_side_display_formats_counts_as_counts_and_shares_as_shares():
    table = pd.DataFrame(
        {
            ("judge", "n K-5"): [1.0, None],
            ("judge", "K-5 kept"): [1.0, None],
            ("judge", "n Beyond"): [0.0, 3.0],
        },
        index=["tiny", "other"],
    )
    shown = gen.side_by_side_display(table)
    assert shown.loc["tiny"].tolist() == ["1", "100.0%", "0"]
    assert shown.loc["other"].tolist() == ["—", "—", "3"]
