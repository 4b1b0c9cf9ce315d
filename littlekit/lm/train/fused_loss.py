"""The training loss: mean next-token cross-entropy in fp32, with the LM head fused in where it can be.

In one fp32 process the head and the loss are fused (`linear_cross_entropy`): the same loss and
gradients, to float rounding, without the full (tokens x vocabulary) logits tensor.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

CHUNK_ELEMENTS = 2**18  # logits per chunk (1 MiB in fp32): a chunk's softmax stays in a CPU core's L2


def chunk_rows(vocab_size: int) -> int:
    """Token rows per chunk of the fused loss: about CHUNK_ELEMENTS logits, 32 to 1,024 rows."""
    return max(32, min(1024, CHUNK_ELEMENTS // max(vocab_size, 1)))


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of softmax(hidden @ weight.T) against labels, with its gradients.

    Nothing comes after the loss, so its gradients are known (up to the scalar backward brings)
    as soon as it is computed: the forward goes through the tokens in chunks and, per chunk,
    turns the logits into softmax - onehot in place and multiplies them back into d hidden and
    d weight. No (tokens x vocabulary) tensor exists at once, nor passes through memory three
    times (log-softmax, its backward, the zero-filled gradient of the gather): on a nano CPU
    step that traffic was a third of the time.
    """

    @staticmethod
    def forward(
        ctx: Any, hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int
    ) -> torch.Tensor:
        rows = chunk_rows(weight.shape[0])
        # inputs that need no gradient (e.g. a frozen model) pay for the loss only
        wanted = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        grad_hidden = torch.empty_like(hidden) if wanted else None  # every row is written below
        # d weight is accumulated transposed (hidden x vocabulary): addmm_ of part.T @ probs then
        # writes it in place chunk after chunk, and backward transposes it once.
        grad_weight_t = weight.new_zeros(weight.shape[1], weight.shape[0]) if wanted else None
        total = torch.zeros((), dtype=torch.float64, device=hidden.device)  # float64: many chunks' sums
        count = (labels != ignore_index).sum()  # counted over all tokens up front: the mean's denominator
        for start in range(0, hidden.shape[0], rows):
            part, targets = hidden[start : start + rows], labels[start : start + rows, None]
            keep = targets != ignore_index
            targets = targets.clamp(min=0)  # ignored rows gather some real column; masked out below
            logits = part @ weight.T
            # softmax, not log_softmax: the probabilities feed the loss and then become the gradient in place
            probs = torch.softmax(logits, dim=-1)
            nats = _token_nats(logits, probs, targets)
            total += torch.where(keep, nats, 0.0).sum()  # where, not keep * nats: 0 * inf is nan
            if wanted:
                # d nats / d logits = softmax - onehot(target): built in the probs buffer itself.
                probs.scatter_add_(1, targets, torch.full_like(nats, -1.0))
                if not bool(keep.all()):  # a chunk without ignored tokens skips this pass over it
                    probs.mul_(keep)  # an ignored token contributes no gradient
                grad_hidden[start : start + rows] = probs @ weight
                grad_weight_t.addmm_(part.T, probs)
        # the mean over scored tokens; clamp: with none scored the gradients stay 0, not nan
        scale = 1.0 / count.clamp(min=1).to(hidden.dtype)
        if wanted:
            # scaled once at the end, in place, rather than per chunk
            ctx.save_for_backward(grad_hidden.mul_(scale), grad_weight_t.mul_(scale))
        loss = (total / count).to(hidden.dtype)  # nan without a scored token, as F.cross_entropy
        return loss

    @staticmethod
    def backward(ctx: Any, grad_output: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, None, None]:
        # The loss is a scalar at the end of the graph, so the chain rule is one multiplication.
        grad_hidden, grad_weight_t = ctx.saved_tensors
        return grad_hidden * grad_output, (grad_weight_t * grad_output).T.contiguous(), None, None


def _token_nats(logits: torch.Tensor, probs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-log p(target) per row; where p underflows (a target scored > ~87 nats below the best),
    logsumexp - logit instead, so the loss stays finite and exact."""
    picked = probs.gather(1, targets)
    nats = -torch.log(picked)
    # 1e-30 (~69 nats) keeps clear of fp32's normal floor (~1e-38), where p loses digits, then becomes 0
    tiny = picked < 1e-30
    if bool(tiny.any()):  # the logsumexp is a second pass over the chunk: only when a row needs it
        exact = torch.logsumexp(logits, dim=-1, keepdim=True) - logits.gather(1, targets)
        nats = torch.where(tiny, exact, nats)
    return nats


def linear_cross_entropy(
    hidden: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, ignore_index: int = -100
) -> torch.Tensor:
    """F.cross_entropy(hidden @ weight.T, labels) (mean over labels != ignore_index), fused and
    chunked: the same loss and gradients (to float rounding) without the full logits tensor."""
    # (batch, sequence) flattened to token rows, the layout the chunks walk
    return _LinearCrossEntropy.apply(hidden.flatten(0, -2), weight, labels.flatten(), ignore_index)


def _fusable(raw: torch.nn.Module, world_size: int, precision: str) -> bool:
    """Whether the training loss may skip the model's LM head for `linear_cross_entropy`: one
    process (DDP and FSDP hooks expect the whole model's forward), fp32 (autocast would change the
    head's precision), and a plain bias-free linear head right after the decoder, as Qwen3 has."""
    from transformers import Qwen3ForCausalLM

    head = raw.get_output_embeddings()
    return (
        world_size == 1
        and precision == "fp32"
        and isinstance(raw, Qwen3ForCausalLM)
        and isinstance(head, torch.nn.Linear)
        and head.bias is None
    )


class FusedLoss:
    """The loss from the decoder's last hidden states and the head's weight (`linear_cross_entropy`)."""

    def __init__(self, decoder: torch.nn.Module, weight: torch.Tensor):
        self.decoder, self.weight = decoder, weight

    def __call__(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return linear_cross_entropy(self.decoder(input_ids=input_ids).last_hidden_state, self.weight, labels)


class LogitsLoss:
    """The loss from the model's logits, cast to fp32 (under bf16 autocast they are bf16)."""

    def __init__(self, model: torch.nn.Module):
        self.model = model

    def __call__(self, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = self.model(input_ids=input_ids).logits
        return F.cross_entropy(logits.float().flatten(0, 1), labels.flatten())


def make_loss(
    raw: torch.nn.Module,
    wrapped: torch.nn.Module | None = None,
    compile: bool = False,
    world_size: int = 1,
    precision: str = "fp32",
) -> FusedLoss | LogitsLoss:
    """loss(input_ids, labels): the mean next-token cross-entropy of a micro batch, as `train`
    computes it (`wrapped`: the DDP/FSDP module the forward runs through; default `raw`).

    Single-process fp32 runs (the CPU runs of the book) take the decoder's last hidden states and
    `linear_cross_entropy` with the head's weight; other runs the model's logits and
    F.cross_entropy in fp32. Both are the same loss; `compile` compiles what runs the decoder
    (the decoder alone, or the wrapped model).
    """
    wrapped = raw if wrapped is None else wrapped
    if _fusable(raw, world_size, precision):
        decoder = torch.compile(raw.get_decoder()) if compile else raw.get_decoder()
        return FusedLoss(decoder, raw.get_output_embeddings().weight)
    return LogitsLoss(torch.compile(wrapped) if compile else wrapped)
