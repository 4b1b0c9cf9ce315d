"""Named training recipes: `littlekit train --preset NAME` (and `littlekit launch --preset NAME`).

A preset is a set of `TrainConfig` field overrides; the settings it does not name keep the
trainer's defaults, and a flag on the command line overrides the preset wherever it stands. The
paths (data, tokenizer, run directory) are never part of a preset.

- ``book-pair``: the recipe the book trains its LittleLearner / UNFILTERED pair with, both alike.
  The values are the training notebook's parameter cell (model_size,
  seq_len, batch_size, max_steps, eval_every, muon_lr, adamw_lr, seed) as its training cell passes
  them into TrainConfig (global_batch = micro_batch = batch_size); `tests/lm/test_train_presets.py`
  reads both cells and fails when this preset and the notebook disagree.
- ``paper-5b``: the paper's largest LittleLearner (Section 3.2: 5B parameters, ~80B training
  tokens) in the shape `littlekit launch` plans it by default: sequences of 4,096 tokens, 256 per
  step, one per GPU per pass, bf16; max_steps is the 80B tokens in such steps, rounded up. The
  paper gives the size and the token count; the sequence length and batch are launch's choices
  (the paper states neither), and its learning rates are not stated either, so they stay ours.
"""

from __future__ import annotations

import math
from typing import Any

from littlekit import paper

_PAPER_SEQ_LEN, _PAPER_BATCH = 4096, 256  # littlekit.lm.launch.LaunchConfig's defaults (a test checks)

PRESETS: dict[str, dict[str, Any]] = {
    "book-pair": {
        "size": "micro",
        "seq_len": 256,
        "global_batch": 16,
        "micro_batch": 16,
        "max_steps": 560,
        "eval_every": 100,
        "muon_lr": 0.04,
        "adamw_lr": 0.02,
        "seed": 0,
    },
    "paper-5b": {
        "size": paper.number("largest_model").shown,
        "seq_len": _PAPER_SEQ_LEN,
        "global_batch": _PAPER_BATCH,
        "micro_batch": 1,
        "max_steps": math.ceil(paper.number("train_tokens_low").value / (_PAPER_SEQ_LEN * _PAPER_BATCH)),
        "precision": "bf16",
    },
}


def preset(name: str) -> dict[str, Any]:
    """A copy of the preset's overrides; ValueError naming the known presets for another name."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return dict(PRESETS[name])
