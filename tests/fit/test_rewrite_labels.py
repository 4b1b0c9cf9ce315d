"""The K-5 rewrites as training labels and the two operating points: rewrites train the classifiers
only (their original's fold, never held out, never measured on) and the default point is the paper's."""

from __future__ import annotations

import argparse

import pandas as pd
import pytest

from littlekit.fit.command import add_fit_parser, point_settings
from littlekit.fit.folds import label_groups, tuning_sources
from littlekit.fit.generalisation import corpus_of, leave_one_corpus_out_fasttext
from littlekit.fit.labels import (
    DEFAULT_LABELS,
    REWRITE_PREFIX,
    build_labels,
    build_rewrite_labels,
    split_labels,
    training_only,
)
from littlekit.fit.points import DEFAULT_POINT, POINTS, point_rule
from littlekit.fit.recipe_encoder import EncoderRecipe
from littlekit.fit.recipe_fasttext import FastTextRecipe


@pytest.fixture(scope="module")
def labels() -> pd.DataFrame:
    return build_labels(DEFAULT_LABELS)


def test_the_default_labels_hold_the_rewrites_as_k5_training_only_labels(labels):
    rewrites = labels[training_only(labels["source"])]
    assert DEFAULT_LABELS == "judge,rewrites"
    assert len(rewrites) > 1000
    assert set(rewrites["band"]) == {"K5"}
    assert rewrites["source"].str.startswith(REWRITE_PREFIX).all()
    assert not training_only(labels.loc[~labels["id"].isin(rewrites["id"]), "source"]).any()


def test_a_rewrite_shares_its_original_fold_unit(labels):
    from littlekit.databuild import corpora

    rewrites = corpora.load_k5_rewrites()
    groups = label_groups(labels).set_axis(labels["id"])
    pairs = rewrites[rewrites["id"].isin(groups.index) & rewrites["source_id"].isin(groups.index)]
    assert len(pairs) > 1000  # most originals stay labels beside their rewrite
    assert (groups[pairs["id"]].to_numpy() == groups[pairs["source_id"]].to_numpy()).all()


def test_rewrites_are_never_held_out_and_leave_the_held_out_draw_as_it_was(labels):
    train, held = split_labels(labels, holdout_fraction=0.2, seed=0)
    assert not training_only(held["source"]).any()
    _, held_without = split_labels(labels[~training_only(labels["source"])], holdout_fraction=0.2, seed=0)
    assert sorted(held["id"]) == sorted(held_without["id"])


def test_rewrites_share_their_original_corpus_and_set_no_rate(labels):
    assert corpus_of(REWRITE_PREFIX + "web") == corpus_of("llm-judge:web") == "web"
    assert corpus_of(REWRITE_PREFIX + "simplewiki") == "Simple Wikipedia"
    for tune_on in ("auto", "judge", "all"):
        sources = tuning_sources(tune_on, labels)
        assert not any(str(s).startswith(REWRITE_PREFIX) for s in sources)


def test_leaving_a_corpus_out_trains_on_the_rewrites_but_scores_none_of_them(labels):
    small = pd.concat([
        labels[training_only(labels["source"])].head(60),
        labels[labels["source"] == "llm-judge:web"].head(120),
        labels[labels["source"] == "llm-judge:simplewiki"].head(120),
    ], ignore_index=True)
    scores = leave_one_corpus_out_fasttext(small, FastTextRecipe(epoch=1, dim=4), first_stage=None)
    assert len(scores) == 240 and not training_only(scores["source"]).any()


def test_rewrite_labels_leave_out_text_shared_with_validation():
    from littlekit.fit.labels import validation_texts
    from littlekit.text import shingles

    held = {s for text in validation_texts(None) for s in shingles(text)}
    rewrites = build_rewrite_labels()
    assert not any(held & set(shingles(text)) for text in rewrites["text"])


def test_the_default_point_is_the_papers_error_rates():
    paper = point_rule(DEFAULT_POINT)
    assert DEFAULT_POINT == "paper" and paper.beyond_keep_target == 0.025
    assert paper.target_confidence is None and paper.min_web_precision is None
    assert paper.operating_rule == "pooled" and paper.tune_on == "graded"
    fasttext, encoder = FastTextRecipe(), EncoderRecipe()
    assert fasttext.beyond_keep_target == 0.025
    assert fasttext.target_confidence is None and fasttext.min_web_precision is None
    assert (encoder.operating_rule, encoder.min_web_precision) == ("pooled", None)
    with pytest.raises(ValueError, match="unknown operating point 'strict'.*paper, precision"):
        point_rule("strict")


def parse_fit(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_fit_parser(parser.add_subparsers())
    return parser.parse_args(["fit", "all", "--out", "x", *argv])


def test_the_fit_command_takes_a_point_and_explicit_options_over_it():
    paper = POINTS["paper"]
    assert point_settings(parse_fit()) == (paper.fasttext_settings(), paper.encoder_settings())
    fasttext, encoder = point_settings(parse_fit("--point", "precision"))
    assert fasttext == {
        "beyond_keep_target": 0.02, "target_confidence": 0.95, "min_web_precision": 0.9, "tune_on": "auto"
    }
    assert encoder == {"operating_rule": "every-kind", "min_web_precision": 0.9}
    fasttext, encoder = point_settings(
        parse_fit("--point", "precision", "--min-web-precision", "none", "--beyond-keep-target", "0.01")
    )
    assert fasttext["min_web_precision"] is None and encoder["min_web_precision"] is None
    assert fasttext["beyond_keep_target"] == 0.01 and encoder["operating_rule"] == "every-kind"


def test_no_rewrite_enters_the_pretraining_pool():
    from littlekit.databuild import corpora
    from littlekit.lm.corpus_select import pretraining_pool

    pool_texts = set(pretraining_pool()["text"])
    assert not pool_texts & set(corpora.load_k5_rewrites()["text"])
