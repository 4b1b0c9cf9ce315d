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
from dataclasses import dataclass
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
    "pico": dict(
        hidden_size=48, intermediate_size=144, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=512, tie_word_embeddings=True,
    ),
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
    "pico": "ours (laptop CPU)",
    "nano": "ours (laptop CPU)",
    "micro": "ours (laptop CPU)",
    "0.6B": "name: paper; shape: Qwen3-0.6B's published config",
    "1.3B": "name: paper; shape: ours (Qwen3-1.7B width, 24 layers)",
    "5B": "name: paper; shape: ours (Qwen3 conventions)",
}
NOMINAL_PARAMS: dict[str, float] = {"0.6B": 0.6e9, "1.3B": 1.3e9, "5B": 5.0e9}

# Dense (no 2:4 sparsity) BF16 peak FLOP/s of the SXM parts by name, from NVIDIA's datasheets (the
# B200's sparse figure halved); `littlekit launch` plans with them and the trainer reports MFU.
GPU_PEAK_BF16: dict[str, float] = {"B200": 2.25e15, "H100": 989e12, "H200": 989e12}


def gpu_peak_bf16(device_name: str) -> float | None:
    """GPU_PEAK_BF16 for a device name as `torch.cuda.get_device_name` gives it ("NVIDIA H100 80GB
    HBM3"), by a whole word; None for another GPU, and for the PCIe and NVL parts, whose power
    and clock limits give other peaks."""
    words = device_name.upper().replace("-", " ").split()
    if "PCIE" in words or "NVL" in words:
        return None
    return next((peak for name, peak in GPU_PEAK_BF16.items() if name in words), None)


# Bytes per element; per vocabulary entry and token, bf16 logits and their fp32 log-softmax.
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


ACTIVATIONS = ("autocast", "bf16", "fused")


def layer_activation_bytes(config: Qwen3Config, activations: str = "autocast") -> int:
    """Bytes one decoder layer saves for backward per token (SDPA/flash attention, no dropout).

    Counted from the tensors autograd saves in transformers' Qwen3 (tests/lm/test_model.py measures
    them with saved-tensor hooks), with h hidden, d_attn = heads x head_dim, d_kv = KV heads x
    head_dim, i intermediate:

    - "autocast" (`littlekit train` on a GPU: fp32 weights, bf16 autocast): 26·h + 10·d_attn +
      10·d_kv + 8·i. Each RMSNorm keeps its fp32 input and fp32 normalised input (8h); each of
      the five input projections (q, k, v, gate, up) keeps its own bf16 cast of its input (10h);
      q_norm and k_norm keep fp32 and bf16 copies (6·d_attn + 6·d_kv); attention keeps bf16 q,
      k, v and its output (4·d_attn + 4·d_kv); the SwiGLU MLP keeps gate, up, SiLU(gate) and
      their product in bf16 (8i).
    - "bf16" (bf16 weights, no autocast): 16·h + 10·d_attn + 10·d_kv + 8·i; a norm keeps an
      fp32 input, a bf16 normalised copy and its bf16 output (8h), and q, k, v share one input.
    - "fused" (fused norm and RoPE kernels, all bf16, as Megatron-Core which the paper uses):
      2 x (4·h + 3·d_attn + 4·d_kv + 4·i).

    Flash attention keeps no seq x seq scores (cf. Korthikanti et al. 2022: 34·h bytes per layer
    for GPT with a 4h MLP, dropout and no flash attention).
    """
    if activations not in ACTIVATIONS:
        raise ValueError(f"activations must be one of {ACTIVATIONS}, got {activations!r}")
    _, hidden, d_attn, d_kv, _, inter = _shape(config)
    if activations == "autocast":
        return 26 * hidden + 10 * d_attn + 10 * d_kv + 8 * inter
    if activations == "bf16":
        return 16 * hidden + 10 * d_attn + 10 * d_kv + 8 * inter
    return BF16 * (4 * hidden + 3 * d_attn + 4 * d_kv + 4 * inter)


_FINAL_NORM = {"autocast": 10, "bf16": 8, "fused": 4}  # bytes per hidden unit, as a layer's norm


def activation_bytes_per_token(
    config: Qwen3Config, checkpointing: bool = False, activations: str = "autocast"
) -> int:
    """Activation bytes per token of a micro batch: the layers, the final norm and the logits.

    Without checkpointing every layer keeps layer_activation_bytes. With full activation
    checkpointing each layer keeps only its input (2·h bf16, 4·h fp32 under autocast), plus one
    layer's activations while it is recomputed in backward. The head keeps the final norm's
    tensors and, per vocabulary entry, 4 bytes of fp32 log-softmax (cross-entropy in fp32) and 2
    of bf16 logits (alive while the loss is formed).
    """
    layers, hidden = config.num_hidden_layers, config.hidden_size
    per_layer = layer_activation_bytes(config, activations)
    layer_input = (FP32 if activations == "autocast" else BF16) * hidden
    kept = layers * layer_input + per_layer if checkpointing else layers * per_layer
    return kept + _FINAL_NORM[activations] * hidden + LOGIT_BYTES * config.vocab_size


@dataclass(frozen=True)
class Recipe:
    """How a training setup stores its state, in bytes per parameter, and what it shards."""

    name: str
    param_bytes: int
    grad_bytes: int
    master_bytes: int  # a separate fp32 copy of the weights for the update; 0 when none
    state_bytes: int  # per optimizer state element
    shard: str  # "none" (DDP), "optimizer" (ZeRO-1 / distributed optimizer), "all" (FSDP)
    grad_buffer: bool  # DDP's bucket copy of the gradients (gradient_as_bucket_view=False)
    autocast_copies: bool  # bf16 copies of the weights that autocast makes for the matmuls
    activations: str  # an ACTIVATIONS mode
    description: str
    # how the Muon step orthogonalises: "stacked" (StackedMuon on plain tensors: every matrix of a
    # shape at once) or "per_matrix" (torch's Muon, one matrix at a time, as on FSDP's DTensor shards)
    muon_step: str = "stacked"


RECIPES: dict[str, Recipe] = {
    "ddp": Recipe(
        "ddp", FP32, FP32, 0, FP32, "none", True, True, "autocast",
        "littlekit train --parallel ddp on GPUs: fp32 weights, grads and optimizer states on every "
        "GPU, DDP's gradient buckets, bf16 autocast",
    ),
    "fsdp": Recipe(
        "fsdp", FP32, FP32, 0, FP32, "all", False, False, "autocast",
        "littlekit train --parallel fsdp on GPUs: FSDP2 shards fp32 weights, grads and optimizer "
        "states over the GPUs and gathers each layer in bf16 (so autocast makes no weight copies; "
        "activations counted as under autocast, an upper bound), gradients reduced in fp32",
        muon_step="per_matrix",
    ),
    "paper": Recipe(
        "paper", BF16, FP32, FP32, FP32, "optimizer", False, False, "fused",
        "our reading of the paper's Megatron-Core recipe: bf16 weights, fp32 gradient accumulation, "
        "fp32 master weights and Muon/AdamW states sharded over the data-parallel GPUs, fused kernels",
        muon_step="per_matrix",
    ),
}  # fmt: skip


def memory_per_gpu(
    config: Qwen3Config,
    n_gpus: int = 1,
    seq_len: int | None = None,
    micro_batch: int = 1,
    *,
    recipe: str | Recipe = "ddp",
    optimizer: str = "muon",
    activation_checkpointing: bool = False,
) -> dict[str, int]:
    """Bytes per GPU by part, for data parallelism over n_gpus (see RECIPES).

    weights N x param_bytes; autocast_copies 2 x the matmul weights (non-embedding + LM head);
    grads N x grad_bytes, and as much again for DDP's buckets (grad_buffer); master N x
    master_bytes; optimizer: Muon keeps one momentum per hidden matrix and AdamW two moments for
    the rest ("adamw" puts every parameter on AdamW), state_bytes each. The recipe's `shard`
    divides the optimizer states and master ("optimizer") or also weights and grads ("all") by
    n_gpus. activations: activation_bytes_per_token x micro_batch x seq_len. "total" is the
    forward/backward phase; the optimizer step's own temporaries are `optimizer_step_bytes` and
    the larger of the two phases `peak_memory`. Not counted: CUDA context, NCCL buffers, kernel
    workspaces, FSDP's gathered layer, fragmentation; leave headroom.
    """
    if n_gpus < 1 or micro_batch < 1:
        raise ValueError(f"n_gpus and micro_batch must be positive, got {n_gpus} and {micro_batch}")
    if optimizer not in ("muon", "adamw"):
        raise ValueError(f"optimizer must be 'muon' or 'adamw', got {optimizer!r}")
    recipe = _recipe(recipe)
    seq_len = seq_len or config.max_position_embeddings
    counts = param_counts(config)
    n = counts["total"]
    split = optimizer_split(config)
    states = split["muon"] + 2 * split["adamw"] if optimizer == "muon" else 2 * n
    state_shards = 1 if recipe.shard == "none" else n_gpus
    model_shards = n_gpus if recipe.shard == "all" else 1
    matmul_weights = counts["non_embedding"] + config.vocab_size * config.hidden_size
    per_token = activation_bytes_per_token(config, activation_checkpointing, recipe.activations)
    parts = {
        "weights": math.ceil(n * recipe.param_bytes / model_shards),
        "autocast_copies": BF16 * matmul_weights if recipe.autocast_copies else 0,
        "grads": math.ceil(n * recipe.grad_bytes / model_shards),
        "grad_buffer": n * recipe.grad_bytes if recipe.grad_buffer else 0,
        "master": math.ceil(n * recipe.master_bytes / state_shards),
        "optimizer": math.ceil(states * recipe.state_bytes / state_shards),
        "activations": micro_batch * seq_len * per_token,
    }
    parts["total"] = sum(parts.values())
    return parts


def _recipe(recipe: str | Recipe) -> Recipe:
    if isinstance(recipe, Recipe):
        return recipe
    if recipe not in RECIPES:
        raise ValueError(f"unknown recipe {recipe!r}; known: {', '.join(RECIPES)}")
    return RECIPES[recipe]


def muon_matrix_groups(config: Qwen3Config) -> list[tuple[tuple[int, int], int]]:
    """The hidden matrices as `optim.StackedMuon` stacks them: ((rows, cols) with rows <= cols,
    tall ones transposed; how many), in the order its step takes them (a layer's q, k, v, o, gate,
    up and down projections, as the model lists its parameters)."""
    layers, hidden, d_attn, d_kv, _, inter = _shape(config)
    groups: dict[tuple[int, int], int] = {}
    for rows, cols in ((d_attn, hidden), (d_kv, hidden), (d_kv, hidden), (hidden, d_attn),
                       (inter, hidden), (inter, hidden), (hidden, inter)):  # fmt: skip
        key = (min(rows, cols), max(rows, cols))
        groups[key] = groups.get(key, 0) + layers
    return list(groups.items())


def _newton_schulz_peak(elements: int, n: int, rows: int, ns_bytes: int) -> int:
    """Bytes alive at the peak of one fp32 stack of n (rows x cols) matrices (`elements` in all)
    orthogonalised (`optim.newton_schulz_stacked`): the fp32 stack itself, and either the iterate
    with three n x rows x rows Gram-sized tensors (a new Gram matrix while the last one and its
    polynomial are still bound) or two iterates (the next one while the last is bound) with two."""
    gram = n * rows * rows * ns_bytes
    return FP32 * elements + max(ns_bytes * elements + 3 * gram, 2 * ns_bytes * elements + 2 * gram)


def _stacked_muon_step(config: Qwen3Config, ns_bytes: int) -> dict[str, int]:
    """StackedMuon's step (plain tensors: one process, or DDP where every rank runs all of it)."""
    update = FP32 * optimizer_split(config)["muon"]  # Nesterov's look-ahead: a new tensor per matrix
    best = {"muon_stack": 0, "muon_temporaries": 0}
    previous = 0  # the last group's fp32 result, bound until the next one replaces it
    for (rows, cols), n in muon_matrix_groups(config):
        elements = n * rows * cols
        stack = FP32 * elements
        temporaries = previous + _newton_schulz_peak(elements, n, rows, ns_bytes) - stack
        if stack + temporaries > sum(best.values()):
            best = {"muon_stack": stack, "muon_temporaries": temporaries}
        previous = FP32 * elements
    return {"muon_update": update, **best}


def _per_matrix_muon_step(config: Qwen3Config, ns_bytes: int) -> dict[str, int]:
    """torch's Muon, one matrix at a time (FSDP's DTensor shards): the fp32 update of the matrix
    whose iteration needs most and that iteration, counted whole (the matmuls gather the shards),
    an upper bound."""
    peaks = [
        _newton_schulz_peak(r * c, 1, r, ns_bytes) - FP32 * r * c for (r, c), _ in muon_matrix_groups(config)
    ]
    (rows, cols), _ = muon_matrix_groups(config)[peaks.index(max(peaks))]
    return {"muon_update": FP32 * rows * cols, "muon_stack": 0, "muon_temporaries": max(peaks)}


def optimizer_step_bytes(
    config: Qwen3Config,
    n_gpus: int = 1,
    *,
    recipe: str | Recipe = "ddp",
    optimizer: str = "muon",
    ns_bytes: int = BF16,
) -> dict[str, int]:
    """Bytes the optimizer step allocates at its peak on top of the weights, gradients and states
    (read from `littlekit.lm.optim`), per GPU; "total" is the step's peak.

    Muon (`StackedMuon` on plain tensors, the recipe's muon_step "stacked"): muon_update, the
    Nesterov look-ahead `_foreach_lerp(grads, buffers)`, a new fp32 tensor per hidden matrix,
    alive for the whole step; then per shape, in turn, muon_stack, the fp32 `torch.stack` of its
    matrices, and muon_temporaries, the Newton-Schulz iteration in ns_bytes (bf16 on a GPU, fp32
    on the CPU) beside it (the iterate cast, two iterates or three Gram-sized tensors bound at
    once) plus the previous shape's fp32 result, bound until the next replaces it; counted at
    the shape where their sum is largest. "per_matrix" (torch's Muon on FSDP's shards): the same
    for one matrix at a time, the one that needs most, counted whole. AdamW (`foreach`) runs after
    Muon, one parameter group at a time, and allocates one fp32 denominator per parameter of the
    group (adamw_temporaries: the embeddings, head and norms; with optimizer="adamw" the larger
    of them and the hidden matrices), divided by n_gpus where the recipe shards its state.
    Under DDP every rank runs the whole Muon step on every matrix.
    """
    if optimizer not in ("muon", "adamw"):
        raise ValueError(f"optimizer must be 'muon' or 'adamw', got {optimizer!r}")
    recipe = _recipe(recipe)
    split = optimizer_split(config)
    # foreach AdamW steps one parameter group at a time: with optimizer="adamw" the hidden matrices
    # are a group of their own (still named "muon"), the rest the other
    adamw_params = split["adamw"] if optimizer == "muon" else max(split["adamw"], split["muon"])
    state_shards = 1 if recipe.shard == "none" else n_gpus
    parts = {"muon_update": 0, "muon_stack": 0, "muon_temporaries": 0,
             "adamw_temporaries": math.ceil(FP32 * adamw_params / state_shards)}  # fmt: skip
    if optimizer == "muon":
        stacked = recipe.muon_step == "stacked" or n_gpus == 1  # one process: plain tensors, no shards
        parts.update(
            _stacked_muon_step(config, ns_bytes) if stacked else _per_matrix_muon_step(config, ns_bytes)
        )
    muon = parts["muon_update"] + parts["muon_stack"] + parts["muon_temporaries"]
    parts["total"] = max(muon, parts["adamw_temporaries"])
    return parts


def peak_memory(memory: dict[str, int], step: dict[str, int]) -> dict[str, int]:
    """The two phases of a training step, per GPU, from `memory_per_gpu` and `optimizer_step_bytes`:
    "backward", the forward/backward (memory's total), and "step", the optimizer step: by then
    the activations and autocast's bf16 weight copies are freed, and the step's temporaries are
    alive. "peak" is the larger of the two."""
    at_step = memory["total"] - memory["activations"] - memory["autocast_copies"] + step["total"]
    return {"backward": memory["total"], "step": at_step, "peak": max(memory["total"], at_step)}


def muon_step_flops(config: Qwen3Config, ns_steps: int = 5) -> int:
    """FLOPs of one Muon step's Newton-Schulz iterations over every hidden matrix: per iteration
    and (rows x cols) matrix, rows <= cols, the Gram matrix (2·r²·c), its square (2·r³) and the
    update (2·r²·c). Under DDP every rank does all of them."""
    return ns_steps * sum(n * (4 * r * r * c + 2 * r**3) for (r, c), n in muon_matrix_groups(config))


def size_table(
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    seq_len: int = 4096,
    n_gpus: int = 8,
    micro_batch: int = 1,
    sizes: tuple[str, ...] | None = None,
    activation_checkpointing: bool = False,
    recipe: str = "ddp",
) -> list[dict[str, Any]]:
    """One row per size: parameters, FLOPs per token and memory per GPU (bytes): the parts held
    through forward and backward and their total, the optimizer step's temporaries, and the peak."""
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
            recipe=recipe,
            activation_checkpointing=activation_checkpointing,
        )
        step = optimizer_step_bytes(config, n_gpus, recipe=recipe)
        rows.append(
            {
                "size": size,
                "source": SIZE_SOURCES[size],
                **counts,
                "seq_len": length,
                "flops_per_token": flops_per_token(config, length),
                **{f"mem_{part}": value for part, value in memory.items()},
                "mem_optimizer_step": step["total"],  # its temporaries, once the activations are freed
                "mem_peak": peak_memory(memory, step)["peak"],
            }
        )
    return rows
