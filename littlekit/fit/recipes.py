"""How each artifact of the filter is made, one function per step: `littlekit fit` and the book
call the same ones, so the command and a book run with the same seed write the same files.

Inputs and outputs are named run products (`littlekit.runs`): the labels, the artifacts folder
and each stage's fitting report folder. The steps, in order:

- labels: `make_labels` (the LLM judge's passage labels by default, or grade-labelled sources, or
  judge-format files: `littlekit.fit.labels.build_labels`);
- stage 1: `export_default_aoa` (the embedded Kuperman table as `data/aoa.parquet`);
- stage 2: `FastTextRecipe`, `train_fasttext_stage`, `tune_fasttext_point` (out of fold);
- stage 3: `EncoderRecipe`, `encoder_samples`, `encoder_start`, `encoder_train_config`,
  `train_encoder`, `tune_encoder_points` (stages 1-3 together, out of fold), `EncoderPoints.chosen`;
- stage 5: `pool_corpus`, `pool_stages`, `word_table_from_outcomes`.

`run_labels`, `run_fasttext` and `run_encoder` return a run's product when it exists and
otherwise make it (labels, fastText) or say it is missing (the encoder: minutes to train), with
a note saying which happened.

The steps live in one module per stage (`recipe_labels`, `recipe_fasttext`, `recipe_encoder`,
`recipe_word_table`) and `fit_label_set`, a whole `littlekit fit` on another label set, in
`littlekit.fit.command`, which runs the steps; every name is importable from here.
"""

from __future__ import annotations

from littlekit.fit.command import fit_label_set  # noqa: F401
from littlekit.fit.recipe_encoder import (  # noqa: F401
    _FROZEN_STATES,
    ALL_SCORES_FILE,
    OPERATING_RULES,
    EncoderPoints,
    EncoderRecipe,
    EncoderSamples,
    EncoderStart,
    encoder_samples,
    encoder_start,
    encoder_train_config,
    frozen_states,
    leave_one_corpus_out_cascade,
    point_from_scores,
    run_encoder,
    save_encoder_points,
    train_encoder,
    trained_max_length,
    tune_encoder_points,
)
from littlekit.fit.recipe_fasttext import (  # noqa: F401
    FastTextRecipe,
    copy_released_fasttext,
    fasttext_split,
    run_fasttext,
    train_fasttext_stage,
    tune_fasttext_point,
)
from littlekit.fit.recipe_labels import (  # noqa: F401
    HOLDOUT_FRACTION,
    export_default_aoa,
    labels_file,
    make_labels,
    run_labels,
)
from littlekit.fit.recipe_word_table import (  # noqa: F401
    BlockedShareChoice,
    PoolCorpus,
    WordTable,
    pool_corpus,
    pool_documents,
    pool_stages,
    tune_blocked_share,
    word_table_from_outcomes,
)
