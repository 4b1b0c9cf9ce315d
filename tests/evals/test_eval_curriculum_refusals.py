"""`littlekit eval curriculum` refuses what cannot give a true score: a tokenizer from another
model, weights that are not finite, a generation budget past the model's positions, --top-p 0."""

from __future__ import annotations

import shutil

import pytest
from train_data import saved_curriculum_qwen3

from littlekit.cli import main

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return saved_curriculum_qwen3(tmp_path_factory.mktemp("model"), "reversed")


def _eval(model, *more: str) -> list[str]:
    return ["eval", "curriculum", "--model", str(model), "--band", "K5", "--per-unit", "1",
            "--format", "reversed", *more]  # fmt: skip


def test_top_p_zero_is_a_usage_error(model_dir, capsys):
    assert main(_eval(model_dir, "--top-p", "0")) == 2
    assert "--top-p: must be above 0 and at most 1" in capsys.readouterr().err


def test_a_budget_past_the_models_positions_is_refused(model_dir, capsys):
    from transformers import AutoConfig

    positions = AutoConfig.from_pretrained(model_dir).max_position_embeddings
    assert main(_eval(model_dir, "--max-new-tokens", str(positions))) == 2
    err = capsys.readouterr().err
    assert f"passes the model's {positions} positions; give at most" in err and err.count("\n") == 1


def test_non_finite_weights_fail_instead_of_scoring_zero(model_dir, tmp_path, capsys):
    from transformers import AutoModelForCausalLM

    broken = tmp_path / "nan"
    shutil.copytree(model_dir, broken)
    model = AutoModelForCausalLM.from_pretrained(broken)
    model.model.layers[0].mlp.up_proj.weight.data[0, 0] = float("nan")
    model.save_pretrained(broken)
    assert main(_eval(broken)) == 1
    err = capsys.readouterr().err
    assert "layers.0.mlp.up_proj.weight hold NaN or infinite values" in err and str(broken) in err


def test_a_tokenizer_of_another_model_is_named(model_dir, tmp_path, capsys):
    from transformers import AutoTokenizer

    mixed = tmp_path / "mixed"
    shutil.copytree(model_dir, mixed)
    tokenizer = AutoTokenizer.from_pretrained(mixed)
    tokenizer.add_tokens([f"extra{i}" for i in range(5000)])  # ids past the model's embedding rows
    tokenizer.save_pretrained(mixed)
    assert main(_eval(mixed)) == 1
    assert "do not belong together" in capsys.readouterr().err
