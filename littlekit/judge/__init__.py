"""The LLM judge: stage-2 grade-band labels from an LLM, as in the paper's Appendix A.2.

Three prompts (language, context, subject; `prompts.build_prompts`) ask a model for a band in
K5, K8, K12, OOS; answers are parsed (`parse`), cached on disk (`cache.JudgeCache`), voted
(`voting`: majority with ties to the higher grade, or unanimous) and priced (`cost`).
Backends: `openai_backend.OpenAIChatBackend` (any OpenAI-compatible endpoint; the key comes
only from an environment variable, stripped and checked: `redact.APIKeyError`) and
`local_backend.TransformersBackend` (a local model). `annotate.check_judged` refuses a run that
labelled nothing (every call failed) before its labels replace earlier ones. Every text the
judge writes or raises (errors, cached answers, label records, parse errors, its log) goes
through one scrubber, `redact.scrub`, which takes out the
key and any echoed piece of it. Each name is imported from the module that defines it.

Label format
------------
One JSON object per line (`labels.write_labels` / `labels.read_labels`), the same for judge labels and for
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

