"""The training loop: build the model, optimizer and loader, step, validate, log and checkpoint.

Each optimizer step takes `global_batch` sequences of `seq_len` tokens from the BOS-aligned
`shards.BatchLoader`, split over the processes (`micro_batch` each per forward/backward) and
gradient accumulation. The loader hands rank r its contiguous share of each global batch, so N
processes see the same rows per step as one process accumulating them.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from littlekit.lm.shards import BatchLoader, count_eval_batches
from littlekit.lm.train.checkpoint import (
    RESUME_ELSEWHERE,
    check_finite,
    check_resume_settings,
    load_trainer_state,
    no_transformers_bars,
    process_group_timeout,
    resolve_resume,
    restore,
    save_checkpoint,
    truncate_metrics,
)
from littlekit.lm.train.checks import (
    accumulation_steps,
    check_config,
    check_vocabulary,
    check_writable,
    hold_run_dir,
)
from littlekit.lm.train.config import BEST, CONFIG_JSON, LAST, METRICS, RESULTS, TrainConfig, TrainResult
from littlekit.lm.train.distributed import (
    Dist,
    all_sum,
    autocast,
    barrier,
    resolve_precision,
    setup,
    sync_context,
    wrap_model,
)
from littlekit.lm.train.fused_loss import make_loss
from littlekit.lm.train.metrics import TrainLog, device_peak_flops, rate_fields, validate


def build_model(config: TrainConfig, tokenizer: Any, weights_from: str | None) -> torch.nn.Module:
    """A fresh model of config.size for the tokenizer, or the save_pretrained weights `weights_from`."""
    from transformers import AutoModelForCausalLM

    from littlekit.lm.sizes import build_model as build_qwen3
    from littlekit.lm.sizes import qwen3_config

    torch.manual_seed(config.seed)
    if weights_from is not None:
        with no_transformers_bars():
            model = AutoModelForCausalLM.from_pretrained(weights_from, dtype=torch.float32)
    else:
        bos, eos, pad = tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id
        model_config = qwen3_config(
            config.size,
            len(tokenizer),
            bos_token_id=bos,
            eos_token_id=eos,
            pad_token_id=pad if pad is not None else eos,
            **config.model_overrides,
        )
        model = build_qwen3(model_config)
    if len(tokenizer) > model.config.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokenizer)} ids, the model {model.config.vocab_size}")
    if config.seq_len > model.config.max_position_embeddings:
        raise ValueError(
            f"seq_len {config.seq_len} exceeds the model's max_position_embeddings "
            f"{model.config.max_position_embeddings}"
        )
    model.config.use_cache = False
    return model


def build_optimizer(model: torch.nn.Module, config: TrainConfig) -> Any:
    """Muon for the 2-D hidden matrices and AdamW for the rest, or AdamW for all (littlekit.lm.optim)."""
    from littlekit.lm.optim import MuonAdamW

    return MuonAdamW(
        model,
        muon_lr=config.muon_lr,
        adamw_lr=config.adamw_lr,
        weight_decay=config.weight_decay,
        use_muon=config.optimizer == "muon",
    )


def build_schedule(config: TrainConfig) -> Any:
    """The warmup-stable-cool-off learning-rate factor of each step."""
    from littlekit.lm.optim import wsd_schedule

    return wsd_schedule(config.max_steps, config.warmup_steps, config.cooldown_steps, config.min_lr_ratio)


STAGED = ".new"  # a replacing run's train_config.json and metrics.jsonl until its first checkpoint
ASIDE = "replaced.tmp"  # the replaced run's files while the first checkpoint is swapped in


class TrainingDiverged(RuntimeError):
    """The loss, the gradient norm or the weights stopped being finite numbers: training stopped,
    and nothing from that step on was saved (last/ and best/ keep the last good checkpoints)."""


def train(config: TrainConfig) -> TrainResult:
    """Run (or resume) the training run `config` describes; see the package docstring."""
    from littlekit.lm.tokenizer import load_tokenizer

    check_config(config)
    check_writable(config.run_dir)
    with hold_run_dir(config):  # one run per run_dir: a second one is refused while this one runs
        tokenizer = load_tokenizer(config.tokenizer)
        d = setup(config, process_group_timeout(config, len(tokenizer)))
        return _train(config, d, tokenizer)


def train_side_by_side(configs: list[TrainConfig], processes: int = 2, threads: int = 1) -> list[TrainResult]:
    """Independent single-process runs, `processes` at a time, each in its own process with
    `threads` CPU threads (`littlekit.processes.side_by_side`); results in the order of `configs`.
    Each run is exactly what `train(config)` does alone."""
    from littlekit.processes import side_by_side

    for config in configs:
        check_config(config)
    return side_by_side(train, configs, processes, threads)


@dataclass
class _Tally:
    """What the run has done so far, as trainer_state.json records it (carried over on resume)."""

    step: int = 0
    best_val_bpb: float | None = None
    best_step: int | None = None
    last_val_bpb: float | None = None
    elapsed_s: float = 0.0  # this process's wall seconds of training steps
    cpu_s: float = 0.0  # and its CPU seconds (evaluation and saving excluded from both)

    @classmethod
    def resumed(cls, state: dict[str, Any] | None) -> _Tally:
        if state is None:
            return cls()
        return cls(state["step"], state["best_val_bpb"], state["best_step"], state.get("last_val_bpb"),
                   state["elapsed_s"], state.get("cpu_s", 0.0))  # fmt: skip


class _FiniteWatch:
    """Whether each step's loss and gradient norm were finite, kept on the device (the loop does
    not wait for the GPU) until `first_bad` looks, at the same steps on every rank."""

    def __init__(self) -> None:
        self.steps: list[int] = []
        self.bad: list[torch.Tensor] = []

    def note(self, step: int, total: torch.Tensor, grad_norm: torch.Tensor | None) -> None:
        bad = ~torch.isfinite(total)
        if grad_norm is not None:
            local = grad_norm.to_local() if hasattr(grad_norm, "to_local") else grad_norm  # DTensor
            bad = bad | ~torch.isfinite(local)
        self.steps.append(step)
        self.bad.append(bad)

    def first_bad(self, d: Dist) -> int | None:
        """The first noted step that was not finite on some rank (collective), or None."""
        if not self.steps:
            return None
        flags = all_sum(torch.stack(self.bad).double().tolist(), d)
        steps, self.steps, self.bad = self.steps, [], []
        return next((step for step, flag in zip(steps, flags, strict=True) if flag), None)


def _finite_weights(model: torch.nn.Module, d: Dist) -> bool:
    """Every parameter finite on every rank (collective; a DTensor's local shard under FSDP)."""
    with torch.no_grad():
        local = [p.to_local() if hasattr(p, "to_local") else p for p in model.parameters()]
        bad = float((~torch.stack([torch.isfinite(p).all() for p in local])).sum())
    return all_sum([bad], d)[0] == 0


@dataclass
class _Run:
    """The pieces of one training run that evaluation and checkpoints need."""

    config: TrainConfig
    d: Dist
    tokenizer: Any
    raw: torch.nn.Module  # the model itself
    wrapped: torch.nn.Module  # what the forward runs through: the model, DDP or FSDP2
    optimizer: Any
    loader: BatchLoader
    precision: str
    val_total: int  # global validation batches in the held-out stream
    tally: _Tally
    replacing: bool = False  # rank 0: run_dir holds an earlier run's files, replaced at the first save
    log: TrainLog | None = None
    saved: dict[str, int] = field(default_factory=dict)  # {last/best: the step it holds}

    @property
    def tokens_per_step(self) -> int:
        return self.config.global_batch * self.config.seq_len

    def evaluate(self) -> dict[str, float]:
        if not self.config.val_data:
            return {}
        return validate(self.raw, self.config, self.d, self.precision, self.val_total)

    def info(self) -> dict[str, Any]:
        t = self.tally
        return {
            "step": t.step,
            "tokens": t.step * self.tokens_per_step,
            "max_steps": self.config.max_steps,
            "last_val_bpb": t.last_val_bpb,
            "best_val_bpb": t.best_val_bpb,
            "best_step": t.best_step,
            "world_size": self.d.world_size,
            "elapsed_s": t.elapsed_s,
            "cpu_s": t.cpu_s,
            "config": asdict(self.config),
        }

    def save(self, which: str, with_state: bool) -> None:
        """Write run_dir/which: the weights, and with_state the trainer state to resume from.
        Weights that are not finite are never written (TrainingDiverged)."""
        if not _finite_weights(self.raw, self.d):
            raise TrainingDiverged(
                f"the weights after step {self.tally.step:,} are not finite numbers (NaN or inf); "
                f"training stopped without saving them as {which}/. {self.kept()}"
            )
        path = Path(self.config.run_dir) / which
        optimizer, loader = (self.optimizer, self.loader) if with_state else (None, None)
        swap = self._replace_previous if self.replacing else None
        save_checkpoint(path, self.wrapped, self.raw, self.tokenizer, self.d, self.info(), optimizer, loader,
                        before_swap=swap)  # fmt: skip
        if swap is not None:
            shutil.rmtree(Path(self.config.run_dir) / ASIDE, ignore_errors=True)
            self.replacing = False
        self.saved[which] = self.tally.step

    def _replace_previous(self) -> None:
        """(rank 0, the first checkpoint of a fresh run in an old run_dir, written but not yet in
        place) Move the old run's files aside and the new train_config.json and metrics.jsonl in."""
        run_dir = Path(self.config.run_dir)
        aside = run_dir / ASIDE
        shutil.rmtree(aside, ignore_errors=True)
        aside.mkdir()
        for name in (*RESULTS, CONFIG_JSON):
            if (run_dir / name).exists():
                (run_dir / name).rename(aside / name)
        for name in (CONFIG_JSON, METRICS):
            if (run_dir / (name + STAGED)).exists():
                (run_dir / (name + STAGED)).rename(run_dir / name)
        if self.log is not None:
            self.log.path = run_dir / METRICS

    def kept(self) -> str:
        """What the run directory still holds, for a message."""
        held = [f"{which}/ of step {step:,}" for which, step in sorted(self.saved.items())]
        if self.replacing:
            return f"{self.config.run_dir} still holds the run it was to replace, untouched."
        if not held:
            return "No checkpoint of this run was saved."
        return f"The run directory keeps {' and '.join(held)}."

    def diverged(
        self, step: int, logged: int | None = None, loss: float | None = None, norm: float | None = None
    ) -> TrainingDiverged:
        """The error for a step whose loss or gradient norm was not finite (and the logged step's)."""
        detail = ""
        if logged is not None:
            at = "" if logged == step else f"at step {logged:,}: "
            detail = f" ({at}loss {loss}, gradient norm {norm})"
        return TrainingDiverged(
            f"training diverged at step {step:,}: the loss or the gradient norm is not a finite number"
            f"{detail}; stopped without saving its weights. {self.kept()} Lower --muon-lr / --adamw-lr "
            f"or lengthen --warmup-steps, then start again."
        )


def _start_files(config: TrainConfig, d: Dist, resumed_step: int | None) -> bool:
    """train_config.json, and metrics.jsonl as the run continues it (rank 0). True when a fresh
    run starts in a directory holding an earlier run's files: its train_config.json and
    metrics.jsonl are written beside them (name.new) until its first checkpoint replaces them."""
    if not d.main:
        return False
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    for name in (CONFIG_JSON, METRICS):  # left by a replacing run stopped before its first checkpoint
        (run_dir / (name + STAGED)).unlink(missing_ok=True)
    replacing = resumed_step is None and any((run_dir / name).exists() for name in RESULTS)
    path = run_dir / (CONFIG_JSON + (STAGED if replacing else ""))
    path.write_text(json.dumps(asdict(config), indent=2) + "\n", encoding="utf-8")
    if resumed_step is not None:
        truncate_metrics(run_dir / METRICS, resumed_step)
    return replacing


def _optimizer_step(run: _Run, loss_of: Any, accumulation: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """One optimizer step: `accumulation` forward/backward passes, the clip, the update; returns
    the sum of the passes' losses (on the device, not waited for) and the gradient norm."""
    config, d = run.config, run.d
    total = torch.zeros((), device=d.device)
    for micro in range(accumulation):
        input_ids, labels = next(run.loader)
        input_ids, labels = input_ids.to(d.device), labels.to(d.device)
        last = micro == accumulation - 1
        with sync_context(run.wrapped, config, d, last), autocast(run.precision, d.device):
            loss = loss_of(input_ids, labels)
        # Training rows are packed full, so every pass scores as many tokens and the mean of the
        # passes' means (DDP/FSDP average it over ranks too) is the global batch's mean loss.
        (loss / accumulation).backward()
        total += loss.detach()
    grad_norm = None
    if config.grad_clip > 0:
        grad_norm = torch.nn.utils.clip_grad_norm_(run.raw.parameters(), config.grad_clip)
    run.optimizer.step()
    run.optimizer.zero_grad(set_to_none=True)
    return total, grad_norm


def _flops_per_token(raw: torch.nn.Module, config: TrainConfig) -> int | None:
    """The model's training FLOPs per token (`sizes.flops_per_token`), None for a config it cannot read."""
    from littlekit.lm.sizes import flops_per_token

    try:
        return flops_per_token(raw.config, config.seq_len)
    except (AttributeError, TypeError):  # --init-from weights of another architecture
        return None


def _norm_value(norm: torch.Tensor | None) -> float | None:
    if norm is None:
        return None
    if hasattr(norm, "full_tensor"):  # a DTensor under FSDP
        norm = norm.full_tensor()
    return float(norm)


def _save_if_finite(run: _Run, watch: _FiniteWatch) -> None:
    """last/, unless a step since the last look was not finite (TrainingDiverged)."""
    bad = watch.first_bad(run.d)
    if bad is not None:
        raise run.diverged(bad)
    run.save(LAST, with_state=True)


def _train(config: TrainConfig, d: Dist, tokenizer: Any) -> TrainResult:
    run_dir = Path(config.run_dir)
    sources = config.sources()
    check_vocabulary(tokenizer, list(sources) + ([config.val_data] if config.val_data else []))
    accumulation = accumulation_steps(config.global_batch, config.micro_batch, d.world_size)
    precision = resolve_precision(config, d.device)
    schedule = build_schedule(config)
    resume = resolve_resume(config)
    state = load_trainer_state(resume) if resume is not None else None
    if state is not None:
        check_resume_settings(config, resume, state.get("config"))
        check_finite(resume, {"optimizer": state["optimizer"]}, "optimizer state")

    # The order below is the RNG's: the model is initialised from the seed, then a resumed run
    # puts back the RNG state it saved.
    weights_from = str(resume) if resume is not None else config.init_from
    raw = build_model(config, tokenizer, weights_from)
    if weights_from is not None:
        fix = RESUME_ELSEWHERE if resume is not None else "pass other weights to --init-from"
        check_finite(weights_from, raw.state_dict(), "weights", fix)
    wrapped = wrap_model(raw, config, d, precision)
    loss_of = make_loss(raw, wrapped, config.compile, d.world_size, precision)
    optimizer = build_optimizer(raw, config)
    loader = BatchLoader(sources, config.seq_len, config.micro_batch, config.seed, d.rank, d.world_size)
    if state is not None:
        restore(state, wrapped, optimizer, loader, d)
    tally, resumed = _Tally.resumed(state), state is not None
    del state  # mapped from last/'s file, which the next save replaces: let the mapping go with it
    replacing = _start_files(config, d, tally.step if resumed else None)
    barrier(d)
    val_total = (
        count_eval_batches(config.val_data, config.seq_len, config.val_batch_size or config.micro_batch)
        if config.val_data
        else 0
    )
    run = _Run(config, d, tokenizer, raw, wrapped, optimizer, loader, precision, val_total, tally, replacing)
    if resumed:
        run.saved[LAST] = tally.step
        if tally.best_step is not None:
            run.saved[BEST] = tally.best_step
    start_step, end_step = tally.step, config.stop_at or config.max_steps
    tokens_per_step = run.tokens_per_step
    log = run.log = TrainLog(config, d, tally.step, run_dir / (METRICS + STAGED) if replacing else None)
    watch = _FiniteWatch()
    losses: list[float] = []
    mark_step, window_seconds, window_cpu = tally.step, 0.0, 0.0
    flops = _flops_per_token(raw, config) if device_peak_flops(d.device) else None  # for MFU, on a known GPU

    if not resumed and config.val_data:
        log.write({"step": 0, "tokens": 0, **run.evaluate()})
    raw.train()
    try:
        while tally.step < end_step:
            factor = schedule(tally.step)
            optimizer.set_lr_factor(factor)
            started, started_cpu = time.perf_counter(), time.process_time()
            total, grad_norm = _optimizer_step(run, loss_of, accumulation)
            tally.step += 1
            step = tally.step
            watch.note(step, total, grad_norm)
            evaluating = config.val_data is not None and (
                step == config.max_steps or (config.eval_every and step % config.eval_every == 0)
            )
            logging = step % config.log_every == 0 or evaluating or step == end_step
            rank_loss = total.item() / accumulation if logging else 0.0  # waits for the GPU's step
            window_seconds += time.perf_counter() - started
            window_cpu += time.process_time() - started_cpu
            if logging:
                rank_tokens = (step - mark_step) * tokens_per_step / d.world_size
                mean_loss, rates = rate_fields(d, rank_loss, rank_tokens, window_seconds, flops)
                tally.elapsed_s += window_seconds
                tally.cpu_s += window_cpu
                record = {
                    "step": step,
                    "tokens": step * tokens_per_step,
                    "loss": mean_loss,
                    "lr": optimizer.lrs().get("adamw"),
                    "lr_muon": optimizer.lrs().get("muon") if config.optimizer == "muon" else None,
                    "lr_factor": factor,
                    "grad_norm": _norm_value(grad_norm),
                    # the global batch's tokens over rank 0's seconds; rates has the ranks' sum
                    "tokens_per_s": (step - mark_step) * tokens_per_step / max(window_seconds, 1e-9),
                    **rates,
                    "elapsed_s": tally.elapsed_s,
                    **({} if d.device.type == "cuda" else {"cpu_s": tally.cpu_s}),  # a GPU's is no CPU time
                }
                losses.append(mean_loss)
                mark_step, window_seconds, window_cpu = step, 0.0, 0.0
                bad = watch.first_bad(d)
                if bad is not None or not math.isfinite(mean_loss):
                    log.write(record)  # the step's record, its non-finite numbers as null
                    raise run.diverged(bad or step, step, mean_loss, record["grad_norm"])
                if evaluating:
                    record.update(run.evaluate())
                    tally.last_val_bpb = record["val_bpb"]
                    if tally.best_val_bpb is None or tally.last_val_bpb < tally.best_val_bpb:
                        tally.best_val_bpb, tally.best_step = tally.last_val_bpb, step
                        run.save(BEST, with_state=False)
                log.write(record)
            log.advance()
            if step < end_step and config.save_every and step % config.save_every == 0:
                _save_if_finite(run, watch)
        _save_if_finite(run, watch)
    finally:
        log.close()
    return TrainResult(
        run_dir=str(run_dir),
        steps=tally.step,
        tokens=tally.step * tokens_per_step,
        losses=losses,
        final_loss=losses[-1] if losses else None,
        best_val_bpb=tally.best_val_bpb,
        best_step=tally.best_step,
        last_val_bpb=tally.last_val_bpb,
        last_checkpoint=str(run_dir / LAST),
        best_checkpoint=str(run_dir / BEST) if tally.best_step is not None else None,
        metrics_path=str(run_dir / METRICS),
        world_size=d.world_size,
        resumed_from_step=start_step,
    )
