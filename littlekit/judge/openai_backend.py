"""A judge backend for any OpenAI-compatible chat-completions endpoint, on the standard library.

Works with a vLLM server (`http://host:8000/v1`), OpenAI (`https://api.openai.com/v1`) and
Gemini's compatible endpoint (`https://generativelanguage.googleapis.com/v1beta/openai`).

The API key is read from the environment variable named by `api_key_env` (checked when the
backend is made, and at each request) and is never stored on the object, so it cannot end up in
a repr. Surrounding whitespace (a trailing CR or LF) is stripped; a key with whitespace, control
or non-ASCII characters inside is refused with `redact.APIKeyError`, whose message does not
contain it. Everything the backend returns or raises goes through `redact.scrub`: error
messages, and the answers themselves, in case a server echoes the key (or a piece of it) in a
200 answer. When the variable is unset or blank no Authorization header is sent (a local vLLM
server without `--api-key`).

Requests run on `concurrency` threads; HTTP 408/409/425/429/5xx, timeouts and dropped
connections are retried with exponential backoff (honouring Retry-After), other 4xx fail
at once. `timeout` is a deadline for each attempt as a whole (connecting, the headers and the
whole body), not for each read: a server that drips its answer a byte at a time is cut off when
the deadline passes (`_Deadline` shuts the socket) and the attempt counts as a timeout.

A response body is read up to `max_response_bytes` (8 MiB by default, far above any answer of
`max_tokens` tokens): a larger one is that request's error, refused from its Content-Length
before anything is read, or as soon as the read passes the cap, so a huge or endless body never
sits in memory (at most `concurrency` times the cap in all). It is not retried: asked again, the
server would send it again. An answer that is not in the chat-completions format (no choices, a
`content` that is not text) is that request's error too (`ResponseFormatError`); a `usage` count
that is not a non-negative whole number is recorded as unknown (None), the answer kept.
"""

from __future__ import annotations

import functools
import http.client
import json
import logging
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from email.utils import parsedate_to_datetime
from http.client import HTTPException
from typing import Any

from littlekit.judge.backends import BackendError, Completion, Messages, ResponseFormatError, token_count
from littlekit.judge.redact import APIKeyError, read_api_key, redact_url, scrub

log = logging.getLogger("littlekit.judge")

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
MAX_RESPONSE_BYTES = 8 * 1024 * 1024  # default cap on one response body
ERROR_BODY_BYTES = 64 * 1024  # what is read of an error body (only its first 300 characters are shown)
_CHUNK = 64 * 1024


class ResponseTooLargeError(BackendError):
    """A response body over the backend's `max_response_bytes`; refused without being read whole."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class OpenAIChatBackend:
    """POST {base_url}/chat/completions with temperature 0 and a 1,024-token cap by default."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        timeout: float = 60.0,
        max_retries: int = 5,
        backoff_base: float = 1.0,
        backoff_max: float = 120.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = 1024,
        max_tokens_field: str = "max_tokens",
        extra_body: dict[str, Any] | None = None,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if type(max_response_bytes) is not int or max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be a positive int, got {max_response_bytes!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.max_tokens_field = max_tokens_field
        self.extra_body = dict(extra_body or {})
        self.max_response_bytes = max_response_bytes
        self._slots = threading.BoundedSemaphore(concurrency)
        read_api_key(api_key_env)  # a key that cannot be sent fails here, before any request

    @property
    def model_id(self) -> str:
        return self.model

    def __repr__(self) -> str:
        return (
            f"OpenAIChatBackend(base_url={redact_url(self.base_url)!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, concurrency={self.concurrency})"
        )

    def payload(self, messages: Messages) -> dict[str, Any]:
        """The request body (no secrets in it)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body[self.max_tokens_field] = self.max_tokens
        body.update(self.extra_body)
        return body

    def complete(self, messages: Messages) -> Completion:
        """One chat completion, retried on transient failures; BackendError when it gives up."""
        data = json.dumps(self.payload(messages)).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                with self._slots:
                    return self._post(data)
            except _Retryable as exc:
                if attempt == attempts - 1:
                    raise BackendError(scrub(f"gave up after {attempts} attempts: {exc}")) from None
                delay = self._delay(attempt, exc.retry_after)
                log.warning("judge request failed (%s); retry %d/%d in %.2fs",
                            scrub(str(exc)), attempt + 1, self.max_retries, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def complete_many(self, batch: Sequence[Messages]) -> list[Completion | BackendError]:
        """Complete every conversation, `concurrency` at a time, in order; errors are returned."""
        def one(messages: Messages) -> Completion | BackendError:
            try:
                return self.complete(messages)
            except BackendError as exc:
                return exc
            except Exception as exc:  # an answer nobody foresaw is this request's error, not the batch's
                return BackendError(self._scrub(f"{type(exc).__name__}: {exc}"[:500]))

        if len(batch) <= 1:
            return [one(messages) for messages in batch]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batch))) as pool:
            return list(pool.map(one, batch))

    def _post(self, data: bytes) -> Completion:
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=data, method="POST", headers=self._headers()
        )
        deadline = _Deadline(self.timeout)
        opener = urllib.request.build_opener(_DeadlineHTTPHandler(deadline), _DeadlineHTTPSHandler(deadline))
        try:
            with opener.open(request, timeout=self.timeout) as response:
                body = self._read_capped(response)
            if deadline.expired:  # a body without Content-Length ends quietly when the socket is shut
                raise TimeoutError("deadline passed")
        except urllib.error.HTTPError as exc:
            message = self._scrub(f"HTTP {exc.code}: {_error_text(exc)}")
            if exc.code in RETRY_STATUS or exc.code >= 500:
                raise _Retryable(message, _retry_after(exc.headers.get("Retry-After"))) from None
            raise BackendError(message) from None
        except (TimeoutError, OSError, HTTPException) as exc:
            if deadline.expired:
                whole = f"no complete answer within {self.timeout:g}s"
                raise _Retryable(f"TimeoutError: timed out, {whole}") from None
            raise _Retryable(self._scrub(f"{type(exc).__name__}: {exc}")) from None
        finally:
            deadline.cancel()
        return parse_chat_response(body)

    def _read_capped(self, response: Any) -> bytes:
        """The body, or ResponseTooLargeError once it is known to pass `max_response_bytes`
        (from Content-Length before reading, else as the read passes it)."""
        cap = self.max_response_bytes
        length = response.headers.get("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > cap:
            raise ResponseTooLargeError(
                f"response body of {int(length):,} bytes (Content-Length) is over the cap of {cap:,} "
                "bytes (max_response_bytes); refused without reading it"
            )
        chunks, size = [], 0
        while chunk := response.read(min(_CHUNK, cap + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise ResponseTooLargeError(
                    f"response body is over the cap of {cap:,} bytes (max_response_bytes); refused after "
                    f"reading {size:,} bytes"
                )
        return b"".join(chunks)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = read_api_key(self.api_key_env)  # stripped, checked, registered for scrub
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def _scrub(self, message: str) -> str:
        try:
            read_api_key(self.api_key_env)  # the key now in the variable is scrubbed too
        except APIKeyError:
            pass  # a refused key is registered for scrubbing all the same
        return scrub(message)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        backoff = self.backoff_base * (2**attempt)
        return min(backoff * (1 + 0.25 * random.random()), self.backoff_max)


class _Deadline:
    """One request's deadline: `seconds` after it is made, every socket it watches is shut down,
    which ends any read blocked on it (a socket timeout bounds each read, not their sum)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.expired = False
        self._start = time.monotonic()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        return self.seconds - (time.monotonic() - self._start)

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def cancel(self) -> None:
        self._timer.cancel()

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)


def _shut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # closed already, or detached into the TLS socket (which is watched too)


class _DeadlineConnection(http.client.HTTPConnection):
    """An HTTP connection whose sockets `deadline` watches, each blocking call bounded by what is left."""

    def __init__(self, *args: Any, deadline: _Deadline, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._deadline = deadline
        self._create_connection = self._watched_connection

    def _watched_connection(self, address, timeout=None, source_address=None):
        left = max(self._deadline.remaining(), 0.001)
        timeout = min(timeout, left) if isinstance(timeout, int | float) else left
        sock = socket.create_connection(address, timeout, source_address)
        self._deadline.watch(sock)
        return sock

    def connect(self) -> None:
        super().connect()
        self._deadline.watch(self.sock)  # for https: the TLS socket that took the plain one over


class _DeadlineHTTPSConnection(_DeadlineConnection, http.client.HTTPSConnection):
    pass


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self._deadline = deadline

    def http_open(self, req):
        return self.do_open(functools.partial(_DeadlineConnection, deadline=self._deadline), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline):
        super().__init__()
        self._deadline = deadline

    def https_open(self, req):
        connection = functools.partial(_DeadlineHTTPSConnection, deadline=self._deadline)
        return self.do_open(connection, req, context=self._context)


def parse_chat_response(body: bytes) -> Completion:
    """Completion from a chat-completions JSON body; ResponseFormatError if it is not one.

    The answer text and the error messages are scrubbed of API keys (`redact.scrub`), so a
    server that echoes the Authorization header cannot get the key into a cache or a label.
    """
    try:
        data = json.loads(body, parse_int=_json_int)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nesting too deep
        shown = scrub(repr(body))  # scrubbed whole, then cut: no piece of a key survives the cut
        raise ResponseFormatError(f"response is not JSON: {shown[:120]}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        raise ResponseFormatError(f"response has no choices: {scrub(str(data))[:120]}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ResponseFormatError("response choice has no message")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    return Completion(
        text=scrub(_content_text(message.get("content"))),
        input_tokens=token_count(usage.get("prompt_tokens")),
        output_tokens=token_count(usage.get("completion_tokens")),
    )


def _json_int(text: str) -> int | float:
    """A JSON integer; one of over 30 digits (past any count, and past Python's 4,300-digit limit
    for converting) is infinity, which `token_count` takes for unknown."""
    return int(text) if len(text) <= 30 else float("inf")


def _content_text(content: Any) -> str:
    """The answer text: a string, None (no text), or a list of text parts
    ([{"type": "text", "text": "..."}]); anything else is ResponseFormatError."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list) and all(
        isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        for part in content
    ):
        return "".join(part["text"] for part in content)
    shown = scrub(repr(content))
    raise ResponseFormatError(f"response content is not text ({type(content).__name__}): {shown[:120]}")


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None if absent/bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _error_text(exc: urllib.error.HTTPError) -> str:
    """The error body on one line, scrubbed before it is cut to 300 characters."""
    try:
        body = exc.read(ERROR_BODY_BYTES).decode("utf-8", "replace")
    except (OSError, HTTPException):  # HTTPException: an error body cut off at the deadline
        return scrub(str(exc.reason or ""))
    return scrub(" ".join(body.split()))[:300] or scrub(str(exc.reason or ""))
