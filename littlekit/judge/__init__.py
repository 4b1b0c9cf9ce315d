"""The LLM judge: stage-2 grade-band labels from an LLM, as in the paper's Appendix A.2.

Three prompts (language, context, subject; `prompts.build_prompts`) ask a model for a band in
K5, K8, K12, OOS; answers are parsed (`parse`), cached on disk (`cache.JudgeCache`), voted
(`voting`: majority with ties to the higher grade, or unanimous) and priced (`cost`).
Backends: `OpenAIChatBackend` (any OpenAI-compatible endpoint; the key comes only from an
environment variable, stripped and checked: `APIKeyError`) and `TransformersBackend` (a local
model). `check_judged` refuses a run that labelled nothing (every call failed) before its labels
replace earlier ones. Every text the judge writes or raises (errors, cached answers, label
records, parse errors, its log) goes through one scrubber, `redact.scrub`, which takes out the
key and any echoed piece of it.

Label format
------------
One JSON object per line (`write_labels` / `read_labels`), the same for judge labels and for
labels taken from grade-labelled sources (the embedded default):

    {"id": "a1b2c3d4e5f60718",          # document id (default: first 16 hex of text_sha256)
     "text_sha256": "<64 hex>",         # SHA-256 of the UTF-8 text, to join labels with texts
     "band": "K5" | "K8" | "K12" | "OOS" | null,   # the label; null = no label (e.g. no
                                        #   unanimous agreement, or every prompt failed)
     "votes": {"language": "K5", "context": "K8", "subject": null},  # per prompt; null =
                                        #   failed request or unparseable answer; {} for
                                        #   labels not made by the judge
     "judge": {"model": "gemini-3-flash-preview",
               "prompt_versions": {"language": "3f2a...", ...},   # hash of each prompt
               "vote": "majority" | "unanimous",
               "usage": {"input_tokens": int, "output_tokens": int, "cached": int,
                         "unknown": int},      # answers whose token counts the server did not
                                               #   report usably (left out of the sums)
               "errors": {"subject": "parse: no band found in answer '...'"}}
              | null,                   # null for labels not made by the judge
     "source": "llm-judge" | "<dataset name>"}

Readers may rely on the six top-level keys; `judge` is free to gain keys. `usage` counts what
each answer cost when it was made, including answers later served from the cache
(`cached` says how many were).
"""

from littlekit.judge.annotate import JudgeRunError, JudgeWarning, annotate, check_judged, iter_annotate
from littlekit.judge.backends import BackendError, Completion, ResponseFormatError
from littlekit.judge.cache import JudgeCache
from littlekit.judge.cost import (
    DEFAULT_PRICES,
    FINEWEB_EDU_DOCS,
    PAPER_ENSEMBLE_PER_SAMPLE,
    Price,
    StageRate,
    cascade_cost,
    compare_with_judge,
    cost_per_sample,
    judge_everything_cost,
)
from littlekit.judge.labels import make_label, read_labels, text_sha256, validate_label, write_labels
from littlekit.judge.openai_backend import OpenAIChatBackend
from littlekit.judge.parse import JudgeParseError, normalise_band, parse_answer, parse_band
from littlekit.judge.prompts import JudgePrompt, build_prompts, load_prompts, save_prompts
from littlekit.judge.redact import APIKeyError, scrub
from littlekit.judge.voting import vote

__all__ = [
    "APIKeyError", "DEFAULT_PRICES", "FINEWEB_EDU_DOCS", "PAPER_ENSEMBLE_PER_SAMPLE", "BackendError",
    "Completion",
    "JudgeCache", "JudgeParseError", "JudgePrompt", "JudgeRunError", "JudgeWarning", "OpenAIChatBackend",
    "Price", "ResponseFormatError",
    "StageRate", "annotate", "build_prompts", "cascade_cost", "check_judged", "compare_with_judge",
    "cost_per_sample",
    "iter_annotate", "judge_everything_cost", "load_prompts", "make_label", "normalise_band",
    "parse_answer", "parse_band", "read_labels", "save_prompts", "scrub", "text_sha256",
    "validate_label", "vote", "write_labels",
]


def __getattr__(name: str):
    # The local backend imports torch/transformers; load it only when asked for.
    if name == "TransformersBackend":
        from littlekit.judge.local_backend import TransformersBackend

        return TransformersBackend
    raise AttributeError(name)
