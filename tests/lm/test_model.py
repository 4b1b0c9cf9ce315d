"""Model sizes: counts against real and meta-device models, FLOPs and memory by hand."""

from __future__ import annotations

import pytest
import torch

from littlekit.lm.sizes import (
    NOMINAL_PARAMS,
    QWEN3_SIZES,
    activation_bytes_per_token,
    build_model,
    flops_per_token,
    memory_per_gpu,
    optimizer_split,
    param_counts,
    qwen3_config,
    size_table,
)


def _count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())  # shared (tied) tensors once


@pytest.mark.parametrize("size", ["pico", "nano", "micro"])
@pytest.mark.parametrize("tied", [True, False])
def test_small_models_count_matches_real_parameters(size, tied):
    config = qwen3_config(size, vocab_size=500, tie_word_embeddings=tied)
    model = build_model(config)
    counts = param_counts(config)
    assert counts["total"] == _count(model)
    assert counts["embedding"] == (1 if tied else 2) * 500 * config.hidden_size
    assert counts["embedding"] + counts["non_embedding"] == counts["total"]
    matrices = sum(p.numel() for name, p in model.named_parameters() if p.ndim == 2 and "layers." in name)
    assert optimizer_split(config)["muon"] == matrices


def test_nano_model_runs_forward_and_backward():
    config = qwen3_config("nano", vocab_size=300)
    model = build_model(config)
    ids = torch.randint(0, 300, (2, 16))
    out = model(input_ids=ids, labels=ids)
    out.loss.backward()
    assert out.logits.shape == (2, 16, 300)
    assert torch.isfinite(out.loss)


def test_5b_on_meta_device_matches_formula_and_nominal_size():
    config = qwen3_config("5B", vocab_size=32_768)
    with torch.device("meta"):
        model = build_model(config)
    assert next(model.parameters()).device.type == "meta"
    total = param_counts(config)["total"]
    assert _count(model) == total
    assert abs(total - NOMINAL_PARAMS["5B"]) / NOMINAL_PARAMS["5B"] < 0.05


@pytest.mark.parametrize("size", ["0.6B", "1.3B"])
def test_paper_sizes_on_meta_device(size):
    config = qwen3_config(size)
    with torch.device("meta"):
        model = build_model(config)
    assert _count(model) == param_counts(config)["total"]


def test_qwen3_published_shapes_give_their_model_card_counts():
    # Qwen3 model cards: 0.6B has 0.44B non-embedding, 1.7B has 1.4B, 4B has 3.6B (vocab 151,936).
    card = {
        "0.6B": (dict(QWEN3_SIZES["0.6B"]), 0.44e9, 0.6e9),
        "1.7B": (
            dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16),
            1.4e9,
            1.7e9,
        ),
        "4B": (
            dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32),
            3.6e9,
            4.0e9,
        ),
    }
    for name, (shape, non_embedding, total) in card.items():
        config = qwen3_config("0.6B", vocab_size=151_936, **shape)
        counts = param_counts(config)
        assert counts["non_embedding"] == pytest.approx(non_embedding, rel=0.05), name
        assert counts["total"] == pytest.approx(total, rel=0.05), name


def test_flops_per_token_by_hand():
    config = qwen3_config(
        "nano", vocab_size=10, hidden_size=4, intermediate_size=6, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, head_dim=2, tie_word_embeddings=True,
    )  # fmt: skip
    # layer: q 4x4 + k 4x2 + v 4x2 + o 4x4 = 48; mlp 3x4x6 = 72; norms 2x4 + 2x2 = 12 -> 132
    # non-embedding 132 + final norm 4 = 136; the LM head multiplies by 10x4 = 40 more
    assert param_counts(config) == {"embedding": 40, "non_embedding": 136, "total": 176}
    assert flops_per_token(config, seq_len=8, attention=False) == 6 * (136 + 40)
    # attention: 12 x layers(1) x d_attn(2 heads x 2) x seq 8 = 384
    assert flops_per_token(config, seq_len=8) == 6 * 176 + 384
    untied = qwen3_config("nano", vocab_size=10, **{**QWEN3_SIZES["nano"], "tie_word_embeddings": False})
    tied = qwen3_config("nano", vocab_size=10)
    assert flops_per_token(untied, 8) == flops_per_token(tied, 8)  # same matmuls either way


def test_memory_formula_by_hand():
    config = qwen3_config("nano", vocab_size=1000)
    counts = param_counts(config)
    n, split = counts["total"], optimizer_split(config)
    states = split["muon"] + 2 * split["adamw"]
    matmuls = counts["non_embedding"] + 1000 * 64  # the LM head is a matmul even when tied
    # nano: h=64, d_attn=64, d_kv=32, i=192, 2 layers
    autocast_layer = 26 * 64 + 10 * 64 + 10 * 32 + 8 * 192
    head = 10 * 64 + 6 * 1000  # final norm; bf16 logits + fp32 log-softmax
    assert activation_bytes_per_token(config) == 2 * autocast_layer + head
    assert activation_bytes_per_token(config, checkpointing=True) == 2 * 4 * 64 + autocast_layer + head

    ddp = memory_per_gpu(config, n_gpus=4, seq_len=128, micro_batch=2, recipe="ddp")
    assert ddp == {
        "weights": 4 * n,
        "autocast_copies": 2 * matmuls,
        "grads": 4 * n,
        "grad_buffer": 4 * n,
        "master": 0,
        "optimizer": 4 * states,
        "activations": 2 * 128 * (2 * autocast_layer + head),
        "total": 12 * n + 2 * matmuls + 4 * states + 2 * 128 * (2 * autocast_layer + head),
    }
    fsdp = memory_per_gpu(config, n_gpus=4, seq_len=128, micro_batch=2, recipe="fsdp")
    assert (fsdp["weights"], fsdp["grads"], fsdp["grad_buffer"]) == (n, n, 0)
    assert fsdp["optimizer"] == states and fsdp["activations"] == ddp["activations"]

    paper = memory_per_gpu(config, n_gpus=4, seq_len=128, micro_batch=2, recipe="paper")
    fused_layer = 2 * (4 * 64 + 3 * 64 + 4 * 32 + 4 * 192)
    assert activation_bytes_per_token(config, activations="fused") == 2 * fused_layer + 4 * 64 + 6 * 1000
    assert (paper["weights"], paper["grads"], paper["autocast_copies"]) == (2 * n, 4 * n, 0)
    assert paper["master"] == n and paper["optimizer"] == states  # fp32, sharded 4 ways
    assert paper["total"] == sum(v for k, v in paper.items() if k != "total")


def _saved_bytes(config, batch: int, seq: int, autocast: bool) -> int:
    """Bytes autograd saves in a forward pass and fp32 loss (as littlekit train forms it), plus
    the logits, counted once per storage; parameters themselves are not counted."""
    config._attn_implementation = "sdpa"
    model = build_model(config)
    if not autocast:
        model = model.to(torch.bfloat16)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    ids = torch.randint(0, config.vocab_size, (batch, seq))
    with (
        torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor),
        torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast),
    ):
        logits = model(input_ids=ids).logits
        torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), ids.flatten())
    return sum(saved.values()) + logits.numel() * logits.element_size()


SMALL = dict(
    hidden_size=128, intermediate_size=384, num_attention_heads=4, head_dim=32, num_key_value_heads=2
)


@pytest.mark.parametrize("vocab, layers", [(256, 2), (256, 4), (4096, 1)])
@pytest.mark.parametrize("autocast", [True, False])
def test_activation_formula_matches_what_autograd_saves(vocab, layers, autocast):
    config = qwen3_config("micro", vocab_size=vocab, num_hidden_layers=layers, **SMALL)
    measured = _saved_bytes(config, batch=2, seq=64, autocast=autocast)
    mode = "autocast" if autocast else "bf16"
    predicted = 2 * 64 * activation_bytes_per_token(config, activations=mode)
    if autocast:  # autocast's bf16 weight copies are saved for backward too
        predicted += memory_per_gpu(config, recipe="ddp")["autocast_copies"]
    assert measured == pytest.approx(predicted, rel=0.03)


def test_memory_options_move_the_right_parts():
    config = qwen3_config("5B")
    ddp = memory_per_gpu(config, n_gpus=8, seq_len=4096)
    fsdp = memory_per_gpu(config, n_gpus=8, seq_len=4096, recipe="fsdp")
    assert fsdp["optimizer"] == pytest.approx(ddp["optimizer"] / 8, rel=1e-6)
    assert fsdp["weights"] == pytest.approx(ddp["weights"] / 8, rel=1e-6)
    assert fsdp["total"] < ddp["total"] / 2
    adamw = memory_per_gpu(config, n_gpus=8, seq_len=4096, optimizer="adamw")
    assert adamw["optimizer"] > 1.9 * ddp["optimizer"]  # Muon keeps one state per matrix, AdamW two
    checkpointed = memory_per_gpu(config, n_gpus=8, seq_len=4096, activation_checkpointing=True)
    assert checkpointed["activations"] < ddp["activations"] / 5
    assert memory_per_gpu(config, n_gpus=16, seq_len=4096)["total"] == ddp["total"]  # DDP replicates


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="unknown model size"):
        qwen3_config("7B")
    with pytest.raises(ValueError, match="optimizer"):
        memory_per_gpu(qwen3_config("nano"), optimizer="sgd")
    with pytest.raises(ValueError, match="unknown recipe"):
        memory_per_gpu(qwen3_config("nano"), recipe="zero3")
    with pytest.raises(ValueError, match="activations"):
        activation_bytes_per_token(qwen3_config("nano"), activations="eager")
    with pytest.raises(ValueError, match="seq_len"):
        flops_per_token(qwen3_config("nano"), 0)


def test_size_table_rows_are_ordered_by_size():
    rows = size_table(vocab_size=32_768)
    assert [row["size"] for row in rows] == list(QWEN3_SIZES)
    totals = [row["total"] for row in rows]
    assert totals == sorted(totals)
    assert all(row["seq_len"] <= qwen3_config(row["size"]).max_position_embeddings for row in rows)
