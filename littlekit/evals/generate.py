"""Sampling completions from any causal LM: batched `transformers` generation on CPU or GPU, vLLM
when it is installed and asked for (the paper's 1,024 samples per question need it).

Prompts are encoded as [bos] + tokens when the tokenizer has a BOS (every nano training document
started with BOS), left-padded into batches. Each (prompt, sample) row draws from its own random
generator seeded by (seed, prompt index, sample index), so a completion does not depend on the
batch size or on which other prompts share its batch: the same seed gives the same samples, and
batched generation equals one-by-one generation (up to float rounding from padding).
Temperature 0 is greedy decoding. A completion is the text after the prompt, cut at the first stop
string (or, with `stop_lines`, just after the first whole line starting with one of those
prefixes: a scratchpad is done once its `Answer:` line is); generation of a row stops at EOS,
there, or after `max_new_tokens`.

With `require_text=True` a completion cannot end before it holds a non-whitespace character: while
a row's text is blank, EOS, the other special tokens and every token whose text reaches a newline
before any other character are masked out (`AnswerFirst`), so a "\\n" stop string ends an answer
line instead of an empty one. Under greedy decoding this is the model's most likely continuation
among those that start with an answer; rows whose first choice was not a newline are unchanged.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from littlekit.progress import Progress

BACKENDS = ("auto", "transformers", "vllm")


def vllm_available() -> bool:
    """Whether the vllm package can be imported here."""
    return importlib.util.find_spec("vllm") is not None


def generate(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    n_samples: int = 1,
    max_new_tokens: int = 64,
    temperature: float = 0.0,
    top_p: float = 1.0,
    top_k: int = 0,
    batch_size: int = 32,
    seed: int = 0,
    stop: Sequence[str] = ("\n\n",),
    backend: str = "auto",
    stop_lines: Sequence[str] = (),
    require_text: bool = False,
) -> list[list[str]]:
    """One list of `n_samples` completions per prompt (text after the prompt, cut at the first stop
    string, `stop=()` for none, or after the first whole line starting with a `stop_lines` prefix).

    backend: "transformers" (batched, CPU or GPU), "vllm" (must be installed; loads the model from
    its `name_or_path`), or "auto" (vLLM when installed and the model is on a CUDA device, else
    transformers). `require_text=True`: no newline, EOS or other special token before the first
    non-whitespace character of a completion (transformers only; "auto" then uses transformers).
    """
    _check_arguments(prompts, n_samples, max_new_tokens, temperature, top_p, top_k, batch_size, stop, backend)
    _check_strings("stop_lines", stop_lines)
    if require_text and backend == "vllm":
        raise ValueError("require_text=True masks tokens per row, which the vllm backend does not do here; "
                         "use backend='transformers' or 'auto'")
    if not require_text and _use_vllm(model, backend):
        return _generate_vllm(
            model, tokenizer, prompts, n_samples, max_new_tokens, temperature, top_p, top_k, seed, stop,
            stop_lines,
        )
    return _generate_transformers(
        model,
        tokenizer,
        prompts,
        n_samples,
        max_new_tokens,
        temperature,
        top_p,
        top_k,
        batch_size,
        seed,
        stop,
        stop_lines,
        require_text,
    )


def greedy(
    model: Any,
    tokenizer: Any,
    prompts: Sequence[str],
    max_new_tokens: int = 64,
    batch_size: int = 32,
    stop: Sequence[str] = ("\n\n",),
    require_text: bool = False,
) -> list[str]:
    """One greedy completion per prompt (`generate` with temperature 0 and one sample)."""
    outputs = generate(
        model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size, stop=stop,
        require_text=require_text,
    )
    return [samples[0] for samples in outputs]


def _check_arguments(
    prompts, n_samples, max_new_tokens, temperature, top_p, top_k, batch_size, stop, backend
):
    if isinstance(prompts, str):
        raise TypeError("prompts must be a sequence of strings, not one string")
    for i, prompt in enumerate(prompts):
        if not isinstance(prompt, str):
            raise TypeError(f"prompts[{i}] must be a string, got {type(prompt).__name__}")
    for name, value in (
        ("n_samples", n_samples),
        ("max_new_tokens", max_new_tokens),
        ("batch_size", batch_size),
    ):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature!r}")
    if temperature == 0 and n_samples != 1:
        raise ValueError(f"temperature 0 is greedy decoding: n_samples must be 1, got {n_samples}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must lie in (0, 1], got {top_p!r}")
    if not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be a non-negative integer (0 = no limit), got {top_k!r}")
    _check_strings("stop", stop)
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")


def _check_strings(name: str, values: Sequence[str]) -> None:
    if isinstance(values, str) or any(not isinstance(s, str) or not s for s in values):
        raise ValueError(f"{name} must be a sequence of non-empty strings, got {values!r}")


def _use_vllm(model: Any, backend: str) -> bool:
    if backend == "vllm":
        if not vllm_available():
            raise ImportError(
                "backend='vllm' was asked for but vllm is not installed (pip install vllm, on a CUDA "
                "machine); use backend='transformers' or 'auto' to sample with transformers"
            )
        return True
    if backend == "auto":
        device = getattr(model, "device", torch.device("cpu"))
        return vllm_available() and torch.device(device).type == "cuda"
    return False


def prompt_ids(tokenizer: Any, prompt: str) -> list[int]:
    """[bos] + the prompt's tokens when the tokenizer has a BOS, else the prompt's tokens."""
    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    return ([tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []) + list(ids)


def end_of_line_starting(text: str, prefix: str) -> int:
    """Where the first whole line of `text` starting with `prefix` ends (the index of its newline),
    or -1 when no such line has ended yet."""
    offset = 0
    for line in text.split("\n")[:-1]:  # the piece after the last newline is not a whole line yet
        if line.startswith(prefix):
            return offset + len(line)
        offset += len(line) + 1
    return -1


def cut_at_stop(text: str, stop: Sequence[str], stop_lines: Sequence[str] = ()) -> str:
    """`text` up to (not including) the earliest stop string, or up to the end of the first whole
    line starting with a `stop_lines` prefix, whichever comes first."""
    cut = len(text)
    for s in stop:
        at = text.find(s)
        if at != -1:
            cut = min(cut, at)
    for prefix in stop_lines:
        at = end_of_line_starting(text, prefix)
        if at != -1:
            cut = min(cut, at)
    return text[:cut]


def row_seed(seed: int, prompt_index: int, sample_index: int) -> int:
    """The random seed of one (prompt, sample) row, independent of batching."""
    return int(np.random.SeedSequence([seed, prompt_index, sample_index]).generate_state(1)[0])


class _RowSampler:
    """A logits processor that samples each row with its own generator and returns scores that are
    -inf everywhere but the drawn token, so transformers' greedy step picks the sampled token."""

    def __init__(self, generators: list[torch.Generator], temperature: float, top_p: float, top_k: int):
        self.generators, self.temperature, self.top_p, self.top_k = generators, temperature, top_p, top_k

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        probs = filtered_probs(scores.float(), self.temperature, self.top_p, self.top_k)
        chosen = torch.stack(
            [torch.multinomial(probs[i], 1, generator=g)[0] for i, g in enumerate(self.generators)]
        )
        out = torch.full_like(scores, float("-inf"))
        out[torch.arange(len(chosen)), chosen] = 0.0
        return out


def filtered_probs(logits: torch.Tensor, temperature: float, top_p: float, top_k: int) -> torch.Tensor:
    """Next-token probabilities after temperature, top-k (0 = all) and top-p (nucleus) filtering."""
    logits = logits / temperature
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        # drop a token when the tokens before it already hold top_p of the mass (the first always stays)
        drop_sorted = (torch.cumsum(sorted_probs, dim=-1) - sorted_probs) >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return torch.softmax(logits, dim=-1)


def token_kinds(tokenizer: Any, vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two boolean masks over `vocab_size` token ids: `opens_line` (a special token, or a token whose
    text reaches a newline before any other non-whitespace character, e.g. "\\n", " \\n\\n",
    "\\nThe") and `has_text` (its text holds a non-whitespace character). Ids beyond the tokenizer's
    vocabulary (a model's padded embedding rows) are neither."""
    size = min(vocab_size, len(tokenizer))
    texts = tokenizer.batch_decode([[i] for i in range(size)], skip_special_tokens=False)
    special = set(tokenizer.all_special_ids)
    opens_line = torch.zeros(vocab_size, dtype=torch.bool)
    has_text = torch.zeros(vocab_size, dtype=torch.bool)
    for i, text in enumerate(texts):
        if i in special:
            opens_line[i] = True
            continue
        lead = text[: len(text) - len(text.lstrip())]
        opens_line[i] = "\n" in lead
        has_text[i] = bool(text.strip())
    return opens_line, has_text


class AnswerFirst:
    """A logits processor: while a row's completion is blank (only whitespace so far), every
    `opens_line` token of `token_kinds` gets -inf, so neither a newline nor EOS can end a completion
    before its first non-whitespace character. `kinds` caches `token_kinds` by vocabulary size, so
    the batches of one call classify the vocabulary once."""

    def __init__(
        self,
        tokenizer: Any,
        prompt_length: int,
        kinds: dict[int, tuple[torch.Tensor, torch.Tensor]] | None = None,
    ):
        self.tokenizer, self.prompt_length = tokenizer, prompt_length
        self.kinds = {} if kinds is None else kinds
        self.blank: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        size = scores.shape[-1]
        if size not in self.kinds:
            self.kinds[size] = token_kinds(self.tokenizer, size)
        opens_line, has_text = (k.to(scores.device) for k in self.kinds[size])
        if self.blank is None:
            self.blank = torch.ones(input_ids.shape[0], dtype=torch.bool, device=scores.device)
        if input_ids.shape[1] > self.prompt_length:
            self.blank &= ~has_text[input_ids[:, -1]]
        if not bool(self.blank.any()):
            return scores
        mask = self.blank[:, None] & opens_line[None, :]
        return scores.masked_fill(mask, float("-inf"))


class _StopOnStrings:
    """Stopping criterion: a row is done once its new text contains a stop string or a whole line
    starting with a `stop_lines` prefix.

    transformers keeps a finished row finished (it only pads it from then on), so a row found done,
    or one that has emitted EOS, is not decoded again: each step decodes the open rows only.
    """

    def __init__(self, tokenizer: Any, prompt_length: int, stop: Sequence[str], stop_lines: Sequence[str]):
        self.tokenizer, self.prompt_length = tokenizer, prompt_length
        self.stop, self.stop_lines = list(stop), list(stop_lines)
        self.done: list[bool] | None = None

    def _done(self, text: str) -> bool:
        if any(s in text for s in self.stop):
            return True
        return any(end_of_line_starting(text, prefix) != -1 for prefix in self.stop_lines)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        if self.done is None:
            self.done = [False] * input_ids.shape[0]
        open_rows = [i for i, done in enumerate(self.done) if not done]
        if open_rows:
            new = input_ids[open_rows, self.prompt_length :]
            eos = self.tokenizer.eos_token_id
            ended = (new == eos).any(dim=1).tolist() if eos is not None else [False] * len(open_rows)
            texts = self.tokenizer.batch_decode(new.tolist(), skip_special_tokens=True)
            for i, text, at_eos in zip(open_rows, texts, ended, strict=True):
                self.done[i] = at_eos or self._done(text)
        return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)


@torch.no_grad()
def _generate_transformers(
    model, tokenizer, prompts, n_samples, max_new_tokens, temperature, top_p, top_k, batch_size, seed, stop,
    stop_lines=(), require_text=False,
) -> list[list[str]]:
    from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    if pad_id is None:
        raise ValueError("the tokenizer has neither a pad nor an EOS token: cannot left-pad a batch")
    encoded = [prompt_ids(tokenizer, p) for p in prompts]
    for i, ids in enumerate(encoded):
        if not ids:
            raise ValueError(f"prompts[{i}] encodes to no tokens and the tokenizer has no BOS to start from")
    rows = [(i, j) for i in range(len(prompts)) for j in range(n_samples)]
    rows.sort(key=lambda row: len(encoded[row[0]]))  # similar lengths share a batch: less padding
    config = GenerationConfig(
        do_sample=False,
        max_new_tokens=max_new_tokens,
        pad_token_id=pad_id,
        eos_token_id=tokenizer.eos_token_id,
        use_cache=True,
    )
    device = model.device
    out: list[list[str]] = [[""] * n_samples for _ in prompts]
    progress = Progress(len(rows), "sampling", "completions")
    kinds: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # the vocabulary's token kinds, for require_text
    for start in range(0, len(rows), batch_size):
        batch = rows[start : start + batch_size]
        width = max(len(encoded[i]) for i, _ in batch)
        input_ids = torch.tensor([[pad_id] * (width - len(encoded[i])) + encoded[i] for i, _ in batch])
        attention = torch.tensor([[0] * (width - len(encoded[i])) + [1] * len(encoded[i]) for i, _ in batch])
        processors = LogitsProcessorList()
        if require_text:  # before the sampler, which draws from what is left
            processors.append(AnswerFirst(tokenizer, width, kinds))
        if temperature > 0:
            generators = [torch.Generator(device=device).manual_seed(row_seed(seed, i, j)) for i, j in batch]
            processors.append(_RowSampler(generators, temperature, top_p, top_k))
        generated = model.generate(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            generation_config=config,
            logits_processor=processors,
            stopping_criteria=StoppingCriteriaList([_StopOnStrings(tokenizer, width, stop, stop_lines)]),
        )
        texts = tokenizer.batch_decode(generated[:, width:].tolist(), skip_special_tokens=True)
        for (i, j), text in zip(batch, texts, strict=True):
            out[i][j] = cut_at_stop(text, stop, stop_lines)
        progress.update(len(batch))
    return out


_VLLM_ENGINES: dict[str, Any] = {}


def _generate_vllm(
    model, tokenizer, prompts, n_samples, max_new_tokens, temperature, top_p, top_k, seed, stop, stop_lines=()
) -> list[list[str]]:
    from vllm import LLM, SamplingParams

    where = getattr(model, "name_or_path", None) or getattr(model.config, "_name_or_path", None)
    if not where:
        raise ValueError("backend='vllm' loads the model by path: this model has no name_or_path")
    if where not in _VLLM_ENGINES:
        _VLLM_ENGINES[where] = LLM(model=where, seed=seed)
    params = SamplingParams(
        n=n_samples,
        temperature=temperature,
        top_p=top_p,
        top_k=top_k if top_k > 0 else -1,
        max_tokens=max_new_tokens,
        stop=list(stop),
        seed=seed,
    )
    requests = [{"prompt_token_ids": prompt_ids(tokenizer, p)} for p in prompts]
    results = _VLLM_ENGINES[where].generate(requests, params)
    return [[cut_at_stop(o.text, stop, stop_lines) for o in result.outputs] for result in results]
