"""The process group a multi-process run joins and what it reports (issue 40, items 4 and 7, and the
FSDP bf16 policy of item 6): the timeout sized to the checkpoint reaches init_process_group, resume
maps the trainer state instead of reading it, FSDP gathers in bf16 under --precision bf16, and
metrics records sum the ranks' throughput, with MFU and peak memory on a GPU only.

The two-rank checks run in two forked processes joined over gloo through `distributed.setup`, as
torchrun's environment variables describe them (fork: no second import of torch).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import socket
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from train_data import make_train_data

from littlekit.lm.sizes import build_model, qwen3_config
from littlekit.lm.train import loop as loop_module
from littlekit.lm.train.checkpoint import load_trainer_state, process_group_timeout
from littlekit.lm.train.config import TrainConfig
from littlekit.lm.train.distributed import autocast, fsdp_mixed_precision, setup, wrap_model
from littlekit.lm.train.loop import train
from littlekit.lm.train.metrics import model_flops_utilization, rate_fields

pytestmark = pytest.mark.usefixtures("one_thread")


def _rank(rank: int, port: int, out: str) -> None:
    """One of two ranks: join through setup(), then report what the checks read."""
    torch.set_num_threads(1)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))  # fmt: skip
    config = TrainConfig(data="unused", tokenizer="unused", run_dir="unused", device="cpu", parallel="fsdp")
    d = setup(config, timeout=timedelta(minutes=73))
    report = {"timeout_s": dist.distributed_c10d._get_default_group()._get_backend(d.device).options._timeout
              .total_seconds()}  # fmt: skip
    # each rank its own rate (100 and 200 tokens in one second): the record carries their sum
    loss, fields = rate_fields(d, rank_loss=1.0 + rank, rank_tokens=100.0 * (rank + 1), seconds=1.0,
                               flops_per_token=1e6)  # fmt: skip
    report.update(loss=loss, fields=fields)
    for precision in ("bf16", "fp32"):
        torch.manual_seed(0)
        model = build_model(qwen3_config("pico", vocab_size=64))
        wrapped = wrap_model(model, config, d, precision)
        sharded = (wrapped, model.model.layers[0])
        report[precision] = [str(m._get_fsdp_state()._mp_policy.param_dtype) for m in sharded]
        ids = torch.randint(0, 64, (2, 16))
        with autocast(precision, d.device):  # the gathered layers compute in bf16, the grads stay fp32
            wrapped(input_ids=ids, labels=ids).loss.backward()
        report[precision].append(str(model.model.layers[0].mlp.up_proj.weight.grad.dtype))
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("ranks")
    context = multiprocessing.get_context("fork")
    port = _free_port()
    workers = [context.Process(target=_rank, args=(rank, port, str(out))) for rank in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0]
    return [json.loads((out / f"rank{rank}.json").read_text()) for rank in range(2)]


def test_the_timeout_reaches_the_process_group(two_ranks):
    assert [r["timeout_s"] for r in two_ranks] == [73 * 60.0] * 2


def test_fsdp_gathers_in_bf16_only_under_bf16(two_ranks):
    for report in two_ranks:
        assert report["bf16"] == ["torch.bfloat16", "torch.bfloat16", "torch.float32"]  # fp32 reduced grads
        assert report["fp32"] == ["None", "None", "torch.float32"]  # FSDP's default: no casts
    policy = fsdp_mixed_precision("bf16")
    assert (policy.param_dtype, policy.reduce_dtype) == (torch.bfloat16, torch.float32)
    assert fsdp_mixed_precision("fp32") is None


def test_throughput_is_summed_over_the_ranks_and_gpu_fields_stay_off_the_cpu(two_ranks):
    for report in two_ranks:
        assert report["loss"] == 1.5  # the ranks' mean, as before
        assert report["fields"] == {"tokens_per_s_summed": 300.0}  # no mfu, no peak_mem_gib on the CPU


def test_mfu_from_the_device_name():
    # 1e5 tokens/s x 1e10 FLOPs/token = 1e15 FLOP/s
    assert model_flops_utilization(1e5, 1e10, "NVIDIA B200") == pytest.approx(1e15 / 2.25e15)
    assert model_flops_utilization(1e5, 1e10, "NVIDIA H100 80GB HBM3") == pytest.approx(1e15 / 989e12)
    assert model_flops_utilization(1e5, 1e10, "NVIDIA H200") == pytest.approx(1e15 / 989e12)
    for unknown in ("NVIDIA H100 PCIe", "NVIDIA GH200 480GB", "NVIDIA A100-SXM4-80GB", "cpu"):
        assert model_flops_utilization(1e5, 1e10, unknown) is None, unknown


def _config(**settings) -> TrainConfig:
    return TrainConfig(data="unused", tokenizer="unused", run_dir="unused", **settings)


def test_the_default_timeout_grows_with_the_checkpoint():
    # 5B: a ~41 GB checkpoint, written in ~3.5 minutes at 200 MB/s
    assert process_group_timeout(_config(size="5B"), 32_768) == timedelta(minutes=30)
    assert process_group_timeout(_config(dist_timeout_minutes=90.0), 384) == timedelta(minutes=90)
    # 5B widths at 200 layers: ~27B parameters, a ~220 GB checkpoint, twice its write at 200 MB/s
    deep = process_group_timeout(_config(size="5B", model_overrides={"num_hidden_layers": 200}), 32_768)
    assert timedelta(minutes=35) < deep < timedelta(minutes=40)


def _mapped_files(tensor: torch.Tensor) -> list[str]:
    """The files /proc/self/maps says hold the tensor's first byte."""
    address = tensor.untyped_storage().data_ptr()
    hits = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        span, *rest = line.split(maxsplit=5)
        low, high = (int(x, 16) for x in span.split("-"))
        if low <= address < high and len(rest) == 5:
            hits.append(rest[-1])
    return hits


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads Linux's /proc/self/maps")
def test_resume_maps_the_trainer_state_from_its_file_and_the_optimizer_copies_it_out(tmp_path, monkeypatch):
    data = make_train_data(tmp_path / "data", n_train=40, n_val=8)
    config = TrainConfig(data=data["train"], tokenizer=data["tokenizer"], run_dir=str(tmp_path / "run"),
                         seq_len=32, global_batch=2, micro_batch=2, max_steps=2, progress=False)  # fmt: skip
    result = train(config)
    records = [json.loads(line) for line in Path(result.metrics_path).read_text().splitlines()]
    assert all("cpu_s" in r and "tokens_per_s_summed" in r for r in records if "loss" in r)
    assert not any("mfu" in r or "peak_mem_gib" in r for r in records)  # GPU-only fields
    state_file = Path(result.last_checkpoint) / "trainer_state.pt"
    state = load_trainer_state(result.last_checkpoint)
    momentum = next(iter(state["optimizer"]["state"].values()))["momentum_buffer"]
    assert _mapped_files(momentum) == [str(state_file)]  # pages of the file, shared between ranks
    del state, momentum

    # ... but once restored, the optimizer owns its state: a tensor left mapped would pin the file
    # the next save swaps away (on NFS, `last.old/` could not be deleted and the save after fails)
    restored = {}
    real_restore = loop_module.restore

    def keep_optimizer(state, wrapped, optimizer, loader, d):
        real_restore(state, wrapped, optimizer, loader, d)
        restored["optimizer"] = optimizer

    monkeypatch.setattr(loop_module, "restore", keep_optimizer)
    train(dataclasses.replace(config, max_steps=3, resume="auto"))
    tensors = [value for inner in restored["optimizer"].optimizers for param_state in inner.state.values()
               for value in param_state.values() if isinstance(value, torch.Tensor)]  # fmt: skip
    mapped = [f for t in tensors if t.numel() for f in _mapped_files(t) if "trainer_state.pt" in f]
    assert tensors and not mapped, mapped[:3]


def test_a_gpu_record_carries_mfu_and_peak_memory(monkeypatch):
    """rate_fields on a (one-rank) CUDA device: the GPU's name picks the peak, the allocator's most
    held gives peak_mem_gib; a GPU of unknown peak gets no mfu; the CPU gets neither."""
    from littlekit.lm.train.distributed import Dist

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 3 * 2**30)
    gpu = Dist(0, 1, 0, torch.device("cuda", 0))
    loss, fields = rate_fields(gpu, 2.5, 1e5, 1.0, 1e10)  # 1e5 tokens/s x 1e10 FLOPs/token = 1e15 FLOP/s
    assert loss == 2.5 and fields["tokens_per_s_summed"] == pytest.approx(1e5)
    assert fields["mfu"] == pytest.approx(1e15 / 989e12) and fields["peak_mem_gib"] == pytest.approx(3.0)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA A100-SXM4-80GB")
    assert "mfu" not in rate_fields(gpu, 2.5, 1e5, 1.0, 1e10)[1]
    _, on_cpu = rate_fields(Dist(0, 1, 0, torch.device("cpu")), 2.5, 1e5, 1.0, 1e10)
    assert set(on_cpu) == {"tokens_per_s_summed"}


def test_train_gives_the_process_group_the_timeout_sized_to_its_checkpoint(tmp_path, monkeypatch):
    data = make_train_data(tmp_path / "data", n_train=40, n_val=8)
    config = TrainConfig(data=data["train"], tokenizer=data["tokenizer"], run_dir=str(tmp_path / "run"),
                         seq_len=32, global_batch=2, micro_batch=2, max_steps=1, progress=False,
                         dist_timeout_minutes=45.0)  # fmt: skip
    seen = []
    real_setup = loop_module.setup

    def spy(config, timeout=None):
        seen.append(timeout)
        return real_setup(config, timeout)

    monkeypatch.setattr(loop_module, "setup", spy)
    train(config)
    assert seen == [timedelta(minutes=45)]
