"""The single-digit ablation's recipe: the same sources, weights and budget on shards of another
tokenizer, and a clear error for a source it cannot place."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from littlekit.experiments.tokenizer_ablation import retokenized_recipe
from littlekit.lm.matched_corpora import MatchedShards
from littlekit.lm.train.config import TrainConfig


def shards(root: Path) -> MatchedShards:
    dirs = {(name, split): root / name / split for name in ("littlelearner", "unfiltered")
            for split in ("train", "val", "math")}  # fmt: skip
    return MatchedShards(dirs, pd.DataFrame())


def test_the_recipe_reads_the_same_splits_of_the_new_shards(tmp_path):
    data = {"/old/littlelearner/train": 0.2, "/old/littlelearner/math": 0.8}
    old = TrainConfig(data=data, tokenizer="/old/tok", run_dir="/old/run", val_data="/old/littlelearner/val",
                      size="nano", max_steps=600, seed=4)  # fmt: skip
    new = retokenized_recipe(old, shards(tmp_path), "littlelearner", tmp_path / "sd_tok", tmp_path / "run")
    assert new.data == {str(tmp_path / "littlelearner/train"): 0.2, str(tmp_path / "littlelearner/math"): 0.8}
    assert new.val_data == str(tmp_path / "littlelearner/val") and new.tokenizer == str(tmp_path / "sd_tok")
    assert (new.size, new.max_steps, new.seed, new.global_batch) == ("nano", 600, 4, old.global_batch)
    text_only = TrainConfig(data="/old/unfiltered/train", tokenizer="t", run_dir="r")
    assert retokenized_recipe(text_only, shards(tmp_path), "unfiltered", "t2", "r2").data == str(
        tmp_path / "unfiltered/train"
    )
    odd = TrainConfig(data="/old/unfiltered/extra", tokenizer="t", run_dir="r")
    with pytest.raises(ValueError, match="no unfiltered extra shards"):
        retokenized_recipe(odd, shards(tmp_path), "unfiltered", "t2", "r2")

