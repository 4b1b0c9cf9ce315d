"""A judge backend on a local `transformers` causal language model, greedy decoding.

Give it a Hub id or a directory (loaded with AutoTokenizer / AutoModelForCausalLM) or an
already loaded model and tokenizer. The chat template is used when the tokenizer has one;
otherwise the messages are joined as "role: content" blocks ending in "assistant:".
Token counts come from the tokenizer (what the prompt and the answer cost in tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from littlekit.judge.backends import BackendError, Completion, Messages


class TransformersBackend:
    """Greedy generation with up to `max_new_tokens` new tokens (1,024 like the API judge)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        name: str | None = None,
        max_new_tokens: int = 1024,
        device: str | None = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if isinstance(model, str):
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(model)
            model = AutoModelForCausalLM.from_pretrained(model)
        if tokenizer is None:
            raise ValueError("pass the tokenizer together with a loaded model")
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.model_id = name or getattr(model.config, "name_or_path", "") or type(model).__name__

    def __repr__(self) -> str:
        return f"TransformersBackend(model_id={self.model_id!r}, device={self.device!r})"

    def prompt_text(self, messages: Messages) -> str:
        """The exact prompt string the model sees."""
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        blocks = [f"{m['role']}: {m['content']}" for m in messages]
        return "\n\n".join(blocks) + "\n\nassistant:"

    def complete(self, messages: Messages) -> Completion:
        import torch

        encoded = self.tokenizer(self.prompt_text(messages), return_tensors="pt", add_special_tokens=False)
        input_ids = encoded["input_ids"].to(self.device)
        attention = encoded.get("attention_mask")
        attention = attention.to(self.device) if attention is not None else torch.ones_like(input_ids)
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self.tokenizer.eos_token_id
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=pad_id,
            )
        new_tokens = output[0, input_ids.shape[1]:]
        text = self.tokenizer.decode(new_tokens, skip_special_tokens=True)
        return Completion(text=text, input_tokens=int(input_ids.shape[1]), output_tokens=int(len(new_tokens)))

    def complete_many(self, batch: Sequence[Messages]) -> list[Completion | BackendError]:
        """One conversation at a time (greedy decoding needs no padding tricks); errors returned."""
        results: list[Completion | BackendError] = []
        for messages in batch:
            try:
                results.append(self.complete(messages))
            except Exception as exc:  # a model failure on one document must not end the batch
                results.append(BackendError(f"{type(exc).__name__}: {exc}"))
        return results
