"""What every judge backend gives back, and the errors it raises.

A backend has a `model_id` (part of the cache key) and two methods:
`complete(messages) -> Completion`, and `complete_many(batch) -> list[Completion | BackendError]`
which never raises for a single failed request, so one bad document cannot crash a batch.
Implementations: `OpenAIChatBackend` (any OpenAI-compatible endpoint) and
`TransformersBackend` (a local model).

Token counts are what a server reported; one it reported badly (not a whole number, negative,
infinite, absurdly large) is None, "unknown" (`token_count`), never a crash.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Messages = list[dict[str, str]]

MAX_TOKENS = 2**53 - 1  # more than any answer costs; JSON readers and SQLite hold it exactly


def token_count(value: Any) -> int | None:
    """A reported token count as an int, or None (unknown) when it is not a non-negative whole
    number up to MAX_TOKENS: a string, a bool, a list, NaN, infinity (JSON's 1e400), -3, 2.5."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    if not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        return None
    return int(value)


@dataclass(frozen=True)
class Completion:
    """One answer and the tokens it cost (as the server or tokenizer counted them; None: unknown,
    the server reported no usable count)."""

    text: str
    input_tokens: int | None = 0
    output_tokens: int | None = 0


class BackendError(RuntimeError):
    """A request that failed for good (after retries where retrying made sense)."""


class ResponseFormatError(BackendError):
    """The server answered, but not in the chat-completions format."""


class Backend(Protocol):
    model_id: str

    def complete(self, messages: Messages) -> Completion: ...

    def complete_many(self, batch: Sequence[Messages]) -> list[Completion | BackendError]: ...
