"""Stage names to stage objects, so `--stages aoa,symbolic` and a notebook build the same cascade.

A stage joins by registering a factory that takes `StageOptions` and returns the stage:

    @register_stage("fasttext", "fastText grade classifier: keep __label__K5")
    def _fasttext(options: StageOptions) -> Stage:
        return FastTextStage(options.fasttext_model, min_k5_prob=options.fasttext_min_k5_prob)

StageOptions carries every setting of every stage's constructor, each defaulting to the constant
its stage module defines, so a factory builds a stage complete and nothing changes it afterwards;
a new stage with new settings adds fields to StageOptions. Importing the stage modules here is
cheap: none of them imports its heavy library (fastText, torch, transformers) before a stage is
built, so naming `aoa,symbolic` never pays for (or breaks on) the models.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from littlekit.filter.aoa import OOV_THRESHOLD, P95_MAX_AOA, AoAStage
from littlekit.filter.base import Stage, check_probability
from littlekit.filter.encoder import AGREEMENT_GATE, MIN_MAX_LENGTH, EncoderStage
from littlekit.filter.encoder import BATCH_SIZE as ENCODER_BATCH_SIZE
from littlekit.filter.encoder import MIN_K5_PROB as ENCODER_MIN_K5_PROB
from littlekit.filter.fasttext import MIN_K5_PROB as FASTTEXT_MIN_K5_PROB
from littlekit.filter.fasttext import FastTextStage
from littlekit.filter.frequency import FrequencyStage
from littlekit.filter.lexicon import DEFAULT_IMPUTE, IMPUTE_MODES, AoALexicon
from littlekit.filter.symbolic import FAMILIES, SymbolicStage
from littlekit.filter.word_table import MIN_BEYOND_SCORE

# options that are numbers (True is not 1: a bool read from a config file is refused)
NUMBER_OPTIONS = (
    "max_aoa",
    "max_oov",
    "fasttext_min_k5_prob",
    "encoder_min_k5_prob",
    "min_beyond_score",
    "min_blocked_share",
)
ENCODER_GATES = ("agree", "all")  # agree: the paper's agreement gate; all: score every document
GRADE_HEAD_MODES = ("auto", "none")  # auto: stage 3's grade head beside the model when there is one


@dataclass(frozen=True)
class StageOptions:
    """Settings for every registered stage; each factory reads the fields it needs."""

    aoa_table: str | None = None  # csv/parquet with columns word, aoa; None = the embedded lemma table
    aoa_impute: str = DEFAULT_IMPUTE  # Zipf imputation for words missing from the table
    max_aoa: float = P95_MAX_AOA
    max_oov: float = OOV_THRESHOLD
    fasttext_model: str | None = None  # supervised fastText .bin with __label__K5/K8/K12/OOS
    fasttext_min_k5_prob: float | None = FASTTEXT_MIN_K5_PROB  # None: released rule (top label K5)
    encoder_model: str | None = None  # transformers classifier directory or Hub id (ModernBERT)
    encoder_batch_size: int = ENCODER_BATCH_SIZE
    encoder_max_length: int | None = None  # tokens read per document; None: the model's training length
    encoder_attn_implementation: str | None = None  # eager, sdpa, flash_attention_2; None: by device
    encoder_gate: str = "agree"  # run the encoder only where the fastText band = the AoA band
    encoder_min_k5_prob: float | None = ENCODER_MIN_K5_PROB  # None: released rule (argmax K5)
    encoder_grade_head: str = "auto"  # auto: the grade head beside the model decides; none: the argmax
    device: str | None = None  # encoder device; None = cuda when available, else cpu
    symbolic_families: tuple[str, ...] | None = None  # notation families checked; None: all of them
    word_table: str | None = None  # frequency stage: word, beyond_score (word_log_odds.parquet)
    min_beyond_score: float = MIN_BEYOND_SCORE
    min_blocked_share: float | None = None  # frequency stage: None = any blocklisted word drops

    def __post_init__(self) -> None:
        for name in NUMBER_OPTIONS:
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
                raise ValueError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        batch = self.encoder_batch_size
        if isinstance(batch, bool) or not isinstance(batch, numbers.Integral):
            raise ValueError(f"encoder_batch_size must be a whole number, got {self.encoder_batch_size!r}")
        if not 0.0 <= self.max_oov <= 1.0:
            raise ValueError(f"max_oov must be a fraction between 0 and 1, got {self.max_oov}")
        if not math.isfinite(self.max_aoa):
            raise ValueError(f"max_aoa must be a finite number of years, got {self.max_aoa}")
        if not math.isfinite(self.min_beyond_score):
            raise ValueError(f"min_beyond_score must be finite, got {self.min_beyond_score}")
        if self.min_blocked_share is not None and not 0.0 < self.min_blocked_share <= 1.0:
            raise ValueError(f"min_blocked_share must be in (0, 1] or None, got {self.min_blocked_share}")
        for name in ("fasttext_min_k5_prob", "encoder_min_k5_prob"):
            check_probability(name, getattr(self, name))
        if self.encoder_batch_size < 1:
            raise ValueError(f"encoder_batch_size must be at least 1, got {self.encoder_batch_size}")
        if self.encoder_max_length is not None and self.encoder_max_length < MIN_MAX_LENGTH:
            raise ValueError(
                f"encoder_max_length must be at least {MIN_MAX_LENGTH} tokens or None, "
                f"got {self.encoder_max_length}"
            )
        if self.encoder_gate not in ENCODER_GATES:
            raise ValueError(
                f"encoder_gate must be one of {', '.join(ENCODER_GATES)}, got {self.encoder_gate!r}"
            )
        if self.encoder_grade_head not in GRADE_HEAD_MODES:
            raise ValueError(
                f"encoder_grade_head must be one of {', '.join(GRADE_HEAD_MODES)}, "
                f"got {self.encoder_grade_head!r}"
            )
        if self.aoa_impute not in IMPUTE_MODES:
            raise ValueError(f"aoa_impute must be one of {', '.join(IMPUTE_MODES)}, got {self.aoa_impute!r}")
        if self.symbolic_families is not None:
            # a tuple whatever it came as (a list read back from JSON, "equations,roots")
            object.__setattr__(self, "symbolic_families", _families(self.symbolic_families))


def _families(given: str | Iterable[str]) -> tuple[str, ...]:
    names = [part.strip() for part in given.split(",")] if isinstance(given, str) else [*given]
    names = [name for name in names if name]
    unknown = [name for name in names if name not in FAMILIES]
    if unknown or not names:
        raise ValueError(f"symbolic_families must name at least one of {', '.join(FAMILIES)}; got {given!r}")
    return tuple(names)


StageFactory = Callable[[StageOptions], Stage]
_FACTORIES: dict[str, tuple[StageFactory, str]] = {}


def register_stage(name: str, description: str = "") -> Callable[[StageFactory], StageFactory]:
    """Decorator: make `name` buildable by build_stages."""

    def add(factory: StageFactory) -> StageFactory:
        if name in _FACTORIES:
            raise ValueError(f"stage {name!r} is already registered")
        _FACTORIES[name] = (factory, description)
        return factory

    return add


def known_stages() -> dict[str, str]:
    """Registered stage names, in cascade order of the published filter, with a line on each."""
    return {name: description for name, (_, description) in _FACTORIES.items()}


def stage_names(spec: str | Sequence[str]) -> list[str]:
    """Validated stage names from "aoa,symbolic" or a list; ValueError names the known ones."""
    names = [part.strip() for part in spec.split(",")] if isinstance(spec, str) else [*spec]
    names = [name for name in names if name]
    if not names:
        raise ValueError(f"no stages given; known stages: {', '.join(_FACTORIES)}")
    unknown = [name for name in names if name not in _FACTORIES]
    if unknown:
        raise ValueError(
            f"unknown stage {', '.join(map(repr, unknown))}; known stages: {', '.join(_FACTORIES)}"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"stage listed twice: {', '.join(repeated)}")
    return names


def build_stages(
    spec: str | Sequence[str], options: StageOptions | Mapping[str, Any] | None = None
) -> list[Stage]:
    """The stages named in `spec`, in that order, built with `options` (a StageOptions or a dict)."""
    names = stage_names(spec)
    if options is None:
        options = StageOptions()
    elif isinstance(options, Mapping):
        options = StageOptions(**options)
    return [_FACTORIES[name][0](options) for name in names]


def check_gate_order(names: Sequence[str], options: StageOptions | Mapping[str, Any] | None = None) -> None:
    """ValueError (with the fix) when the encoder's agreement gate is on but the stages whose scores
    it reads do not run before the encoder."""
    if isinstance(options, Mapping):
        options = StageOptions(**options)
    gate_on = options is None or options.encoder_gate == "agree"
    if not gate_on or "encoder" not in names:
        return
    before = names[: list(names).index("encoder")]
    missing = [name for name in AGREEMENT_GATE.requires if name not in before]
    if missing:
        raise ValueError(
            f"the encoder's agreement gate (encoder_gate='agree', the default; --encoder-gate agree) reads "
            f"the {' and '.join(AGREEMENT_GATE.requires)} scores, so {' and '.join(missing)} must run "
            "before encoder: e.g. --stages aoa,fasttext,encoder, or score every document with "
            "--encoder-gate all"
        )


def _required(value: str | None, stage: str, option: str) -> str:
    if value is None:
        flag = "--" + option.replace("_", "-")
        raise ValueError(f"stage {stage!r} needs {option} (command line: {flag} PATH)")
    return value


@register_stage("aoa", "stage 1: 95th-percentile age of acquisition <= max_aoa, OOV share <= max_oov")
def _aoa(options: StageOptions) -> Stage:
    lexicon = AoALexicon.load(options.aoa_table, impute=options.aoa_impute)
    return AoAStage(lexicon, max_aoa=options.max_aoa, max_oov=options.max_oov)


@register_stage("fasttext", "stage 2: fastText grade classifier's top label is K5 (needs fasttext_model)")
def _fasttext(options: StageOptions) -> Stage:
    model = _required(options.fasttext_model, "fasttext", "fasttext_model")
    return FastTextStage(model, min_k5_prob=options.fasttext_min_k5_prob)


@register_stage(
    "encoder", "stage 3: encoder (ModernBERT) grade classifier's argmax is K5 (needs encoder_model)"
)
def _encoder(options: StageOptions) -> Stage:
    model = _required(options.encoder_model, "encoder", "encoder_model")
    return EncoderStage(
        model,
        batch_size=options.encoder_batch_size,
        max_length=options.encoder_max_length,
        device=options.device,
        attn_implementation=options.encoder_attn_implementation,
        min_k5_prob=options.encoder_min_k5_prob,
        grade_head=options.encoder_grade_head,
        prior_gate=AGREEMENT_GATE if options.encoder_gate == "agree" else None,
    )


@register_stage("symbolic", "stage 4: no exponents, roots, logs, trigonometry, algebra or chemistry")
def _symbolic(options: StageOptions) -> Stage:
    return SymbolicStage(options.symbolic_families)


@register_stage("frequency", "stage 5: blocklisted words (beyond_score >= min_beyond_score) below a share")
def _frequency(options: StageOptions) -> Stage:
    return FrequencyStage(
        options.word_table,
        min_beyond_score=options.min_beyond_score,
        min_blocked_share=options.min_blocked_share,
    )
