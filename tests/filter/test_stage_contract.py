"""The stage contract of littlekit.filter.base, StageOptions as the one place of every stage setting,
and the one agreement gate that the cascade and the datatrove blocks both apply."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from typing import Any

import pandas as pd
import pytest
from datatrove.data import Document as DTDocument
from test_pipeline import BandStage  # the fastText stand-in the cascade tests use

from littlekit.cli import build_parser, main
from littlekit.filter import encoder as encoder_module
from littlekit.filter.aoa import OOV_THRESHOLD, P95_MAX_AOA, AoAStage
from littlekit.filter.base import Decision, PriorGate, Stage
from littlekit.filter.base import PriorGate as CascadePriorGate
from littlekit.filter.cascade import DROPPED, KEPT, Cascade, decide_all
from littlekit.filter.datatrove.blocks import SCORES_KEY, LittleKitFilter
from littlekit.filter.encoder import (
    AGREEMENT_GATE,
    AgreementGate,
    BandAgreementGate,
    EncoderStage,
    aoa_band,
    gate_scores,
)
from littlekit.filter.fasttext import FastTextStage
from littlekit.filter.frequency import FrequencyStage
from littlekit.filter.lexicon import AoALexicon
from littlekit.filter.registry import StageOptions, build_stages
from littlekit.filter.runner import options_from_args
from littlekit.filter.symbolic.rules import FAMILIES
from littlekit.filter.symbolic.stage import SymbolicStage
from littlekit.filter.word_table import MIN_BEYOND_SCORE
from littlekit.io import Document

TEXTS = [
    "The cat sat on the mat.",
    "We can solve x^2 + 3x = 10 for the big dog.",
    "Mitochondria and photosynthesis, notwithstanding.",
    "",
    "  \n ",
    "The water is H2O.",
]


class WordCount(Stage):
    """A stage with `score` and `decide` only: its score_batch is the base's loop."""

    name = "words"

    def __init__(self):
        self.calls = 0

    def score(self, text: str) -> dict[str, Any]:
        self.calls += 1
        return {"n": len(text.split())}

    def decide(self, scores: dict[str, Any]) -> Decision:
        return Decision(scores["n"] > 0, None if scores["n"] else "words_empty", scores)


class Batched(WordCount):
    """The same stage with its own batched call, which records each batch's size."""

    name = "batched"

    def __init__(self):
        super().__init__()
        self.batches: list[int] = []

    def score_batch(self, texts):
        self.batches.append(len(texts))
        return [self.score(text) for text in texts]


def lexicon() -> AoALexicon:
    return AoALexicon({"the": 3.0, "cat": 4.0, "sat": 4.0, "atom": 13.5, "science": 5.0}, impute="none")


# --- the base ------------------------------------------------------------------------------------


def test_the_base_declares_score_batch_the_prior_gate_and_the_device():
    stage = WordCount()
    assert stage.score_batch(TEXTS) == [WordCount().score(text) for text in TEXTS]
    assert stage.score_batch([]) == []
    assert stage.prior_gate is None and stage.device == "cpu"
    assert not stage.batched and Batched().batched
    assert CascadePriorGate is PriorGate  # one declaration, re-exported where it is applied


@pytest.mark.parametrize(
    "stage",
    [AoAStage(lexicon()), SymbolicStage(), FrequencyStage({"mitochondria": 6.0, "cat": -1.0})],
    ids=["aoa", "symbolic", "frequency"],
)
def test_the_default_score_batch_loop_equals_scoring_one_text_at_a_time(stage):
    assert not stage.batched
    assert stage.score_batch(TEXTS) == [stage.score(text) for text in TEXTS]
    assert decide_all(stage, TEXTS) == [stage(text) for text in TEXTS]


def test_only_a_stage_with_its_own_score_batch_is_scored_in_batches():
    assert FastTextStage.score_batch is not Stage.score_batch
    assert EncoderStage.score_batch is not Stage.score_batch
    assert AoAStage.score_batch is Stage.score_batch
    plain, batched = WordCount(), Batched()
    assert decide_all(plain, TEXTS) == decide_all(batched, TEXTS)
    assert plain.calls == len(TEXTS) and batched.batches == [len(TEXTS)]


# --- StageOptions: every setting, defaults defined once --------------------------------------------

# constructor parameter -> the StageOptions field that sets it (objects, not settings, are left out)
SETTINGS = {
    AoAStage: {"max_aoa": "max_aoa", "max_oov": "max_oov"},
    FastTextStage: {"min_k5_prob": "fasttext_min_k5_prob"},
    EncoderStage: {
        "batch_size": "encoder_batch_size",
        "max_length": "encoder_max_length",
        "device": "device",
        "attn_implementation": "encoder_attn_implementation",
        "min_k5_prob": "encoder_min_k5_prob",
        "grade_head": "encoder_grade_head",
        "fitted_precision": "encoder_fitted_precision",
    },
    SymbolicStage: {"families": "symbolic_families"},
    FrequencyStage: {"min_beyond_score": "min_beyond_score", "min_blocked_share": "min_blocked_share"},
}
OBJECTS = {"lexicon", "model", "tokenizer", "gate", "prior_gate", "table"}  # built from options


@pytest.mark.parametrize("cls", list(SETTINGS), ids=lambda cls: cls.__name__)
def test_every_constructor_setting_is_a_stage_option_with_the_same_default(cls):
    parameters = inspect.signature(cls.__init__).parameters
    settings = {name for name in parameters if name != "self"} - OBJECTS
    assert settings == set(SETTINGS[cls])
    defaults = StageOptions()
    for parameter, option in SETTINGS[cls].items():
        assert parameters[parameter].default == getattr(defaults, option), (cls.__name__, parameter)


def test_the_defaults_are_the_stage_modules_constants():
    defaults = StageOptions()
    assert (defaults.max_aoa, defaults.max_oov) == (P95_MAX_AOA, OOV_THRESHOLD) == (12.0, 0.05)
    assert defaults.min_beyond_score == MIN_BEYOND_SCORE == 4.0
    assert defaults.encoder_batch_size == encoder_module.BATCH_SIZE == 32
    assert encoder_module.AOA_BAND_EDGES[0] == ("K5", P95_MAX_AOA)  # school ages, the same 12 years
    assert defaults.aoa_impute == inspect.signature(AoALexicon.load).parameters["impute"].default


def test_the_command_line_defaults_are_stage_options_defaults(tmp_path):
    args = build_parser(["filter"]).parse_args(["filter", "--in", str(tmp_path / "x.jsonl"), "--out", "o/"])
    options = options_from_args(args, ["aoa", "symbolic"])
    assert options == StageOptions()


def test_the_new_options_reach_the_built_stages_and_are_checked(tmp_path):
    aoa, symbolic = build_stages(
        "aoa,symbolic",
        {"max_aoa": 9.0, "max_oov": 0.2, "aoa_impute": "none", "symbolic_families": ["roots", "exponents"]},
    )
    assert (aoa.max_aoa, aoa.max_oov, aoa.lexicon.impute) == (9.0, 0.2, "none")
    assert symbolic.families == ("roots", "exponents")
    assert {rule.family for rule in symbolic.rules} == {"roots", "exponents"}
    assert symbolic("2x + 3 = 7 for the cat").keep  # equations are not checked
    assert not symbolic("x^3 and the cat").keep
    assert StageOptions(symbolic_families="roots, equations").symbolic_families == ("roots", "equations")
    assert build_stages("symbolic")[0].families == FAMILIES
    table = tmp_path / "words.csv"
    table.write_text("word,beyond_score\nmitochondria,3.0\ncat,-1.0\n", encoding="utf-8")
    (frequency,) = build_stages("frequency", {"word_table": str(table), "min_beyond_score": 2.5})
    assert frequency.min_beyond_score == 2.5 and frequency.blocked == {"mitochondria"}
    with pytest.raises(ValueError, match="symbolic_families must name at least one of equations"):
        StageOptions(symbolic_families=["algebra"])
    with pytest.raises(ValueError, match="symbolic_families"):
        StageOptions(symbolic_families=[])
    with pytest.raises(ValueError, match="encoder_max_length must be at least 3"):
        StageOptions(encoder_max_length=2)
    with pytest.raises(ValueError, match="aoa_impute must be one of published, fitted, none"):
        StageOptions(aoa_impute="guess")


class RecordingEncoder(Stage):
    """Stands in for EncoderStage in the registry: records what the factory passed, loads nothing."""

    name = "encoder"

    def __init__(self, model, **kwargs):
        self.model, self.kwargs = model, kwargs
        self.prior_gate = kwargs["prior_gate"]


def test_the_encoder_factory_passes_every_encoder_option_at_construction(monkeypatch):
    monkeypatch.setattr(encoder_module, "EncoderStage", RecordingEncoder)
    options = {
        "encoder_model": "some/dir",
        "encoder_batch_size": 4,
        "encoder_max_length": 96,
        "encoder_attn_implementation": "sdpa",
        "encoder_min_k5_prob": 0.4,
        "encoder_grade_head": "none",
        "encoder_fitted_precision": "cpu/float32",
        "device": "cpu",
    }
    (stage,) = build_stages("encoder", options)
    assert stage.model == "some/dir"
    assert stage.kwargs == {
        "batch_size": 4,
        "max_length": 96,
        "attn_implementation": "sdpa",
        "min_k5_prob": 0.4,
        "grade_head": "none",
        "fitted_precision": "cpu/float32",
        "device": "cpu",
        "prior_gate": AGREEMENT_GATE,
    }
    assert set(vars(stage)) == {"model", "kwargs", "prior_gate"}  # nothing set after construction
    (ungated,) = build_stages("encoder", {**options, "encoder_gate": "all"})
    assert ungated.prior_gate is None


@pytest.mark.slow  # a fastText model trained here (about a second)
def test_the_fasttext_option_reaches_the_stage(tmp_path):
    from littlekit.fit.fasttext import train_fasttext

    labelled = pd.DataFrame(
        {"text": ["the cat sat"] * 20 + ["quantum field theory"] * 20, "band": ["K5"] * 20 + ["K12"] * 20}
    )
    model = str(tmp_path / "ft.bin")
    train_fasttext(labelled, model, epoch=5, thread=1)
    (stage,) = build_stages("fasttext", {"fasttext_model": model, "fasttext_min_k5_prob": 0.7})
    assert stage.min_k5_prob == 0.7
    assert build_stages("fasttext", {"fasttext_model": model})[0].min_k5_prob is None


@pytest.mark.slow  # builds a tiny ModernBERT (torch and transformers imports: ~10 s)
def test_the_encoder_options_reach_a_real_encoder_stage(tmp_path):
    from littlekit.fit.encoder import build_tiny_modernbert

    model_dir = tmp_path / "encoder"
    build_tiny_modernbert(
        ["the cat sat on the mat", "quantum field theory"], model_dir, vocab_size=60, hidden_size=32,
        num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
    )  # fmt: skip
    common = {"encoder_model": str(model_dir), "device": "cpu"}
    (default,) = build_stages("encoder", common)
    (stage,) = build_stages(
        "encoder",
        {**common, "encoder_max_length": 16, "encoder_batch_size": 3, "encoder_min_k5_prob": 0.9,
         "encoder_attn_implementation": "sdpa", "encoder_gate": "all"},
    )  # fmt: skip
    assert (stage.max_length, stage.batch_size, stage.min_k5_prob) == (16, 3, 0.9)
    assert stage.model.config._attn_implementation == "sdpa"
    assert default.model.config._attn_implementation == "eager"  # the CPU default
    assert stage.prior_gate is None and default.prior_gate is AGREEMENT_GATE
    assert default.max_length == 64 and default.batch_size == 32 and default.min_k5_prob is None
    long_text = " ".join(["the cat sat on the mat"] * 20)
    assert stage.score(long_text)["n_tokens"] == 16


# --- the one agreement gate ----------------------------------------------------------------------


@pytest.mark.parametrize("p95", [3.0, 12.0, 12.5, 15.0, 18.0, 25.0, None])
@pytest.mark.parametrize("band", ["K5", "K8", "K12", "OOS", None])
def test_the_prior_gate_and_the_standalone_gate_decide_alike(p95, band):
    prior = {"aoa": {"p95_aoa": p95}, "fasttext": {"band": band}}
    standalone = AgreementGate(fasttext_band_of=lambda text: band, aoa_band_of=lambda text: aoa_band(p95))
    assert AGREEMENT_GATE.check(prior) == standalone.check("any text") == gate_scores(band, aoa_band(p95))
    assert AGREEMENT_GATE.check(prior)["gate_open"] == (band is not None and band == aoa_band(p95))


class GatedEncoder(BandStage):
    """Stands in for the encoder: keeps everything it scores; gated at construction, as the registry does."""

    name = "encoder"

    def __init__(self, prior_gate: BandAgreementGate | None = AGREEMENT_GATE):
        self.prior_gate = prior_gate
        self.seen: list[str] = []

    def score(self, text: str) -> dict[str, Any]:
        self.seen.append(text)
        return {"band": "K5"}


def test_the_cascade_and_the_datatrove_block_gate_through_the_same_code(monkeypatch):
    calls = []

    def counted(fasttext_band, aoa_band):
        calls.append((fasttext_band, aoa_band))
        return gate_scores(fasttext_band, aoa_band)

    monkeypatch.setattr(encoder_module, "gate_scores", counted)
    texts = ["the cat sat", "the atom sat", "the science cat"]

    def fresh():
        return [AoAStage(lexicon(), max_aoa=14.0), BandStage(), GatedEncoder()]

    stages = fresh()
    outcomes = list(Cascade(stages).run([Document(str(i), t, {}, i + 1) for i, t in enumerate(texts)]))
    in_process = [(o.status, o.stage, o.reason, o.scores) for o in outcomes]
    assert [row[:3] for row in in_process] == [
        (KEPT, None, None),
        (DROPPED, "encoder", "encoder_gate"),
        (DROPPED, "fasttext", "fasttext_K12"),
    ]
    assert calls == [("K5", "K5"), ("K5", "K8")] and stages[2].seen == ["the cat sat"]

    calls.clear()
    blocks = [LittleKitFilter(stage) for stage in fresh()]
    docs = [DTDocument(text=t, id=str(i)) for i, t in enumerate(texts)]
    results: dict[str, tuple] = {}
    live = docs
    for block in blocks:
        verdicts = block.filter_batch(live)
        survivors = []
        for doc, verdict in zip(live, verdicts, strict=True):
            if verdict is True:
                survivors.append(doc)
            else:
                results[doc.id] = (DROPPED, block.stage_name, verdict[1], doc.metadata[SCORES_KEY])
        live = survivors
    for doc in live:
        results[doc.id] = (KEPT, None, None, doc.metadata[SCORES_KEY])
    assert [results[str(i)] for i in range(len(texts))] == in_process
    assert calls == [("K5", "K5"), ("K5", "K8")]


# --- the command line ----------------------------------------------------------------------------


def test_the_new_flags_reach_stage_options(tmp_path):
    argv = ["filter", "--in", str(tmp_path / "x.jsonl"), "--out", "o/", "--encoder-max-length", "128",
            "--encoder-attn-implementation", "eager", "--symbolic-families", "roots,exponents"]  # fmt: skip
    options = options_from_args(build_parser(argv).parse_args(argv), ["symbolic"])
    assert options.encoder_max_length == 128 and options.encoder_attn_implementation == "eager"
    assert options.symbolic_families == ("roots", "exponents")


def test_symbolic_families_on_the_command_line(tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"id": "eq", "text": "We can solve 2x + 3 = 7 for the cat."}) + "\n")
    common = ["filter", "--in", str(source), "--stages", "symbolic", "--quiet"]
    assert main([*common, "--out", str(tmp_path / "all.jsonl")]) == 0
    assert (tmp_path / "all.jsonl").read_text() == ""
    assert main([*common, "--out", str(tmp_path / "roots.jsonl"), "--symbolic-families", "roots"]) == 0
    assert json.loads((tmp_path / "roots.jsonl").read_text())["id"] == "eq"
    assert main([*common, "--out", str(tmp_path / "bad.jsonl"), "--symbolic-families", "algebra"]) == 2
    assert "symbolic_families must name" in capsys.readouterr().err


def test_the_light_stages_import_no_model_library():
    code = (
        "import sys\n"
        "from littlekit.cli import build_parser\n"
        "from littlekit.filter.registry import build_stages\n"
        "build_parser(['filter'])\n"
        "build_stages('aoa,symbolic')\n"
        "print([m for m in ('torch', 'transformers', 'fasttext', 'datatrove') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
