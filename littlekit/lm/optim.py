"""The optimizer split (Muon for hidden matrices, AdamW for the rest) and the WSD learning-rate schedule.

Muon (`torch.optim.Muon`) orthogonalises each update with a Newton-Schulz iteration, which only
means something for a 2-D weight that maps one hidden space to another: the attention and MLP
projections. Everything else goes to AdamW: the token embedding and the LM head, and the
1-D RMSNorm weights (and biases, should a config have them). Weight decay is decoupled and
applies to the Muon matrices only.

`StackedMuon` is `torch.optim.Muon` with the same arithmetic done in fewer, larger operations:
torch's Muon runs the Newton-Schulz iteration one matrix at a time (about 20 small matmuls and
a dozen Python calls each), which on a nano model costs more in calls than in arithmetic. Here
the matrices of one shape are stacked and orthogonalised together with batched matmuls, and the
momentum and parameter updates are foreach operations; state and hyperparameters are Muon's.
One difference, on the CPU only: the iteration runs in fp32 there, not bf16. Few CPUs multiply
bf16 in hardware (an AVX2 one here took 11x longer for bf16 than fp32 at Muon's shapes, which made
the optimizer half of a micro model's step), and fp32 is the same iteration with less rounding.
On a GPU it runs in bf16 as torch's does (`ns_dtype` overrides either). AdamW runs with `foreach=True`.

The schedule is warmup -> stable -> cool-off (WSD, "warmup-stable-decay"): the learning rate rises
linearly over the warmup steps, holds, and falls linearly to `min_ratio` of its peak over the
cool-off steps at the end. Both optimizers follow the same factor of their own peak rate.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

MUON, ADAMW = "muon", "adamw"


def split_parameters(model: torch.nn.Module) -> dict[str, list[tuple[str, torch.nn.Parameter]]]:
    """{"muon": 2-D hidden matrices, "adamw": embeddings, LM head, norms, biases}, as (name, param).

    Every trainable parameter lands in exactly one list (tied weights are one parameter). The
    embedding and head are recognised by identity (get_input/output_embeddings), not by name.
    """
    tables = set()
    for get in ("get_input_embeddings", "get_output_embeddings"):
        # a plain nn.Module lacks these getters: then it has no tables and every 2-D weight is hidden
        module = getattr(model, get, lambda: None)()
        if module is not None and getattr(module, "weight", None) is not None:
            # by id: a tied head is the embedding's own tensor, so it is one entry (and one parameter)
            tables.add(id(module.weight))
    groups: dict[str, list[tuple[str, torch.nn.Parameter]]] = {MUON: [], ADAMW: []}
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        # the embedding and head are 2-D too, but a look-up table and a readout, not hidden maps
        hidden_matrix = param.ndim == 2 and id(param) not in tables
        groups[MUON if hidden_matrix else ADAMW].append((name, param))
    return groups


def _is_plain(tensor: torch.Tensor) -> bool:
    """A dense tensor of its own (not an FSDP/DTensor shard, which torch's Muon handles itself)."""
    # type(), not isinstance: a DTensor is a Tensor subclass
    return type(tensor) in (torch.Tensor, torch.nn.Parameter)


def newton_schulz_dtype(device: torch.device) -> torch.dtype:
    """The dtype Muon's iteration runs in on `device`: bf16 as torch's Muon, but fp32 on the CPU."""
    return torch.float32 if device.type == "cpu" else torch.bfloat16


def newton_schulz_stacked(
    stack: torch.Tensor,
    coefficients: tuple[float, float, float],
    steps: int,
    eps: float,
    dtype: torch.dtype = torch.bfloat16,
) -> torch.Tensor:
    """Muon's quintic Newton-Schulz iteration on a stack (n, rows, cols) of wide matrices at once,
    as `torch.optim._muon._zeropower_via_newtonschulz` does it for one matrix (in bf16 there)."""
    a, b, c = coefficients
    x = stack.to(dtype)
    # each matrix by its own Frobenius norm, which bounds its spectral norm: singular values start <= 1
    x = x / torch.linalg.vector_norm(x, dim=(1, 2), keepdim=True).clamp(min=eps)
    for _ in range(steps):
        gram = torch.bmm(x, x.mT)  # wide matrices (rows <= cols): this is the smaller Gram matrix
        # x <- a x + (b G + c G^2) x, the quintic polynomial, as torch's two addmm calls
        update = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)
        x = torch.baddbmm(x, update, x, beta=a)
    return x


def _shape_groups(params: list[torch.Tensor]) -> dict[tuple[int, int], list[int]]:
    """Indices of the matrices by the shape Muon orthogonalises them in (tall ones transposed)."""
    groups: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(params):
        rows, cols = p.shape
        # (m, n) and (n, m) share a key: transposed to wide, both stack into one batch
        groups.setdefault((min(rows, cols), max(rows, cols)), []).append(i)
    return groups


def _adjusted_lr(lr: float, adjust_lr_fn: str | None, shape: Iterable[int]) -> float:
    """Muon's per-shape learning-rate scale (`torch.optim._muon._adjust_lr`)."""
    rows, cols = list(shape)[:2]
    # by shape, so the orthogonalised update's RMS is alike across rectangular matrices
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


def _foreach(params: list[torch.Tensor]) -> bool | None:
    """foreach=True for plain tensors; None (torch's choice) for sharded ones."""
    return True if all(_is_plain(p) for p in params) else None


class StackedMuon(torch.optim.Muon):
    """torch.optim.Muon, with same-shape matrices orthogonalised together (see the module doc).

    Falls back to torch's own step for sharded (DTensor) parameters, which FSDP hands it.
    `ns_dtype`: the Newton-Schulz iteration's dtype; default fp32 on the CPU, bf16 elsewhere.
    """

    def __init__(self, params: Any, *args: Any, ns_dtype: torch.dtype | None = None, **kwargs: Any):
        super().__init__(params, *args, **kwargs)
        self.ns_dtype = ns_dtype

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        groups = [(g, [p for p in g["params"] if p.grad is not None]) for g in self.param_groups]
        # any shard hands the whole step to torch's Muon, which takes DTensors
        if not all(_is_plain(p) and _is_plain(p.grad) for _, params in groups for p in params):
            super().step()  # no closure: it already ran above
            return loss
        for group, params in groups:
            if params:
                self._step_group(group, params)
        return loss

    def _step_group(self, group: dict[str, Any], params: list[torch.Tensor]) -> None:
        lr, decay = float(group["lr"]), group["weight_decay"]
        updates = self._momentum_updates(group, params)
        if decay:
            # decoupled decay, applied before the update as torch does; the update never reads the weights
            torch._foreach_mul_(params, 1 - lr * decay)
        for (rows, _), indices in _shape_groups(params).items():
            # tall ones transposed, as torch's Muon orthogonalises them
            wide = [updates[i] if updates[i].shape[0] == rows else updates[i].T for i in indices]
            dtype = self.ns_dtype or newton_schulz_dtype(wide[0].device)
            # .float() is exact: torch's param.add_ widens its bf16 update to fp32 weights the same way
            ortho = newton_schulz_stacked(torch.stack(wide), group["ns_coefficients"], group["ns_steps"],
                                          group["eps"], dtype).float()  # fmt: skip
            # regrouped by the parameter's own shape: the adjusted lr differs for (m, n) and (n, m)
            by_shape: dict[tuple[int, ...], tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
            for i, matrix in zip(indices, ortho.unbind(0), strict=True):
                targets, steps = by_shape.setdefault(tuple(params[i].shape), ([], []))
                targets.append(params[i])
                steps.append(matrix if params[i].shape[0] == rows else matrix.T)
            for shape, (targets, steps) in by_shape.items():
                torch._foreach_add_(targets, steps, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], shape))

    def _momentum_updates(self, group: dict[str, Any], params: list[torch.Tensor]) -> list[torch.Tensor]:
        """Muon's momentum (buffer lerp, then Nesterov's look-ahead) for every matrix at once."""
        for p in params:
            if p.grad.is_sparse or torch.is_complex(p):
                raise RuntimeError("Muon supports neither sparse gradients nor complex parameters")
            # torch's Muon state layout, so checkpoints of either optimizer load into the other
            if "momentum_buffer" not in self.state[p]:
                self.state[p]["momentum_buffer"] = torch.zeros_like(p.grad)
        grads = [p.grad for p in params]
        buffers = [self.state[p]["momentum_buffer"] for p in params]
        momentum = group["momentum"]
        torch._foreach_lerp_(buffers, grads, 1 - momentum)  # lerp, as torch's code: an EMA of the gradients
        # Nesterov: the gradient moved toward the updated buffer, a look-ahead along the momentum
        return torch._foreach_lerp(grads, buffers, momentum) if group["nesterov"] else buffers


class MuonAdamW:
    """Muon on the hidden matrices and AdamW on the rest, stepped together.

    `optimizers` holds the torch optimizers (Muon first when used); `param_groups` lists all their
    groups, each named "muon" or "adamw". With use_muon=False every parameter goes to AdamW (the
    baseline recipe), in the same two named groups, the hidden matrices keeping their weight decay.
    Peak learning rates are kept here, not in the groups, so a resumed run takes its configured
    rates rather than the saved ones.
    """

    def __init__(
        self,
        model: torch.nn.Module,
        muon_lr: float = 0.02,
        adamw_lr: float = 3e-3,
        weight_decay: float = 0.0,
        momentum: float = 0.95,
        betas: tuple[float, float] = (0.9, 0.95),
        eps: float = 1e-8,
        use_muon: bool = True,
    ):
        groups = split_parameters(model)
        hidden = [p for _, p in groups[MUON]]
        rest = [p for _, p in groups[ADAMW]]
        if not hidden and not rest:
            raise ValueError("the model has no trainable parameters")
        self.optimizers: list[torch.optim.Optimizer] = []
        adamw_groups = []
        if use_muon and hidden:
            muon = StackedMuon(hidden, lr=muon_lr, weight_decay=weight_decay, momentum=momentum)
            muon.param_groups[0]["name"] = MUON  # the name lrs() reports it under
            self.optimizers.append(muon)
        elif hidden:
            # the AdamW baseline: the hidden matrices keep the "muon" name (same lrs() keys) and their decay
            adamw_groups.append({"params": hidden, "weight_decay": weight_decay, "name": MUON})
        if rest:
            adamw_groups.append({"params": rest, "weight_decay": 0.0, "name": ADAMW})  # never decayed
        if adamw_groups:
            # the same per-element arithmetic as the one-tensor-at-a-time loop on the CPU, in fewer calls
            foreach = _foreach(rest + hidden)
            self.optimizers.append(
                torch.optim.AdamW(adamw_groups, lr=adamw_lr, betas=betas, eps=eps, foreach=foreach)
            )
        self.peak_lrs = [group["lr"] for group in self.param_groups]

    @property
    def param_groups(self) -> list[dict[str, Any]]:
        return [group for optimizer in self.optimizers for group in optimizer.param_groups]

    def step(self) -> None:
        for optimizer in self.optimizers:
            optimizer.step()

    def zero_grad(self, set_to_none: bool = True) -> None:
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self) -> dict[str, Any]:
        return {"optimizers": [optimizer.state_dict() for optimizer in self.optimizers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        states = state_dict["optimizers"]
        # e.g. a Muon run's two optimizers into a use_muon=False run's one: a clearer error than zip's
        if len(states) != len(self.optimizers):
            raise ValueError(f"state holds {len(states)} optimizers, this one {len(self.optimizers)}")
        for optimizer, state in zip(self.optimizers, states, strict=True):
            optimizer.load_state_dict(state)

    def set_lr_factor(self, factor: float) -> None:
        """Every group's lr = its peak lr x factor (the schedule's value for this step)."""
        for group, peak in zip(self.param_groups, self.peak_lrs, strict=True):
            group["lr"] = peak * factor

    def lrs(self) -> dict[str, float]:
        """Current lr by group name ("muon", "adamw")."""
        return {group["name"]: float(group["lr"]) for group in self.param_groups}


@dataclass(frozen=True)
class WSDSchedule:
    """Learning-rate factor for optimizer step `step` (0-based) of `total_steps`.

    warmup: (step + 1) / warmup_steps for the first warmup_steps steps (never 0);
    stable: 1.0;
    cool-off: the last cooldown_steps steps fall linearly, step total - c gets 1.0 and the last
    step min_ratio + (1 - min_ratio) / cooldown_steps, so no step is spent at the floor.
    """

    total_steps: int
    warmup_steps: int
    cooldown_steps: int
    min_ratio: float = 0.0

    def __post_init__(self):
        if self.total_steps < 1:
            raise ValueError(f"total_steps must be positive, got {self.total_steps}")
        if self.warmup_steps < 0 or self.cooldown_steps < 0:
            raise ValueError("warmup_steps and cooldown_steps must be >= 0")
        if self.warmup_steps + self.cooldown_steps > self.total_steps:
            raise ValueError(
                f"warmup {self.warmup_steps} + cool-off {self.cooldown_steps} steps exceed "
                f"the {self.total_steps} steps of the run"
            )
        if not 0.0 <= self.min_ratio <= 1.0:
            raise ValueError(f"min_ratio must be in [0, 1], got {self.min_ratio}")

    @property
    def cooldown_start(self) -> int:
        return self.total_steps - self.cooldown_steps

    def phase(self, step: int) -> str:
        if step < self.warmup_steps:
            return "warmup"
        return "stable" if step < self.cooldown_start else "cooloff"

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / self.warmup_steps  # + 1: the first step already moves the weights
        if step < self.cooldown_start:
            return 1.0
        left = (self.total_steps - step) / self.cooldown_steps  # 1 at the first cool-off step
        return self.min_ratio + (1.0 - self.min_ratio) * max(0.0, left)  # past total_steps: the floor


def wsd_schedule(
    total_steps: int,
    warmup_steps: int | None = None,
    cooldown_steps: int | None = None,
    min_ratio: float = 0.0,
    warmup_fraction: float = 0.02,
    cooldown_fraction: float = 0.2,
) -> WSDSchedule:
    """A WSDSchedule; warmup and cool-off default to 2% and 20% of the steps (at least 1 each
    when the run has room for them)."""
    # by default a run of 1 or 2 steps has neither phase: every step at the peak rate
    if warmup_steps is None:
        warmup_steps = max(1, round(warmup_fraction * total_steps)) if total_steps > 2 else 0
    if cooldown_steps is None:
        cooldown_steps = max(1, round(cooldown_fraction * total_steps)) if total_steps > 2 else 0
    return WSDSchedule(total_steps, warmup_steps, cooldown_steps, min_ratio)
