"""Filter stage 3: a transformers grade classifier (ModernBERT in the paper), keep argmax class K5.

The model is any `AutoModelForSequenceClassification` directory or Hub id with four classes in
the released order K5, K8, K12, OOS (class 0 = K5, the class the released `filter_k5.py` keeps):

    EncoderStage("runs/default/artifacts/models/modernbert_grade")  # the embedded default's
                                                      #   artifacts: a pretrained all-MiniLM-L6-v2
                                                      #   (BERT) whose top littlekit.fit.encoder_top trained
    EncoderStage("path/to/models/modernbert_grade")   # the released filter's directory
    EncoderStage("answerdotai/ModernBERT-base")       # a Hub id (fine-tune it first: its head is new)

Documents are cut at `max_length` tokens (by default the length the model was fine-tuned at, as
saved in its tokenizer's `model_max_length`, at most MAX_LENGTH = 2,048 as in the paper), scored
in padded batches of `batch_size` (BATCH_SIZE) texts of similar length, on the device asked for
(index kept: "cuda:1" is cuda:1; `littlekit.filter.encoder_device`), by default on CUDA when it
is available (bf16 autocast there) and on the CPU otherwise. A run whose precision is not the one
its thresholds were fitted in (`encoder_fitted_precision`, from filter_config.json) is warned of.
Scores: `band` (argmax), `prob` (its probability), `probs` (every band's probability, so notebooks
can sweep a threshold on `probs["K5"]` without re-scoring) and `n_tokens` (tokens the model saw,
after truncation). A text without any non-space character is not scored: it is dropped with
reason `encoder_empty`, as stage 1 drops it with `aoa_empty`.

Grade head. When the model directory holds `grade_head.json` (`littlekit.filter.grade_head`,
which `littlekit fit encoder` writes beside the model it trains), the stage also scores each
document's readability and AoA features and keeps it when the head's P3(K5) >= 0.5 (and >= the
minimum P(K5), when one is set) instead of when the argmax is K5; scores gain `head_p_k5` and a
document the head drops gets reason `encoder_head_below`. The released model has no head, so it
keeps its released rule. `grade_head=None` turns a head off; a `GradeHead` passes one in.

Agreement gate. The paper runs ModernBERT only on the documents whose fastText band agrees with
their AoA band (about 266M of 6.95B). `aoa_band` turns a document's p95 AoA into a band (edges
from school ages, see AOA_BAND_EDGES), `band_from_scores` reads stage 2's band, and `gate_scores`
compares the two: the one implementation of the gate, used two ways. In the cascade the stage
carries `prior_gate=AGREEMENT_GATE` (a `BandAgreementGate`, what the registry passes for
`encoder_gate="agree"`), which reads the scores stages 1 and 2 already gave the document;
standalone, `EncoderStage(..., gate=AgreementGate.from_stages(aoa, fasttext))` scores the two
cheap stages itself. Either way a document whose bands disagree is dropped with reason
`encoder_gate` (GATE_REASON) without running the model. In the published order (aoa -> fasttext
-> encoder) every document reaching stage 3 already has AoA band K5 and fastText band K5, so there
the gate never closes; it matters when the encoder sees documents that did not pass both earlier
stages.

torch and transformers are imported inside the functions that load or run a model, so importing
this module (the registry does, for every stage) costs neither.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from littlekit.argtypes import positive_int
from littlekit.filter.base import (
    Artifact,
    Decision,
    Option,
    PriorGate,
    Stage,
    StageSpec,
    check_optional_probability,
    check_probability,
    minimum_probability_keeps,
    probability_columns,
    probability_or_released,
    top_band_keeps,
)
from littlekit.filter.encoder_device import (
    check_precision,
    encoder_device,
    precision_warning,
    resolve_device,
    scoring_precision,
)
from littlekit.filter.file_checks import model_folder_problem
from littlekit.grades import BANDS

LABELS: tuple[str, ...] = BANDS  # class index -> band; index 0 = K5 as in the released filter
LABEL_FILE = "labels.json"
MAX_LENGTH = 2048  # the paper's truncation, and the cap on a model's own training length
MIN_MAX_LENGTH = 3  # [CLS], one token, [SEP]
BATCH_SIZE = 32
MIN_K5_PROB: float | None = None  # None: the released rule, the argmax alone decides
MODEL_INPUTS = ("input_ids", "attention_mask")
GATE_REASON = "encoder_gate"  # a document the agreement gate closes on
HEAD_REASON = "encoder_head_below"  # a document the grade head scores below its keep level (0.5)
PROBE_TEXT = "The cat sat on the mat. We play with the big red ball in the park."
REBUILD = (
    "rebuild it with `littlekit fit encoder --data DATA --out ARTIFACTS` "
    "(or littlekit.fit.encoder_training.fine_tune), or copy the released models/modernbert_grade/ again"
)

# AoA band edges: the age (years) at the end of the band's last school grade. A pupil is about
# grade + 6 years old during a grade and a year older when it ends, so K-5 ends at 5 + 7 = 12
# (the same value as stage 1's default p95 maximum, littlekit.filter.aoa.P95_MAX_AOA), grades 6-8
# at 8 + 7 = 15 and grades 9-12 at 12 + 7 = 19. A p95 AoA above the last edge is out of scope (OOS).
# The edges do not follow a stage 1 maximum that is set otherwise: they are school ages.
AOA_BAND_EDGES: tuple[tuple[str, float], ...] = (("K5", 12.0), ("K8", 15.0), ("K12", 19.0))


def aoa_band(p95_aoa: float | None, edges: Sequence[tuple[str, float]] = AOA_BAND_EDGES) -> str | None:
    """The band of a document's 95th-percentile AoA: the first band whose edge it does not exceed.

    None (stage 1 could not score the document) gives None. Edges are inclusive, so 12.0 is K5
    just as stage 1 keeps p95 = 12.0.
    """
    if p95_aoa is None or (isinstance(p95_aoa, float) and math.isnan(p95_aoa)):
        return None
    for band, edge in edges:
        if p95_aoa <= edge:
            return band
    return "OOS"


def agreement_gate(fasttext_band: str | None, aoa_band: str | None) -> bool:
    """True when both bands are known and equal: the paper's condition for running the encoder."""
    return fasttext_band is not None and fasttext_band == aoa_band


def band_from_scores(scores: Mapping[str, Any]) -> str | None:
    """A classifier stage's band from its scores: `band`, else a fastText `label` like __label__K5."""
    band = scores.get("band")
    if band is None and scores.get("label"):
        band = str(scores["label"]).removeprefix("__label__")
    return band


def gate_scores(fasttext_band: str | None, aoa_band: str | None) -> dict[str, Any]:
    """The agreement gate's verdict on one document, as the scores it adds to the encoder's:
    {"gate_open", "fasttext_band", "aoa_band"}. Every gate below decides through this."""
    return {
        "gate_open": agreement_gate(fasttext_band, aoa_band),
        "fasttext_band": fasttext_band,
        "aoa_band": aoa_band,
    }


@dataclass(frozen=True)
class BandAgreementGate:
    """The paper's encoder gate as a prior gate: read from the scores the earlier stages gave a document.

    Open when the fastText band (stage 2's `band`) equals the band of the document's p95 AoA
    (stage 1's `p95_aoa`, banded by `aoa_band`: K5 up to 12 years, K8 up to 15, K12 up to 19, else
    OOS). A document whose gate is closed is dropped by the encoder stage with reason
    `encoder_gate`, unscored, so the expensive model runs only where the two cheap signals agree.
    In the published order (aoa, fasttext, encoder) with the default thresholds every document
    reaching stage 3 already has both bands K5 and the gate is always open; it closes when stage 1
    is looser than the K-5 band (max_aoa above 12), dropping the documents whose AoA band is above
    K5 even though stage 1 let them through.
    """

    aoa_stage: str = "aoa"
    fasttext_stage: str = "fasttext"
    reason: str = GATE_REASON
    edges: tuple[tuple[str, float], ...] = AOA_BAND_EDGES

    @property
    def requires(self) -> tuple[str, str]:
        return (self.aoa_stage, self.fasttext_stage)

    def check(self, prior: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """{"gate_open", "fasttext_band", "aoa_band"}; KeyError when a stage's scores are missing."""
        missing = [name for name in self.requires if name not in prior]
        if missing:
            raise KeyError(f"the agreement gate needs the {' and '.join(missing)} scores of this document")
        return gate_scores(
            band_from_scores(prior[self.fasttext_stage]),
            aoa_band(prior[self.aoa_stage].get("p95_aoa"), self.edges),
        )


AGREEMENT_GATE = BandAgreementGate()  # the gate `encoder_gate="agree"` gives the registry's encoder


@dataclass
class AgreementGate:
    """The same gate for an encoder used on its own: it bands each text itself (configurable on/off).

    Built from two functions text -> band, or from the two stages with `from_stages`; decides
    with `gate_scores`, as BandAgreementGate does.
    """

    fasttext_band_of: Callable[[str], str | None]
    aoa_band_of: Callable[[str], str | None]
    enabled: bool = True

    @classmethod
    def from_stages(
        cls,
        aoa_stage: Stage,
        fasttext_stage: Stage,
        edges: Sequence[tuple[str, float]] = AOA_BAND_EDGES,
        enabled: bool = True,
    ) -> AgreementGate:
        """A gate that scores each text with stage 1 (p95_aoa) and stage 2 (band or label)."""
        return cls(
            fasttext_band_of=lambda text: band_from_scores(fasttext_stage.score(text)),
            aoa_band_of=lambda text: aoa_band(aoa_stage.score(text).get("p95_aoa"), edges),
            enabled=enabled,
        )

    def check(self, text: str) -> dict[str, Any]:
        """{"gate_open", "fasttext_band", "aoa_band"}; always open when the gate is disabled."""
        if not self.enabled:
            return {"gate_open": True, "fasttext_band": None, "aoa_band": None}
        return gate_scores(self.fasttext_band_of(text), self.aoa_band_of(text))


class PrecisionWarning(UserWarning):
    """The encoder scores in another precision than the one its thresholds were fitted in."""


def pick_device(device: str | None = None) -> str:
    """The device to run on, as a string with its index kept: the one asked for, else (None or
    "auto") "cuda" when available, else "cpu"; ValueError for a GPU this machine lacks."""
    return str(encoder_device(device))


def default_attention(device: Any) -> str:
    """ "sdpa" on CUDA; "eager" on the CPU, where ModernBERT's eager attention measured about twice
    as fast as sdpa for training (torch 2.13 CPU, sequences of ~220 tokens, masks always present)."""
    return "sdpa" if str(device).startswith("cuda") else "eager"


def load_encoder(
    model_dir_or_id: str | Path, device: str | None = None, attn_implementation: str | None = None
):
    """(model, tokenizer) from a saved directory or a Hub id, in eval mode on `device`.

    `attn_implementation`: "eager", "sdpa" or "flash_attention_2"; None picks default_attention.
    """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    device = encoder_device(device)
    local = Path(model_dir_or_id).is_dir()
    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(
            str(model_dir_or_id),
            attn_implementation=attn_implementation or default_attention(device),
            output_loading_info=True,
        )
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir_or_id))
    except Exception as error:  # safetensors, torch, json and transformers each raise their own
        if not local:
            raise
        raise ValueError(
            f"encoder directory {model_dir_or_id} cannot be loaded ({type(error).__name__}: "
            f"{str(error)[:300]}); the weights or config are damaged: {REBUILD}"
        ) from error
    missing = list(info.get("missing_keys") or [])
    if local and missing:  # transformers would fill them with random numbers and carry on
        raise ValueError(
            f"encoder directory {model_dir_or_id}: its weights lack {len(missing)} of the model's "
            f"tensors (e.g. {', '.join(missing[:3])}), so they are not this config's model: {REBUILD}"
        )
    return model.to(device).eval(), tokenizer


def model_labels(model) -> tuple[str, ...]:
    """The band of each class index: the config's id2label when it names bands, else LABELS order.

    The released directory may carry generic names (LABEL_0...); the released script reads
    class 0 as K5, so generic names fall back to K5, K8, K12, OOS.
    """
    n = model.config.num_labels
    names = tuple(str(model.config.id2label.get(i, "")) for i in range(n))
    if set(names) <= set(LABELS) and len(set(names)) == n:
        return names
    if n != len(LABELS):
        raise ValueError(f"the model has {n} classes and no band names; expected {len(LABELS)}: {LABELS}")
    return LABELS


def default_max_length(tokenizer) -> int:
    """The truncation a model was trained with: its tokenizer's model_max_length, capped at 2,048.

    `fine_tune` saves the tokenizer with model_max_length = its training max_length, so the
    embedded default scores at the length it learned; ModernBERT-base says 8,192, cut to the
    paper's 2,048. A tokenizer without a real limit (transformers' huge sentinel) gets 2,048.
    """
    limit = getattr(tokenizer, "model_max_length", None) or MAX_LENGTH
    return int(min(limit, MAX_LENGTH))


def save_label_map(out_dir: str | Path, labels: Sequence[str] = LABELS) -> Path:
    """Write labels.json ({"labels": [...], "keep": "K5"}) beside the model for other tools."""
    path = Path(out_dir) / LABEL_FILE
    path.write_text(json.dumps({"labels": list(labels), "keep": "K5"}, indent=1) + "\n", encoding="utf-8")
    return path


def predict_probs(
    model,
    tokenizer,
    texts: Sequence[str],
    batch_size: int = BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    device: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities [n, classes], tokens seen [n]) for texts, in their input order.

    Texts are scored in batches of similar character length (sorted, then put back) so little
    compute goes to padding; each is cut at `max_length` tokens including [CLS] and [SEP].
    `device`: where the inputs go, index kept (the model's own device, e.g. "cuda:1"); None: the
    device of the model's parameters.
    """
    import torch

    device = resolve_device(device) if device else next(model.parameters()).device
    n_classes = model.config.num_labels
    probs = np.zeros((len(texts), n_classes), dtype=np.float32)
    n_tokens = np.zeros(len(texts), dtype=np.int64)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        encoded = tokenizer(
            [texts[i] for i in chunk],
            truncation=True,
            max_length=max_length,
            padding=True,
            return_tensors="pt",
        )
        inputs = {key: encoded[key].to(device) for key in MODEL_INPUTS}
        with torch.inference_mode(), autocast:
            logits = model(**inputs).logits.float()
        probs[chunk] = torch.softmax(logits, dim=-1).cpu().numpy()
        n_tokens[chunk] = encoded["attention_mask"].sum(dim=1).numpy()
    return probs, n_tokens


class EncoderStage(Stage):
    """Keep a document when the encoder's most probable class is K5 (class 0 in the released model)."""

    name = "encoder"

    def __init__(
        self,
        model: str | Path | Any,
        tokenizer: Any | None = None,
        batch_size: int = BATCH_SIZE,
        max_length: int | None = None,
        device: str | None = None,
        gate: AgreementGate | None = None,
        attn_implementation: str | None = None,
        min_k5_prob: float | None = MIN_K5_PROB,
        prior_gate: PriorGate | None = None,
        grade_head: Any = "auto",
        fitted_precision: str | None = None,
    ):
        """`model`: a directory or Hub id (loaded with AutoModel/AutoTokenizer), or a loaded model
        passed with its `tokenizer`. `max_length`: None reads the model's training length
        (default_max_length). `gate`: an AgreementGate that bands each text itself, or None.
        `prior_gate`: a gate on the earlier stages' scores, applied by the cascade (the registry
        passes AGREEMENT_GATE for encoder_gate="agree"), or None. `attn_implementation`: None picks
        default_attention for the device. `min_k5_prob`: None keeps the released rule (argmax K5);
        a number also requires P(K5) >= it (the head's P3(K5) when there is a head). `grade_head`:
        "auto" loads `grade_head.json` from a model directory that has one, "none" (or None) uses no
        head, a `littlekit.filter.grade_head.GradeHead` is used as given. `fitted_precision`: the
        precision ("cpu/float32") the thresholds were fitted in; scoring in another one warns
        (PrecisionWarning), None states none. `device`: a device string ("cuda:1" keeps its index;
        None or "auto": cuda when available, else cpu)."""
        if batch_size < 1 or (max_length is not None and max_length < MIN_MAX_LENGTH):
            raise ValueError(
                f"batch_size must be >= 1 and max_length >= {MIN_MAX_LENGTH}, got {batch_size}, {max_length}"
            )
        check_probability("min_k5_prob", min_k5_prob)
        loaded_here = isinstance(model, str | Path)
        if loaded_here:
            self.model, self.tokenizer = load_encoder(model, device, attn_implementation)
        else:
            if tokenizer is None:
                raise ValueError("a loaded model needs its tokenizer")
            self.model, self.tokenizer = model.to(encoder_device(device)).eval(), tokenizer
        self.device = str(next(self.model.parameters()).device)  # "cuda:1" stays cuda:1, never "cuda"
        self.precision = scoring_precision(self.device)
        self.fitted_precision = fitted_precision
        self.labels = model_labels(self.model)
        self.keep_index = self.labels.index("K5")
        self.batch_size = batch_size
        self.max_length = max_length or default_max_length(self.tokenizer)
        self.gate = gate
        self.prior_gate = prior_gate
        self.min_k5_prob = min_k5_prob
        self.grade_head = _grade_head(model, grade_head)
        if loaded_here:
            self.self_check(str(model))
        warning = precision_warning(self.precision, fitted_precision)
        if warning:
            warnings.warn(warning, PrecisionWarning, stacklevel=2)

    def self_check(self, where: str = "the encoder") -> None:
        """Score a probe text once at load: ValueError when the model raises or answers with
        probabilities that are not finite (damaged weights that still load)."""
        try:
            probs, _ = predict_probs(
                self.model, self.tokenizer, [PROBE_TEXT], 1, self.max_length, self.device
            )
        except Exception as error:
            raise ValueError(
                f"encoder {where} fails its self check: scoring a probe text raised "
                f"{type(error).__name__}: {str(error)[:300]}; {REBUILD}"
            ) from error
        if not np.isfinite(probs).all():
            raise ValueError(
                f"encoder {where} fails its self check: a probe text got probabilities "
                f"{probs[0].tolist()} (damaged weights); {REBUILD}"
            )

    def score(self, text: str) -> dict[str, Any]:
        """band, prob, probs, n_tokens (plus the gate's bands when a gate is set)."""
        return self.score_batch([text])[0]

    def score_batch(self, texts: Sequence[str]) -> list[dict[str, Any]]:
        """Scores of many texts at once: one padded batch per `batch_size` texts instead of one
        forward pass per text."""
        results: list[dict[str, Any]] = [_unscored() for _ in texts]
        to_score = []
        for i, text in enumerate(texts):
            if not text or not text.strip():
                continue
            if self.gate is not None:
                results[i].update(self.gate.check(text))
                if not results[i]["gate_open"]:
                    continue
            to_score.append(i)
        if to_score:
            chosen = [texts[i] for i in to_score]
            probs, n_tokens = predict_probs(
                self.model, self.tokenizer, chosen, self.batch_size, self.max_length, self.device
            )
            head_p = self._head_p_k5(chosen, probs[:, self.keep_index])
            for row, i in enumerate(to_score):
                best = int(np.argmax(probs[row]))
                results[i].update(
                    band=self.labels[best],
                    prob=float(probs[row, best]),
                    probs={band: float(p) for band, p in zip(self.labels, probs[row], strict=True)},
                    n_tokens=int(n_tokens[row]),
                )
                if head_p is not None:
                    results[i]["head_p_k5"] = float(head_p[row])
        return results

    def _head_p_k5(self, texts: list[str], encoder_p_k5: np.ndarray) -> np.ndarray | None:
        if self.grade_head is None:
            return None
        from littlekit.filter.grade_head import readability_features

        features = readability_features(texts)
        return self.grade_head.p_k5(encoder_p_k5 if self.grade_head.uses_encoder else None, features)

    def decide(self, scores: dict[str, Any]) -> Decision:
        """Keep iff the argmax band is K5 (and P(K5) >= min_k5_prob when set); otherwise reason
        encoder_<band>, encoder_low_k5_prob, encoder_gate or encoder_empty. With a grade head:
        keep iff P3(K5) >= 0.5 (and >= min_k5_prob when set), else encoder_head_below or
        encoder_low_k5_prob."""
        band = scores.get("band")
        if band is None:
            reason = GATE_REASON if scores.get("gate_open") is False else "encoder_empty"
            return Decision(False, reason, scores)
        if self.grade_head is not None:
            p3 = scores["head_p_k5"]
            if p3 < self.grade_head.keep_at:
                return Decision(False, HEAD_REASON, scores)
            if self.min_k5_prob is not None and p3 < self.min_k5_prob:
                return Decision(False, "encoder_low_k5_prob", scores)
            return Decision(True, None, scores)
        if band == self.labels[self.keep_index]:
            if self.min_k5_prob is not None and scores["probs"][band] < self.min_k5_prob:
                return Decision(False, "encoder_low_k5_prob", scores)
            return Decision(True, None, scores)
        return Decision(False, f"encoder_{band}", scores)


def rule_scores(scores: Sequence[Mapping[str, Any]]) -> tuple[list[str | None], list[float]]:
    """(band, P(K5)) that stage 3's keep rule reads, per `EncoderStage.score_batch` result, in the
    form `littlekit.fit.thresholds.kept_at` takes: the argmax band and P(K5), or with a grade head
    "K5"/"not-K5" at 0.5 and the head's P3(K5). None and NaN where the text was not scored."""
    from littlekit.filter.grade_head import BELOW_K5, KEEP_AT

    bands: list[str | None] = []
    p_k5: list[float] = []
    for score in scores:
        if score.get("band") is None:
            bands.append(None)
            p_k5.append(math.nan)
        elif "head_p_k5" in score:
            p3 = float(score["head_p_k5"])
            bands.append("K5" if p3 >= KEEP_AT else BELOW_K5)
            p_k5.append(p3)
        else:
            bands.append(score["band"])
            p_k5.append(float(score["probs"]["K5"]))
    return bands, p_k5


def _grade_head(model: Any, grade_head: Any):
    """The head stage 3 uses: see EncoderStage's `grade_head`."""
    from littlekit.filter.grade_head import FILE_NAME, GradeHead

    if grade_head is None or grade_head == "none" or isinstance(grade_head, GradeHead):
        return None if grade_head == "none" else grade_head
    if grade_head != "auto":
        raise ValueError(f'grade_head must be "auto", "none", None or a GradeHead, got {grade_head!r}')
    if isinstance(model, str | Path) and (Path(model) / FILE_NAME).is_file():
        return GradeHead.load(Path(model) / FILE_NAME)
    return None


def _unscored() -> dict[str, Any]:
    return {"band": None, "prob": None, "probs": None, "n_tokens": 0}


# --- the stage's declaration (littlekit.filter.base.StageSpec) -----------------------------------

ENCODER_GATES = ("agree", "all")  # agree: the paper's agreement gate; all: score every document
GRADE_HEAD_MODES = ("auto", "none")  # auto: stage 3's grade head beside the model when there is one


def _build(options: Any) -> EncoderStage:
    if options.encoder_model is None:
        raise ValueError("stage 'encoder' needs encoder_model (command line: --encoder-model PATH)")
    return EncoderStage(
        options.encoder_model,
        batch_size=options.encoder_batch_size,
        max_length=options.encoder_max_length,
        device=options.device,
        attn_implementation=options.encoder_attn_implementation,
        min_k5_prob=options.encoder_min_k5_prob,
        grade_head=options.encoder_grade_head,
        prior_gate=AGREEMENT_GATE if options.encoder_gate == "agree" else None,
        fitted_precision=options.encoder_fitted_precision,
    )


def _batch_size(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"encoder_batch_size must be a whole number, got {value!r}")
    if value < 1:
        raise ValueError(f"encoder_batch_size must be at least 1, got {value}")
    return value


def _max_length(name: str, value: Any) -> int | None:
    if value is not None and value < MIN_MAX_LENGTH:
        raise ValueError(f"encoder_max_length must be at least {MIN_MAX_LENGTH} tokens or None, got {value}")
    return value


def _store(scores: Mapping[str, Any], decision: Decision) -> dict[str, Any]:
    bands, p_k5 = rule_scores([scores])
    return {"enc_pred": bands[0], "enc_p_k5": p_k5[0]}


def _describe(thresholds: Mapping[str, Any], details: Mapping[str, Any]) -> str:
    value = thresholds.get("encoder_min_k5_prob")
    if "stage_3_score" in details:  # stage 3 keeps on its grade head's P3(K5), not the argmax
        return f"encoder: grade head P3(K5) >= {'0.5' if value is None else f'{max(value, 0.5):g}'}"
    return "encoder: top band K5" + (" (released rule)" if value is None else f" and P(K5) >= {value:g}")


SPEC = StageSpec(
    name="encoder",
    position=3,
    label="Encoder",  # stage 3: ModernBERT in the paper; here whichever encoder was fit
    description="stage 3: encoder (ModernBERT) grade classifier's argmax is K5 (needs encoder_model)",
    build=_build,
    options=(
        Option(
            "encoder_model",
            None,
            "encoder stage: transformers sequence-classification directory or Hub id (ModernBERT)",
            metavar="DIR_OR_ID",
            path=True,
            required=True,
            hub=True,
        ),
        Option(
            "encoder_batch_size",
            BATCH_SIZE,
            "encoder stage: documents per forward pass (default: {default})",
            parse=positive_int,
            metavar="N",
            check=_batch_size,
        ),
        Option(
            "encoder_max_length",
            None,
            "encoder stage: tokens read per document (default: the length the model was trained at, "
            f"from its tokenizer, at most {MAX_LENGTH:,})",
            parse=positive_int,
            metavar="TOKENS",
            check=_max_length,
        ),
        Option(
            "encoder_attn_implementation",
            None,
            "encoder stage: transformers attention, e.g. eager, sdpa, flash_attention_2 "
            "(default: sdpa on CUDA, eager on the CPU)",
            metavar="NAME",
        ),
        Option(
            "encoder_gate",
            "agree",
            "encoder stage: agree = score only documents whose fastText band equals their AoA band "
            "(the paper's gate; the others are dropped as encoder_gate), all = score every document "
            "(default: {default})",
            choices=ENCODER_GATES,
        ),
        Option(
            "encoder_min_k5_prob",
            MIN_K5_PROB,
            "encoder stage: keep only when the argmax is K5 and P(K5) >= P; 'released' = argmax alone "
            "(default: --artifacts DIR's filter_config.json when its model is used, else released)",
            parse=probability_or_released,
            metavar="P",
            check=check_optional_probability,
            threshold=True,
        ),
        Option(
            "encoder_grade_head",
            "auto",
            "encoder stage: auto = a grade_head.json beside the model (written by `littlekit fit`) decides "
            "on its P3(K5) from the encoder's log-odds and readability features; none = the encoder's "
            "argmax (default: {default})",
            choices=GRADE_HEAD_MODES,
        ),
        Option(
            "device",
            None,
            "encoder stage device, e.g. cuda, cuda:1 or cpu; auto = cuda if available (default: auto); a "
            "GPU torch does not see is an error",
        ),
        Option(
            "encoder_fitted_precision",
            None,
            "encoder stage: the precision its thresholds were fitted in, DEVICE_TYPE/DTYPE (e.g. "
            "cpu/float32); scoring in another one warns (default: --artifacts DIR's filter_config.json, "
            "else not stated)",
            metavar="PRECISION",
            check=check_precision,
        ),
    ),
    artifacts=(
        Artifact(
            "encoder_model",
            "models/modernbert_grade",
            "encoder",
            "transformers sequence-classification directory (ModernBERT in the paper; all-MiniLM-L6-v2 "
            "in the embedded default), classes K5, K8, K12, OOS",
            "`littlekit fit encoder --data DATA --out DIR`, or "
            "littlekit.fit.encoder_training.fine_tune(..., out_dir=DIR/models/modernbert_grade, ...)",
            model_folder_problem,
        ),
    ),
    stored_keeps=lambda frame, t: top_band_keeps(
        frame["enc_pred"], frame["enc_p_k5"], t.get("encoder_min_k5_prob")
    ),
    stored_columns=("enc_pred", "enc_p_k5"),
    store=_store,
    outcome_columns=probability_columns("encoder"),
    outcome_keeps=minimum_probability_keeps("encoder", "encoder_min_k5_prob"),
    drop_reason="encoder_low_k5_prob",
    requires=lambda options: AGREEMENT_GATE.requires if options.encoder_gate == "agree" else (),
    requires_why=(
        "e.g. --stages aoa,fasttext,encoder, or score every document with --encoder-gate all (the "
        "agreement gate, encoder_gate='agree', is the default)"
    ),
    describe=_describe,
)
