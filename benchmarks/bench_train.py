"""Training tokens/s of `littlekit train` against the transformers Trainer, same model, data and batch.

    python benchmarks/bench_train.py [--docs 1000] [--vocab-size 4096] [--size micro] [--seq-len 256]
        [--batch 16] [--steps 30] [--warmup 5] [--repeats 2] [--threads 1] [--compile]

A byte-level BPE (littlekit.lm.tokenizer) is trained on the first --docs texts of the embedded demo
corpus and the texts are written as token shards (littlekit.lm.shards) in a temporary folder. Three
trainers then train the same freshly initialised model (same seed) on the same rows in the same
order (one `BatchLoader` stream; the Trainer reads it through an IterableDataset, one row at a
time), --batch sequences of --seq-len tokens per step, no gradient accumulation, fp32 on the
CPU, gradient norm clipped at 1.0, a constant learning rate:

- ours, muon:  `littlekit.lm.train.train` as it trains by default (Muon + AdamW);
- ours, adamw: the same loop with AdamW for every parameter;
- HF Trainer:  `transformers.Trainer` with torch AdamW, the same lr, betas and eps.

"ours, adamw" and the Trainer do the same arithmetic: the Trainer is given the same shifted
labels (`shift_labels`), so both compute the mean loss over every token of the batch, and their
losses should agree step for step (printed). Ours computes that loss with
`littlekit.lm.train.linear_cross_entropy` (the LM head and the cross-entropy fused, in chunks,
its gradients formed in the forward) rather than full logits and `F.cross_entropy`: the same
sums in another order, so the two agree to float rounding (~1e-6), not bit for bit. The check is
printed in two lines: from the same initial weights on the first batch, the gap between the two
losses and their gradients ("agree" below 1e-4); then the losses along the two runs, which agree
while training is stable, and where an unstable step (a loss jumping up) amplifies the rounding
until they part, the line names that step. The ratio measures what our loop does differently
(the fused loss, `StackedMuon`, foreach AdamW) and the Trainer's own overhead (accelerate,
callbacks, collation). With --compile a fourth row times ours with `--compile` (torch.compile of
the decoder); its compile time, paid in the first step, is printed apart.

Each trainer runs --warmup + --steps steps; the first --warmup are excluded from the timing.
Rates are per wall second and per CPU second of this process (all its threads): on a shared
machine other work steals wall time, not CPU time. Trainers alternate over --repeats rounds and
each keeps its best round (by CPU rate). --threads defaults to 1: a nano model's operations are
too small to split, and on a busy 2-core machine two torch threads spend most of their time
waiting for each other.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from littlekit import config
from littlekit.analysis.throughput import facts_line

SAME_LOSS = 1e-4  # losses closer than this: the same arithmetic up to float rounding
SAME_GRADIENT = 1e-4  # and gradients closer than this, relative to each parameter's largest


def load_texts(n: int) -> list[str]:
    path = config.data_path("demo_corpus/demo_web.jsonl")
    with path.open(encoding="utf-8") as handle:
        texts = [json.loads(line).get("text") or "" for line in handle if line.strip()]
    return [text for text in texts if text][:n]


def rate(tokens: int, wall: float, cpu: float) -> dict[str, float]:
    wall, cpu = max(wall, 1e-9), max(cpu, 1e-9)
    return {"wall_tps": tokens / wall, "cpu_tps": tokens / cpu, "wall": wall, "cpu": cpu}


def run_ours(
    args, paths: dict[str, str], optimizer: str, run_dir: Path, compile: bool = False
) -> tuple[dict, list[float]]:
    from littlekit.lm.train.config import TrainConfig
    from littlekit.lm.train.loop import train

    steps = args.warmup + args.steps
    result = train(
        TrainConfig(
            data=paths["train"],
            tokenizer=paths["tokenizer"],
            run_dir=str(run_dir),
            size=args.size,
            seq_len=args.seq_len,
            global_batch=args.batch,
            micro_batch=args.batch,
            max_steps=steps,
            warmup_steps=0,
            cooldown_steps=0,
            optimizer=optimizer,
            adamw_lr=args.lr,
            seed=args.seed,
            eval_every=0,
            device="cpu",
            precision="fp32",
            compile=compile,
            progress=False,
        )
    )
    records = [json.loads(line) for line in Path(result.metrics_path).read_text().splitlines()]
    by_step = {r["step"]: r for r in records}
    first, last = by_step[args.warmup], by_step[steps]
    tokens = args.steps * args.batch * args.seq_len
    measured = rate(tokens, last["elapsed_s"] - first["elapsed_s"], last["cpu_s"] - first["cpu_s"])
    measured["first_step_s"] = by_step[1]["elapsed_s"]
    return measured, result.losses


def fresh_model(args, paths: dict[str, str]):
    """The model ours starts from: built the same way, after the same seed."""
    import torch
    from transformers import AutoTokenizer

    from littlekit.lm.sizes import build_model, qwen3_config

    tokenizer = AutoTokenizer.from_pretrained(paths["tokenizer"])
    torch.manual_seed(args.seed)
    model = build_model(
        qwen3_config(
            args.size,
            len(tokenizer),
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
    )
    model.config.use_cache = False
    return model


def first_step_gaps(args, paths: dict[str, str]) -> tuple[float, float]:
    """(|loss gap|, largest gradient gap relative to that parameter's largest gradient) between
    our training loss (`make_loss`, as `train` builds it) and the Trainer's (the model's own loss
    on shift_labels), from the same initial weights on the first batch: the arithmetic itself,
    apart from how rounding grows over many steps."""
    from littlekit.lm.shards import BatchLoader
    from littlekit.lm.train.fused_loss import make_loss

    input_ids, labels = next(BatchLoader(paths["train"], args.seq_len, args.batch, args.seed))
    ours, theirs = fresh_model(args, paths).train(), fresh_model(args, paths).train()
    loss_ours = make_loss(ours)(input_ids, labels)
    loss_theirs = theirs(input_ids=input_ids, labels=labels, shift_labels=labels).loss
    loss_ours.backward()
    loss_theirs.backward()
    grads = zip(ours.parameters(), theirs.parameters(), strict=True)
    gap = max(float((a.grad - b.grad).abs().max() / b.grad.abs().max().clamp(min=1e-30)) for a, b in grads)
    return abs(loss_ours.item() - loss_theirs.item()), gap


def run_hf(args, paths: dict[str, str], out_dir: Path) -> tuple[dict, list[float]]:
    import torch
    from transformers import PrinterCallback, Trainer, TrainerCallback, TrainingArguments

    from littlekit.lm.shards import BatchLoader

    class Rows(torch.utils.data.IterableDataset):
        """The loader's rows in its global order, one at a time, as the Trainer's examples."""

        def __iter__(self):
            loader = BatchLoader(paths["train"], args.seq_len, 1, args.seed)
            for input_ids, labels in loader:
                yield {"input_ids": input_ids[0], "labels": labels[0], "shift_labels": labels[0]}

    class Clock(TrainerCallback):
        def __init__(self):
            self.marks: list[tuple[float, float]] = []
            self.losses: list[float] = []

        def on_step_end(self, training_args, state, control, **kwargs):
            self.marks.append((time.perf_counter(), time.process_time()))

        def on_log(self, training_args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

    model = fresh_model(args, paths)
    training_args = TrainingArguments(
        output_dir=str(out_dir),
        per_device_train_batch_size=args.batch,
        max_steps=args.warmup + args.steps,
        learning_rate=args.lr,
        weight_decay=0.0,
        adam_beta1=0.9,
        adam_beta2=0.95,
        adam_epsilon=1e-8,
        max_grad_norm=1.0,
        lr_scheduler_type="constant",
        optim="adamw_torch",
        logging_strategy="steps",
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        seed=args.seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
        remove_unused_columns=False,  # else shift_labels (a **kwargs of forward) is dropped
    )
    clock = Clock()
    trainer = Trainer(model=model, args=training_args, train_dataset=Rows(), callbacks=[clock])
    trainer.remove_callback(PrinterCallback)  # it prints every step's logs
    # The Trainer would divide the summed loss by a token count taken from `labels` with its own
    # shift (seq_len - 1 per row); the model's mean over shift_labels is the loss ours computes.
    trainer.model_accepts_loss_kwargs = False
    trainer.train()
    (wall0, cpu0), (wall1, cpu1) = clock.marks[args.warmup - 1], clock.marks[-1]
    tokens = args.steps * args.batch * args.seq_len
    return rate(tokens, wall1 - wall0, cpu1 - cpu0), clock.losses


def print_same_arithmetic(ours: list[float], theirs: list[float], first_step: tuple[float, float]) -> None:
    """The check: the first step's loss and gradients agree to float rounding, and so do the
    losses along the run while rounding has not been amplified (an unstable step, a loss that
    jumps up, can turn 1e-7 into 1e-1 in a few steps; the step where they part is named)."""
    loss_gap, grad_gap = first_step
    same = loss_gap < SAME_LOSS and grad_gap < SAME_GRADIENT
    verdict = "agree (float rounding)" if same else "DIFFER: not the same arithmetic"
    print(f"same arithmetic check, first step from the same weights: loss gap {loss_gap:.2e}, largest "
          f"relative gradient gap {grad_gap:.2e}: {verdict}")  # fmt: skip
    gaps = [abs(a - b) for a, b in zip(ours, theirs, strict=False)]
    parted = next((i + 1 for i, g in enumerate(gaps) if g >= SAME_LOSS), None)
    along = "agree" if parted is None else f"part from step {parted} (loss {theirs[parted - 1]:.4f} there)"
    print(f"  along the run: ours (adamw) and the HF Trainer differ by at most {max(gaps):.2e} in loss "
          f"over {len(gaps)} steps: {along}")  # fmt: skip


def matmul_rates(rows: int, hidden: int, widths: dict[str, int], seconds: float = 0.5) -> dict[str, float]:
    """fp32 FLOP/s of `[rows, hidden] @ [hidden, width]` per named width, measured here on the
    threads torch has now (best of several timed batches, after a warm-up)."""
    import torch

    measured = {}
    for name, width in widths.items():
        a, b = torch.randn(rows, hidden), torch.randn(hidden, width)
        torch.mm(a, b)  # warm-up: first-call allocation and kernel choice
        best, spent = float("inf"), 0.0
        while spent < seconds:
            start = time.perf_counter()
            for _ in range(5):
                torch.mm(a, b)
            took = (time.perf_counter() - start) / 5
            best, spent = min(best, took), spent + 5 * took
        measured[name] = 2 * rows * hidden * width / best
    return measured


def print_mfu(best: dict[str, dict], flops: int, peak: dict[str, float], threads: int) -> None:
    """Model FLOP/s (flops per token x tokens per CPU second) over the best matmul rate measured at
    the model's own shapes: how much of what this CPU does for these shapes the trainer reaches."""
    ceiling = max(peak.values())
    print("fp32 matmul at the model's shapes, this process, " + f"{threads} thread(s): " + ", ".join(
        f"{name} {rate / 1e9:.1f} GFLOP/s" for name, rate in peak.items()))  # fmt: skip
    print(f"model FLOPs per token {flops / 1e6:.2f}M (6N + attention); MFU = model FLOP/s per CPU "
          f"second / {ceiling / 1e9:.1f} GFLOP/s (the best shape, per thread)")  # fmt: skip
    for name, m in best.items():
        achieved = flops * m["cpu_tps"]
        print(f"  {name:<14} {achieved / 1e9:6.1f} GFLOP/s per CPU second = MFU {achieved / ceiling:.0%}")
    if "HF Trainer" in best:
        # Same model, same FLOPs per token: no trainer can beat the Trainer by more than this here.
        trainer_mfu = flops * best["HF Trainer"]["cpu_tps"] / ceiling
        print(f"  the most any trainer could reach at MFU 100%: {1 / trainer_mfu:.2f}x the HF Trainer")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=1000, help="demo-corpus texts to train on")
    parser.add_argument("--vocab-size", type=int, default=4096)
    parser.add_argument("--size", default="micro", help="the book's size by default")
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batch", type=int, default=16, help="sequences per step")
    parser.add_argument("--steps", type=int, default=30, help="timed steps")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps before them (>= 1)")
    parser.add_argument("--repeats", type=int, default=2, help="rounds; each trainer keeps its best")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    parser.add_argument("--lr", type=float, default=3e-3, help="AdamW learning rate (Muon keeps its 0.02)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compile", action="store_true", help="also time ours under torch.compile")
    args = parser.parse_args(argv)
    if args.warmup < 1 or args.steps < 1:
        parser.error("--warmup and --steps must be at least 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers.utils import logging as hf_logging

    from littlekit.lm.shards import write_shards
    from littlekit.lm.sizes import flops_per_token, param_counts, qwen3_config
    from littlekit.lm.tokenizer import train_tokenizer

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(facts_line())
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), CPU, fp32")
    with tempfile.TemporaryDirectory(prefix="bench-train-") as work:
        root = Path(work)
        texts = load_texts(args.docs)
        tokenizer = train_tokenizer(texts, args.vocab_size, out_dir=root / "tokenizer")
        manifest = write_shards(texts, tokenizer, root / "train")
        paths = {"tokenizer": str(root / "tokenizer"), "train": str(root / "train")}
        model_config = qwen3_config(args.size, len(tokenizer))
        counts = param_counts(model_config)
        print(f"data: {len(texts):,} demo-corpus texts, {manifest['n_tokens']:,} tokens, vocabulary "
              f"{len(tokenizer):,}; model {args.size}: {counts['total'] / 1e6:.2f}M parameters "
              f"({counts['non_embedding'] / 1e6:.2f}M non-embedding)")  # fmt: skip
        print(
            f"batch {args.batch} x {args.seq_len} = {args.batch * args.seq_len:,} tokens per step; "
            f"{args.steps} timed steps after {args.warmup} warm-up steps; best of {args.repeats} round(s)"
        )
        runs = {
            "ours, muon": lambda i: run_ours(args, paths, "muon", root / f"muon{i}"),
            "ours, adamw": lambda i: run_ours(args, paths, "adamw", root / f"adamw{i}"),
            "HF Trainer": lambda i: run_hf(args, paths, root / f"hf{i}"),
        }
        if args.compile:
            runs["ours, compiled"] = lambda i: run_ours(args, paths, "muon", root / f"c{i}", compile=True)
        first_step = first_step_gaps(args, paths)
        best: dict[str, dict] = {}
        losses: dict[str, list[float]] = {}
        for i in range(args.repeats):
            for name, run in runs.items():
                measured, losses[name] = run(i)
                if name not in best or measured["cpu_tps"] > best[name]["cpu_tps"]:
                    best[name] = measured
        widths = {
            "MLP [B*T, d] @ [d, ffn]": model_config.intermediate_size,
            "head [B*T, d] @ [d, V]": model_config.vocab_size,
        }
        peak = matmul_rates(args.batch * args.seq_len, model_config.hidden_size, widths)
    hf = best["HF Trainer"]
    print(f"{'trainer':<14} {'tokens/s':>9} {'tokens/s/core':>14} {'wall s':>7} {'cpu s':>7} "
          f"{'/ HF (wall)':>12} {'/ HF (cpu)':>11} {'final loss':>11}")  # fmt: skip
    for name, m in best.items():
        print(f"{name:<14} {m['wall_tps']:9,.0f} {m['cpu_tps']:14,.0f} {m['wall']:7.2f} {m['cpu']:7.2f} "
              f"{m['wall_tps'] / hf['wall_tps']:12.2f} {m['cpu_tps'] / hf['cpu_tps']:11.2f} "
              f"{losses[name][-1]:11.4f}")  # fmt: skip
    print_same_arithmetic(losses["ours, adamw"], losses["HF Trainer"], first_step)
    print_mfu(best, flops_per_token(model_config, args.seq_len), peak, torch.get_num_threads())
    if "ours, compiled" in best:
        print(f"ours, compiled: first step (torch.compile) {best['ours, compiled']['first_step_s']:.1f}s, "
              f"against {best['ours, muon']['first_step_s']:.2f}s uncompiled")  # fmt: skip
    print("ratio = our tokens/s / the HF Trainer's (same model, rows, batch, precision, process)")
    print(facts_line())


if __name__ == "__main__":
    main()
