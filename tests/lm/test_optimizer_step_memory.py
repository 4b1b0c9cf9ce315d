"""The optimizer step's memory (issue 40, item 6): `sizes.optimizer_step_bytes` against the matrices
a real tiny Qwen3 hands StackedMuon and against the bytes a real step allocates on the CPU, and
`littlekit launch`'s plan checking the peak of the two phases of a step, not the forward/backward alone.

The measurement reads glibc's allocator (`mallinfo2`: bytes in use, heap and mmapped) after every
aten operation of the step (a TorchDispatchMode), so it sees each temporary while it is alive.
"""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from littlekit.cli import main
from littlekit.lm.launch import LaunchConfig, make_plan
from littlekit.lm.optim import MuonAdamW, _shape_groups, split_parameters
from littlekit.lm.sizes import (
    BF16,
    FP32,
    build_model,
    muon_matrix_groups,
    optimizer_split,
    optimizer_step_bytes,
    qwen3_config,
)

pytestmark = pytest.mark.usefixtures("one_thread")

SHAPES = [
    dict(hidden_size=256, intermediate_size=768, num_hidden_layers=2, head_dim=64),
    dict(hidden_size=192, intermediate_size=704, num_hidden_layers=3, head_dim=32),  # d_attn 128 < hidden
    dict(hidden_size=96, intermediate_size=64, num_hidden_layers=1, head_dim=32, tie_word_embeddings=False),
]


def tiny(shape: dict) -> torch.nn.Module:
    config = qwen3_config("micro", vocab_size=64, num_attention_heads=4, num_key_value_heads=2, **shape)
    return build_model(config)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_formula_stacks_the_matrices_the_optimizer_sees(shape):
    model = tiny(shape)
    hidden = [p for _, p in split_parameters(model)["muon"]]
    seen = [(key, len(indices)) for key, indices in _shape_groups(hidden).items()]  # in the step's order
    assert muon_matrix_groups(model.config) == seen
    assert sum(n * r * c for (r, c), n in seen) == sum(p.numel() for p in hidden)
    assert optimizer_split(model.config)["muon"] == sum(p.numel() for p in hidden)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                     "usmblks", "fsmblks", "uordblks", "fordblks",
                                                     "keepcost")]  # fmt: skip


def _libc():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "mallinfo2"):
        pytest.skip("needs glibc's mallinfo2 (glibc 2.33 or later)")
    libc.mallinfo2.restype = _MallInfo2
    return libc


class _PeakBytes(TorchDispatchMode):
    """The most bytes in use (glibc: heap + mmapped) right after any aten operation."""

    def __init__(self, libc):
        super().__init__()
        self.libc, self.peak = libc, 0

    def used(self) -> int:
        info = self.libc.mallinfo2()
        return info.uordblks + info.hblkhd

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.peak = max(self.peak, self.used())
        return out


def measured_step(model: torch.nn.Module, optimizer) -> int:
    """Bytes the second step allocates at its peak over what was in use before it (the first
    step creates the momentum buffers, which are state, not the step's)."""
    libc = _libc()
    for _ in range(2):
        for p in model.parameters():
            p.grad = torch.randn_like(p)
        with _PeakBytes(libc) as mode:
            before = mode.used()
            optimizer.step()
    return mode.peak - before


@pytest.mark.parametrize("shape", SHAPES[:2])
@pytest.mark.parametrize("ns_dtype", [torch.float32, torch.bfloat16])
def test_stacked_muon_step_allocates_what_the_formula_says(shape, ns_dtype):
    model = tiny(shape)
    optimizer = MuonAdamW(model)
    optimizer.optimizers[0].ns_dtype = ns_dtype  # bf16 as on a GPU, fp32 as on the CPU
    ns_bytes = BF16 if ns_dtype == torch.bfloat16 else FP32
    predicted = optimizer_step_bytes(model.config, recipe="ddp", ns_bytes=ns_bytes)
    assert predicted["muon_update"] == FP32 * optimizer_split(model.config)["muon"]
    assert measured_step(model, optimizer) == pytest.approx(predicted["total"], rel=0.01)


def test_torch_muon_one_matrix_at_a_time_and_adamw_allocate_what_the_formula_says():
    model = tiny(SHAPES[0])
    # FSDP hands torch's own Muon its shards; on whole tensors its step is the formula's bound
    muon = torch.optim.Muon([p for _, p in split_parameters(model)["muon"]])
    per_matrix = optimizer_step_bytes(model.config, 8, recipe="fsdp", ns_bytes=BF16)
    expected = per_matrix["muon_update"] + per_matrix["muon_stack"] + per_matrix["muon_temporaries"]
    assert measured_step(model, muon) == pytest.approx(expected, rel=0.01)
    adamw = optimizer_step_bytes(model.config, optimizer="adamw")
    assert measured_step(model, MuonAdamW(model, use_muon=False)) == pytest.approx(adamw["total"], rel=0.01)


def test_the_5b_plan_counts_the_muon_step():
    plan = make_plan(LaunchConfig(size="5B", tokens=80 * 10**9))
    memory = plan.memory_plan
    assert plan.ok and memory.parts["total"] == pytest.approx(123.5e9, rel=1e-3)  # forward/backward
    step = {k: round(v / 1e9, 1) for k, v in memory.step.items()}
    assert (step["muon_update"], step["muon_stack"], step["muon_temporaries"]) == (19.3, 15.6, 20.6)
    # at the step the activations (32.6 GB) and autocast's weight copies (9.8 GB) are freed
    assert memory.peak == memory.phases["step"] == pytest.approx(136.5e9, rel=1e-3)
    assert memory.muon_share == pytest.approx(0.07, abs=0.01)  # every rank runs all of it
    # an H200's 141 GB less headroom holds the forward/backward's 123.5 GB, not the step's peak
    h200 = make_plan(LaunchConfig(size="5B", tokens=80 * 10**9, gpu="H200"))
    assert any("136.5 GB at its peak (the optimizer step) exceeds 127 GB" in p for p in h200.problems)
    assert make_plan(LaunchConfig(size="5B", tokens=80 * 10**9, gpu="H200", parallel="fsdp")).ok


def test_launch_dry_run_prints_the_step_memory_and_the_peak(capsys):
    argv = ["launch", "--size", "5B", "--tokens", "80B", "--data", "/d", "--tokenizer", "/t", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert ("optimizer step/GPU (GB): Muon's Nesterov update 19.3, fp32 stack 15.6 and Newton-Schulz "
            "temporaries 20.6, then AdamW's 0.8") in out  # fmt: skip
    assert "peak 136.5 of 180.0" in out and "forward/backward total 123.5" in out
    assert "every rank runs the whole Muon step on every matrix" in out
    assert main([*argv, "--parallel", "fsdp"]) == 0
    assert "torch's Muon on each rank's shards" in capsys.readouterr().out
