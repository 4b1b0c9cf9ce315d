"""Stage names to stage objects, so `--stages aoa,symbolic` and a notebook build the same cascade.

A stage joins by registering a factory that takes `StageOptions` and returns the stage:

    @register_stage("fasttext", "fastText grade classifier: keep __label__K5")
    def _fasttext(options: StageOptions) -> Stage:
        from littlekit.stages.fasttext import FastTextStage
        return FastTextStage(options.fasttext_model)

Factories import their module when called, so naming one stage never pays for (or breaks on)
another stage's heavy dependencies. A new stage with new settings adds fields to StageOptions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from littlekit.filter.base import Stage

P95_MAX_AOA = 12.0
OOV_THRESHOLD = 0.05
MIN_BEYOND_SCORE = 4.0
IMPUTE_CHOICES = ("published", "fitted", "none")
ENCODER_GATES = ("agree", "all")  # agree: the paper's agreement gate; all: score every document


@dataclass(frozen=True)
class StageOptions:
    """Settings for every registered stage; each factory reads the fields it needs."""

    aoa_table: str | None = None  # csv/parquet with columns word, aoa; None = embedded Kuperman table
    aoa_impute: str = "published"  # Zipf imputation for words missing from the table
    max_aoa: float = P95_MAX_AOA
    max_oov: float = OOV_THRESHOLD
    fasttext_model: str | None = None  # supervised fastText .bin with __label__K5/K8/K12/OOS
    fasttext_min_k5_prob: float | None = None  # None: released rule (top label K5); else also P(K5) >= it
    encoder_model: str | None = None  # transformers classifier directory or Hub id (ModernBERT)
    encoder_batch_size: int = 32
    encoder_gate: str = "agree"  # run the encoder only where the fastText band = the AoA band
    encoder_min_k5_prob: float | None = None  # None: released rule (argmax K5); else also P(K5) >= it
    device: str | None = None  # encoder device; None = cuda when available, else cpu
    word_table: str | None = None  # frequency stage: word, beyond_score (word_log_odds.parquet)
    min_beyond_score: float = MIN_BEYOND_SCORE

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_oov <= 1.0:
            raise ValueError(f"max_oov must be a fraction between 0 and 1, got {self.max_oov}")
        if not math.isfinite(self.max_aoa):
            raise ValueError(f"max_aoa must be a finite number of years, got {self.max_aoa}")
        if not math.isfinite(self.min_beyond_score):
            raise ValueError(f"min_beyond_score must be finite, got {self.min_beyond_score}")
        for name in ("fasttext_min_k5_prob", "encoder_min_k5_prob"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability between 0 and 1 or None, got {value}")
        if self.encoder_batch_size < 1:
            raise ValueError(f"encoder_batch_size must be at least 1, got {self.encoder_batch_size}")
        if self.encoder_gate not in ENCODER_GATES:
            raise ValueError(
                f"encoder_gate must be one of {', '.join(ENCODER_GATES)}, got {self.encoder_gate!r}"
            )
        if self.aoa_impute not in IMPUTE_CHOICES:
            raise ValueError(
                f"aoa_impute must be one of {', '.join(IMPUTE_CHOICES)}, got {self.aoa_impute!r}"
            )


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


@dataclass(frozen=True)
class BandAgreementGate:
    """The paper's encoder gate, read from the scores the earlier stages gave a document.

    Open when the fastText band (stage 2's `band`) equals the band of the document's p95 AoA
    (stage 1's `p95_aoa`, banded by littlekit.filter.encoder.aoa_band: K5 up to 12 years, K8 up
    to 15, K12 up to 19, else OOS). A document whose gate is closed is dropped by the encoder
    stage with reason `encoder_gate`, unscored, so the expensive model runs only where the two
    cheap signals agree. In the published order (aoa, fasttext, encoder) with the default
    thresholds every document reaching stage 3 already has both bands K5 and the gate is always
    open; it closes when stage 1 is looser than the K-5 band (max_aoa above 12), dropping the
    documents whose AoA band is above K5 even though stage 1 let them through.
    """

    aoa_stage: str = "aoa"
    fasttext_stage: str = "fasttext"
    reason: str = "encoder_gate"  # the reason code EncoderStage's own gate uses

    @property
    def requires(self) -> tuple[str, str]:
        return (self.aoa_stage, self.fasttext_stage)

    def check(self, prior: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """{"gate_open", "fasttext_band", "aoa_band"}; KeyError when a stage's scores are missing."""
        from littlekit.filter.encoder import agreement_gate, aoa_band, band_from_scores

        missing = [name for name in self.requires if name not in prior]
        if missing:
            raise KeyError(f"the agreement gate needs the {' and '.join(missing)} scores of this document")
        fasttext = band_from_scores(dict(prior[self.fasttext_stage]))
        aoa = aoa_band(prior[self.aoa_stage].get("p95_aoa"))
        return {"gate_open": agreement_gate(fasttext, aoa), "fasttext_band": fasttext, "aoa_band": aoa}


AGREEMENT_GATE = BandAgreementGate()


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


@register_stage("aoa", "stage 1: 95th-percentile age of acquisition <= max_aoa, OOV share <= max_oov")
def _aoa(options: StageOptions) -> Stage:
    from littlekit.filter.aoa import AoAStage
    from littlekit.filter.lexicon import AoALexicon

    lexicon = AoALexicon.load(options.aoa_table, impute=options.aoa_impute)
    return AoAStage(lexicon, max_aoa=options.max_aoa, max_oov=options.max_oov)


@register_stage("fasttext", "stage 2: fastText grade classifier's top label is K5 (needs fasttext_model)")
def _fasttext(options: StageOptions) -> Stage:
    from littlekit.filter.fasttext import FastTextStage

    model = _required(options.fasttext_model, "fasttext", "fasttext_model")
    return FastTextStage(model, min_k5_prob=options.fasttext_min_k5_prob)


@register_stage(
    "encoder", "stage 3: encoder (ModernBERT) grade classifier's argmax is K5 (needs encoder_model)"
)
def _encoder(options: StageOptions) -> Stage:
    from littlekit.filter.encoder import EncoderStage

    model = _required(options.encoder_model, "encoder", "encoder_model")
    stage = EncoderStage(
        model,
        batch_size=options.encoder_batch_size,
        device=options.device,
        min_k5_prob=options.encoder_min_k5_prob,
    )
    if options.encoder_gate == "agree":
        stage.prior_gate = AGREEMENT_GATE  # applied by littlekit.filter.cascade.decide_all
    return stage


@register_stage("symbolic", "stage 4: no exponents, roots, logs, trigonometry, algebra or chemistry")
def _symbolic(options: StageOptions) -> Stage:
    from littlekit.filter.symbolic import SymbolicStage

    return SymbolicStage()


def _required(value: str | None, stage: str, option: str) -> str:
    if value is None:
        flag = "--" + option.replace("_", "-")
        raise ValueError(f"stage {stage!r} needs {option} (command line: {flag} PATH)")
    return value


@register_stage("frequency", "stage 5: no word with beyond_score >= min_beyond_score (word table)")
def _frequency(options: StageOptions) -> Stage:
    from littlekit.filter.frequency import FrequencyStage

    return FrequencyStage(options.word_table, min_beyond_score=options.min_beyond_score)
