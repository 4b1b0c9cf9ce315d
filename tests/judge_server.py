"""A real chat-completions server on loopback for the judge tests.

It answers POST /v1/chat/completions in the OpenAI format. Behaviour is scripted: `script`
holds steps consumed one per request (in arrival order), after which `answer(body) -> str`
gives the message content. `step_for(body) -> step or None`, when given, picks the step of a
request by what it asks (so concurrent requests about one document get the same step); None
falls back to the script. Steps:

    Status(code, retry_after=None)   an HTTP error (429, 500, 401, ...) with an error body
    Sleep(seconds)                   wait, then answer normally (to trip client timeouts)
    Raw(body_bytes)                  a 200 whose body is exactly these bytes (e.g. not JSON)
    Json(obj)                        a 200 whose body is this JSON object (e.g. no choices)
    Content(text)                    a normal answer with this message content
    Drip(interval)                   a normal answer sent one byte every `interval` seconds, status
                                     line and headers included (no single read ever waits long)
    Stream(total, content_length)    a 200 whose body is `total` spaces written in chunks, with no
                                     Content-Length (the body ends when the connection closes) unless
                                     `content_length` claims one; it stops when the client hangs up,
                                     and `streamed` counts the bytes it got to write

Every request is recorded (headers and JSON body), and the peak number of requests in
flight is kept to check client concurrency limits.

With `echo_authorization=True` the server behaves like a careless proxy: every answer and every
error body starts with the Authorization header it received, whole and in pieces (the bare key,
its first 8 and 12 characters, and its tail from the 5th character on), so tests can check
that nothing the client writes keeps any of it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Status:
    code: int
    retry_after: str | None = None


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Raw:
    body: bytes


@dataclass(frozen=True)
class Json:
    obj: Any


@dataclass(frozen=True)
class Content:
    text: str


@dataclass(frozen=True)
class Drip:
    interval: float


@dataclass(frozen=True)
class Stream:
    total: int
    content_length: int | None = None
    chunk: int = 64 * 1024


def default_answer(body: dict) -> str:
    return '{"rationale": "short everyday words", "band": "K5"}'


class JudgeServer:
    """Context manager: `with JudgeServer() as server: server.url` -> 'http://127.0.0.1:PORT/v1'."""

    def __init__(
        self,
        answer: Callable[[dict], str] = default_answer,
        script=(),
        delay: float = 0.0,
        echo_authorization: bool = False,
        step_for: Callable[[dict], Any] | None = None,
    ):
        self.answer = answer
        self.step_for = step_for
        self.echo_authorization = echo_authorization
        self.script: deque = deque(script)
        self.delay = delay
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.streamed = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_step(self, body: dict | None = None):
        if self.step_for is not None and body is not None:
            step = self.step_for(body)
            if step is not None:
                return step
        with self._lock:
            return self.script.popleft() if self.script else None

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                self._counted = True
                try:
                    self._respond(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout); nothing to answer
                finally:
                    self._leave()

            def _leave(self) -> None:
                """The request stops counting as in flight, once. Called before the response's last
                bytes go out: the client may send its next request as soon as it has them, before
                this thread would get back to a `finally`, and it would be counted twice."""
                if getattr(self, "_counted", False):
                    self._counted = False
                    with server._lock:
                        server.in_flight -= 1

            def _echo(self) -> str:
                if not server.echo_authorization:
                    return ""
                header = self.headers.get("Authorization", "")
                key = header.removeprefix("Bearer ")
                return (
                    f"[echo] Authorization: {header} | key {key} | starts {key[:8]} "
                    f"| first twelve {key[:12]}... | tail {key[4:]}\n"
                )

            def _respond(self, body: dict) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, {"error": {"message": "not found"}})
                if server.delay:
                    time.sleep(server.delay)
                step = server._next_step(body)
                if isinstance(step, Status):
                    headers = {"Retry-After": step.retry_after} if step.retry_after else {}
                    error = {"error": {"message": f"{self._echo()}scripted {step.code}"}}
                    return self._send(step.code, error, headers)
                if isinstance(step, Sleep):
                    time.sleep(step.seconds)
                if isinstance(step, Raw):
                    return self._send_bytes(200, step.body)
                if isinstance(step, Json):
                    return self._send(200, step.obj)
                if isinstance(step, Drip):
                    return self._drip(step.interval, completion(body, server.answer(body)))
                if isinstance(step, Stream):
                    return self._stream(step)
                try:
                    content = step.text if isinstance(step, Content) else server.answer(body)
                except Exception as exc:  # a broken test script shows up as a 500, not a hang
                    return self._send(500, {"error": {"message": f"answer failed: {exc!r}"}})
                return self._send(200, completion(body, self._echo() + content))

            def _drip(self, interval: float, obj: Any) -> None:
                data = json.dumps(obj).encode("utf-8")
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
                ).encode("ascii")
                self.close_connection = True
                message = head + data
                for i, byte in enumerate(message):
                    if i == len(message) - 1:
                        self._leave()
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(interval)

            def _stream(self, step: Stream) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if step.content_length is not None:
                    self.send_header("Content-Length", str(step.content_length))
                self.send_header("Connection", "close")
                self.close_connection = True
                self.end_headers()
                self._leave()
                sent = 0
                try:
                    while sent < step.total:
                        size = min(step.chunk, step.total - sent)
                        self.wfile.write(b" " * size)
                        sent += size
                finally:
                    with server._lock:
                        server.streamed += sent

            def _send(self, code: int, obj: Any, headers: dict | None = None) -> None:
                self._send_bytes(code, json.dumps(obj).encode("utf-8"), headers)

            def _send_bytes(self, code: int, data: bytes, headers: dict | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self._leave()
                self.wfile.write(data)

        return Handler


def completion(body: dict, content: str) -> dict:
    """A chat-completions response; token counts are characters / 4, like a rough tokenizer."""
    prompt_chars = sum(len(m.get("content", "")) for m in body.get("messages", []))
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(content) // 4,
                  "total_tokens": prompt_chars // 4 + len(content) // 4},
    }


def quick_backend(server: JudgeServer, api_key_env: str, **options: Any):
    """A real OpenAI-style judge client on `server`: short timeout, one retry, no backoff."""
    from littlekit.judge.openai_backend import OpenAIChatBackend

    settings = {"api_key_env": api_key_env, "timeout": 5.0, "max_retries": 1, "backoff_base": 0.0} | options
    return OpenAIChatBackend(server.url, "test-judge", **settings)
