"""What every judge backend gives back, and the errors it raises.

A backend has a `model_id` (part of the cache key) and two methods:
`complete(messages) -> Completion`, and `complete_many(batch) -> list[Completion | BackendError]`
which never raises for a single failed request, so one bad document cannot crash a batch.
Implementations: `OpenAIChatBackend` (any OpenAI-compatible endpoint) and
`TransformersBackend` (a local model).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Completion:
    """One answer and the tokens it cost (as the server or tokenizer counted them)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class BackendError(RuntimeError):
    """A request that failed for good (after retries where retrying made sense)."""


class ResponseFormatError(BackendError):
    """The server answered, but not in the chat-completions format."""


class Backend(Protocol):
    model_id: str

    def complete(self, messages: Messages) -> Completion: ...

    def complete_many(self, batch: Sequence[Messages]) -> list[Completion | BackendError]: ...
