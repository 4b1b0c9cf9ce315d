"""Qwen3-dense model sizes, their parameter counts, training FLOPs and memory per GPU.

The paper trains Qwen3-dense models of 0.6B, 1.3B and 5B parameters (appendix B) but gives no
layer, width or head counts, so every shape below except "0.6B" is ours:

- "0.6B" is Qwen3-0.6B's published shape (hidden 1024, 28 layers, 16 heads, 8 KV heads,
  head_dim 128, intermediate 3072, tied embeddings). Qwen3's own vocabulary of 151,936 makes it
  0.6B; with our smaller K-5 tokenizer it has the same 0.44B non-embedding parameters but fewer
  embedding ones.
- "1.3B" is ours: Qwen3-1.7B's width (hidden 2048, 16 heads, 8 KV heads, intermediate 6144,
  tied) at 24 layers instead of 28, about 1.2B non-embedding parameters.
- "5B" is ours: hidden 3072 (24 heads of 128, 8 KV heads), 36 layers as in Qwen3-4B/8B,
  intermediate 11776 (Qwen3-4B's 3.8x ratio), untied embeddings as in Qwen3-8B; 4.8B
  non-embedding parameters, about 5.0B in all with a 32,768-token vocabulary.
- "nano" and "micro" are ours, small enough to train on a laptop CPU in minutes.

The vocabulary is always our tokenizer's (`vocab_size` argument), never Qwen3's. The context
length (4,096 for the paper sizes) and RoPE base (1e6, Qwen3's) are ours too.
"""

from __future__ import annotations

import math
from typing import Any

from transformers import Qwen3Config, Qwen3ForCausalLM

DEFAULT_VOCAB_SIZE = 32_768  # ours: the K-5 tokenizer's size when none is given (the paper's is unknown)

_COMMON: dict[str, Any] = {
    "hidden_act": "silu",
    "attention_bias": False,
    "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0},  # Qwen3's RoPE base
}

QWEN3_SIZES: dict[str, dict[str, Any]] = {
    "nano": dict(
        hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, max_position_embeddings=512, tie_word_embeddings=True,
    ),
    "micro": dict(
        hidden_size=128, intermediate_size=384, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=32, max_position_embeddings=1024, tie_word_embeddings=True,
    ),
    "0.6B": dict(
        hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, max_position_embeddings=4096, tie_word_embeddings=True,
    ),
    "1.3B": dict(
        hidden_size=2048, intermediate_size=6144, num_hidden_layers=24, num_attention_heads=16,
        num_key_value_heads=8, head_dim=128, max_position_embeddings=4096, tie_word_embeddings=True,
    ),
    "5B": dict(
        hidden_size=3072, intermediate_size=11776, num_hidden_layers=36, num_attention_heads=24,
        num_key_value_heads=8, head_dim=128, max_position_embeddings=4096, tie_word_embeddings=False,
    ),
}  # fmt: skip

# Where each size's numbers come from, printed beside the size table.
SIZE_SOURCES: dict[str, str] = {
    "nano": "ours (laptop CPU)",
    "micro": "ours (laptop CPU)",
    "0.6B": "name: paper; shape: Qwen3-0.6B's published config",
    "1.3B": "name: paper; shape: ours (Qwen3-1.7B width, 24 layers)",
    "5B": "name: paper; shape: ours (Qwen3 conventions)",
}
NOMINAL_PARAMS: dict[str, float] = {"0.6B": 0.6e9, "1.3B": 1.3e9, "5B": 5.0e9}

# Bytes per element. Activations are bf16; cross-entropy keeps an fp32 log-softmax beside them.
BF16, FP32 = 2, 4
LOGIT_BYTES = BF16 + FP32


def qwen3_config(size: str, vocab_size: int = DEFAULT_VOCAB_SIZE, **overrides: Any) -> Qwen3Config:
    """The Qwen3Config of a named size with our vocabulary; keyword overrides win (e.g. bos_token_id)."""
    if size not in QWEN3_SIZES:
        raise ValueError(f"unknown model size {size!r}; known: {', '.join(QWEN3_SIZES)}")
    if vocab_size < 1:
        raise ValueError(f"vocab_size must be positive, got {vocab_size}")
    kwargs = {**_COMMON, **QWEN3_SIZES[size], "vocab_size": int(vocab_size), **overrides}
    return Qwen3Config(**kwargs)


def build_model(config: Qwen3Config) -> Qwen3ForCausalLM:
    """A freshly initialised Qwen3ForCausalLM; build it under `torch.device("meta")` to count only."""
    return Qwen3ForCausalLM(config)


def _shape(config: Qwen3Config) -> tuple[int, int, int, int, int, int]:
    """(layers, hidden, attention width, key/value width, head_dim, intermediate)."""
    head_dim = config.head_dim or config.hidden_size // config.num_attention_heads
    return (
        config.num_hidden_layers,
        config.hidden_size,
        config.num_attention_heads * head_dim,
        config.num_key_value_heads * head_dim,
        head_dim,
        config.intermediate_size,
    )


def layer_params(config: Qwen3Config) -> dict[str, int]:
    """Parameters of one decoder layer: attention matrices, MLP matrices and norm vectors."""
    _, hidden, d_attn, d_kv, head_dim, inter = _shape(config)
    attention = hidden * d_attn + 2 * hidden * d_kv + d_attn * hidden  # q, k, v, o
    if config.attention_bias:
        attention += d_attn + 2 * d_kv + hidden
    mlp = 3 * hidden * inter  # gate, up, down (SwiGLU)
    norms = 2 * hidden + 2 * head_dim  # input and post-attention RMSNorm, q_norm and k_norm
    return {"attention": attention, "mlp": mlp, "norms": norms}


def param_counts(config: Qwen3Config) -> dict[str, int]:
    """Embedding (input table, plus the LM head when untied) vs everything else, and the total."""
    layers, hidden = config.num_hidden_layers, config.hidden_size
    tables = 1 if config.tie_word_embeddings else 2
    embedding = tables * config.vocab_size * hidden
    non_embedding = layers * sum(layer_params(config).values()) + hidden  # + final norm
    return {"embedding": embedding, "non_embedding": non_embedding, "total": embedding + non_embedding}


def optimizer_split(config: Qwen3Config) -> dict[str, int]:
    """Parameters Muon updates (2-D hidden matrices) vs AdamW (embeddings, LM head, norms)."""
    per_layer = layer_params(config)
    muon = config.num_hidden_layers * (per_layer["attention"] + per_layer["mlp"])
    if config.attention_bias:  # biases are 1-D: AdamW
        _, hidden, d_attn, d_kv, _, _ = _shape(config)
        muon -= config.num_hidden_layers * (d_attn + 2 * d_kv + hidden)
    return {"muon": muon, "adamw": param_counts(config)["total"] - muon}


def flops_per_token(config: Qwen3Config, seq_len: int, attention: bool = True) -> int:
    """Training FLOPs per token: 6·N + 12·L·d_attn·seq_len (PaLM, Chowdhery et al. 2022, app. B).

    N counts the matrices a token is multiplied through: the non-embedding parameters plus the
    LM head (vocab x hidden, tied or not); the input embedding is a lookup and costs nothing.
    6·N is forward (2·N) plus backward (4·N) as in Kaplan et al. 2020 and Chinchilla. The
    attention term is QK^T and AV over the full window (not halved for the causal mask, as in
    PaLM's MFU), with d_attn = heads x head_dim.
    """
    if seq_len < 1:
        raise ValueError(f"seq_len must be positive, got {seq_len}")
    layers, hidden, d_attn, _, _, _ = _shape(config)
    matmul_params = param_counts(config)["non_embedding"] + config.vocab_size * hidden
    total = 6 * matmul_params
    if attention:
        total += 12 * layers * d_attn * seq_len
    return total


KERNELS = ("eager", "fused")


def layer_activation_bytes(config: Qwen3Config, kernels: str = "eager") -> int:
    """Bytes one decoder layer saves for backward per token (bf16 model, SDPA/flash attention).

    "eager" is what transformers' Qwen3 saves under plain PyTorch autograd (tests/test_model.py
    measures it with saved-tensor hooks): each RMSNorm keeps its input upcast to fp32 and a bf16
    copy of the normalised input, and q_norm/k_norm do the same per head, so
    16·h + 10·d_attn + 10·d_kv + 8·i bytes: two norms 2 x (4h fp32 + 2h + 2h norm output), q and
    k norms 6·d_attn + 6·d_kv, rotated q and k and v for attention 2·d_attn + 4·d_kv, attention
    output 2·d_attn, and the SwiGLU MLP's gate, up, SiLU(gate) and product 4 x 2i.
    "fused" counts what fused norm/RoPE kernels (Megatron-Core, as the paper) keep, all bf16:
    2 x (4·h + 3·d_attn + 4·d_kv + 4·i). Flash attention keeps no seq x seq scores and Qwen3 has
    no dropout (cf. Korthikanti et al. 2022: 34·h bytes per layer for GPT with a 4h MLP, dropout
    and no flash attention).
    """
    if kernels not in KERNELS:
        raise ValueError(f"kernels must be one of {KERNELS}, got {kernels!r}")
    _, hidden, d_attn, d_kv, _, inter = _shape(config)
    if kernels == "eager":
        return 16 * hidden + 10 * d_attn + 10 * d_kv + 8 * inter
    return BF16 * (4 * hidden + 3 * d_attn + 4 * d_kv + 4 * inter)


def activation_bytes_per_token(
    config: Qwen3Config, checkpointing: bool = False, kernels: str = "eager"
) -> int:
    """Activation bytes per token of a micro batch: the layers, the final norm and the logits.

    Without checkpointing every layer keeps layer_activation_bytes. With full activation
    checkpointing each layer keeps only its bf16 input (2·h), plus one layer's activations while
    it is recomputed in backward. The head keeps the final norm's tensors (as a layer's norm) and
    per vocabulary entry 2 bytes of bf16 logits (returned by the model) and 4 of the fp32
    log-softmax cross-entropy saves.
    """
    layers, hidden = config.num_hidden_layers, config.hidden_size
    per_layer = layer_activation_bytes(config, kernels)
    kept = layers * BF16 * hidden + per_layer if checkpointing else layers * per_layer
    final_norm = (8 if kernels == "eager" else 4) * hidden
    return kept + final_norm + LOGIT_BYTES * config.vocab_size


def memory_per_gpu(
    config: Qwen3Config,
    n_gpus: int = 1,
    seq_len: int | None = None,
    micro_batch: int = 1,
    *,
    optimizer: str = "muon",
    param_bytes: int = BF16,
    grad_bytes: int = FP32,
    master_bytes: int = FP32,
    state_bytes: int = FP32,
    shard_optimizer: bool = True,
    activation_checkpointing: bool = False,
    kernels: str = "eager",
) -> dict[str, int]:
    """Bytes per GPU for pure data parallelism (every GPU holds the whole model), by part.

    weights: N x param_bytes (bf16, the paper's parameter storage); grads: N x grad_bytes (fp32
    accumulation, Megatron's default with bf16); master: an fp32 copy of the weights for the
    update (master_bytes=0 for pure-bf16 training); optimizer: Muon keeps one momentum per
    hidden matrix and AdamW two moments for the rest ("adamw" puts every parameter on AdamW).
    Master and optimizer states are split over the GPUs when shard_optimizer (ZeRO-1 /
    Megatron's distributed optimizer; the paper shards Muon 8 ways by layer). activations:
    activation_bytes_per_token x micro_batch x seq_len ("eager": transformers' Qwen3 as our
    trainer runs it; "fused": fused norm/RoPE kernels as in Megatron-Core). Excludes the CUDA
    context, NCCL buffers, temporary workspaces and fragmentation: leave headroom.
    """
    if n_gpus < 1 or micro_batch < 1:
        raise ValueError(f"n_gpus and micro_batch must be positive, got {n_gpus} and {micro_batch}")
    if optimizer not in ("muon", "adamw"):
        raise ValueError(f"optimizer must be 'muon' or 'adamw', got {optimizer!r}")
    seq_len = seq_len or config.max_position_embeddings
    n = param_counts(config)["total"]
    split = optimizer_split(config)
    if optimizer == "muon":
        states = split["muon"] + 2 * split["adamw"]
    else:
        states = 2 * n
    shards = n_gpus if shard_optimizer else 1
    parts = {
        "weights": n * param_bytes,
        "grads": n * grad_bytes,
        "master": math.ceil(n * master_bytes / shards),
        "optimizer": math.ceil(states * state_bytes / shards),
        "activations": micro_batch
        * seq_len
        * activation_bytes_per_token(config, activation_checkpointing, kernels),
    }
    parts["total"] = sum(parts.values())
    return parts


def size_table(
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    seq_len: int = 4096,
    n_gpus: int = 8,
    micro_batch: int = 1,
    sizes: tuple[str, ...] | None = None,
    activation_checkpointing: bool = False,
    kernels: str = "eager",
) -> list[dict[str, Any]]:
    """One row per size: parameters, FLOPs per token and memory per GPU (bytes), for printing."""
    rows = []
    for size in sizes or tuple(QWEN3_SIZES):
        config = qwen3_config(size, vocab_size)
        length = min(seq_len, config.max_position_embeddings)
        counts = param_counts(config)
        memory = memory_per_gpu(
            config,
            n_gpus,
            length,
            micro_batch,
            activation_checkpointing=activation_checkpointing,
            kernels=kernels,
        )
        rows.append(
            {
                "size": size,
                "source": SIZE_SOURCES[size],
                **counts,
                "seq_len": length,
                "flops_per_token": flops_per_token(config, length),
                **{f"mem_{part}": value for part, value in memory.items()},
            }
        )
    return rows
