"""API keys: checked and stripped before use, and scrubbed out of every text the judge writes.

`read_api_key(env_name)` reads the key from the environment, strips surrounding whitespace (a
key pasted with a trailing CR or LF is the common case) and refuses one with whitespace, control
or non-ASCII characters inside (`APIKeyError`, whose message never contains the key). Every key
it reads is registered here, in this process only, so that `scrub(text)` can take it out of
any text before it is written or raised: error messages, cached answers, label records, raw
answers kept with parse errors, and log records of the `littlekit.judge` logger (a filter).

`scrub` replaces with `***`:
- every registered key;
- every partial echo of one: any run of at least `MIN_ECHO` (8) characters that is a piece of
  a registered key (a prefix, a suffix, a truncated copy), of the key reversed, or of its base64
  encoding (standard or URL-safe, at any alignment: an echoed `Basic` header);
- such a piece spelt out with whitespace between its characters ("s k - p r o j ..."): a run of
  single characters split by whitespace is read without it;
- a credential-looking token after "Bearer " (an echoed Authorization header), registered or not;
- the userinfo of a URL (`https://user:password@host` -> `https://***@host`), registered or not
  (`redact_url` does only that).
Keys shorter than `MIN_ECHO` characters (such as vLLM's placeholder "EMPTY") are not treated as
secrets: replacing them would mangle ordinary text.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import threading
import unicodedata
from collections.abc import Mapping
from typing import Any

MASK = "***"
MIN_ECHO = 8  # the shortest piece of a key that counts as an echo of it

# "Bearer <token>" where the token looks like a credential (token68 characters, 8 or more, a digit)
_BEARER_RE = re.compile(r"(\bBearer\s+)(?=[A-Za-z0-9._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{8,}")
# "scheme://userinfo@": the userinfo holds no '/', '?', '#', '@' or whitespace
_USERINFO_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#@]+@")
# at least MIN_ECHO single characters split by whitespace, as a key spelt out "s k - p r o j" is
_SPACED_RE = re.compile(rf"(?<!\S)\S(?:\s+\S(?!\S)){{{MIN_ECHO - 1},}}")

_lock = threading.Lock()
_keys: set[str] = set()
_pieces: frozenset[str] = frozenset()  # every MIN_ECHO-character piece of every form of every key
_RUN_RE = re.compile(rf"\S{{{MIN_ECHO},}}")  # a key holds no whitespace, so neither does a piece of it


class APIKeyError(ValueError):
    """The API key in the environment cannot be sent; the message names the variable, not the key."""


def clean_api_key(value: str | None, env_name: str = "the API key variable") -> str | None:
    """The key without surrounding whitespace; None when unset or blank.

    APIKeyError when whitespace, a control character or a non-ASCII character is left inside
    (an HTTP header cannot carry it); the message gives its kind and position, never the key.
    """
    if value is None:
        return None
    key = value.strip()
    if not key:
        return None
    for position, char in enumerate(key, start=1):
        if char.isspace():
            problem = "whitespace"
        elif unicodedata.category(char).startswith("C"):
            problem = "a control character"
        elif not char.isascii():
            problem = "a non-ASCII character"
        else:
            continue
        _register_pieces(key)  # refused, but still kept out of anything written from here on
        raise APIKeyError(
            f"the API key in ${env_name} has {problem} at character {position} of {len(key)} "
            f"({unicodedata.name(char, f'U+{ord(char):04X}')}); an API key is one word of printable "
            f"ASCII: set ${env_name} again without it"
        )
    return key


def read_api_key(env_name: str) -> str | None:
    """The cleaned key in `$env_name` (None when unset or blank), registered for `scrub`."""
    key = clean_api_key(os.environ.get(env_name), env_name)
    if key is not None:
        register(key)
    return key


def register(key: str) -> None:
    """Scrub `key` (and pieces of it) from everything `scrub` sees from now on."""
    global _pieces
    key = key.strip()
    if len(key) < MIN_ECHO:
        return
    with _lock:
        if key in _keys:
            return
        _keys.add(key)
        forms = [form for k in _keys for form in _echo_forms(k)]
        _pieces = frozenset(k[i : i + MIN_ECHO] for k in forms for i in range(len(k) - MIN_ECHO + 1))


def _echo_forms(key: str) -> list[str]:
    """The key, reversed, and its base64 encodings at the three alignments it can have inside a
    longer encoded text (the characters its neighbours' bytes would change are left out)."""
    forms = [key, key[::-1]]
    data = key.encode("utf-8")
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + data).decode("ascii")
        start = 4 if offset else 0  # the first group mixes in the bytes before the key
        end = len(encoded) - 4 if (offset + len(data)) % 3 else len(encoded)  # the last, those after
        forms += [encoded[start:end], encoded[start:end].replace("+", "-").replace("/", "_")]
    return forms


def redact_url(text: Any) -> Any:
    """`text` with the userinfo of every URL in it replaced (`https://***@host`); not a string: as is."""
    if not isinstance(text, str) or "@" not in text:
        return text
    return _USERINFO_RE.sub(lambda m: m.group(1) + MASK + "@", text)


def _register_pieces(value: str) -> None:
    for piece in re.split(r"[\s\x00-\x1f\x7f]+", value):
        register(piece)


def scrub(text: Any) -> Any:
    """`text` with every registered key, partial echo and Bearer token replaced by `***`.

    Anything that is not a string is returned as it is.
    """
    if not isinstance(text, str) or not text:
        return text
    text = redact_url(_BEARER_RE.sub(lambda m: m.group(1) + MASK, text))
    pieces = _pieces
    if not pieces or len(text) < MIN_ECHO:
        return text
    found = []
    for run in _RUN_RE.finditer(text):  # every start of a piece, overlapping ones included
        word, base = run.group(), run.start()
        found += [(base + i, base + i + MIN_ECHO) for i in range(len(word) - MIN_ECHO + 1)
                  if word[i : i + MIN_ECHO] in pieces]  # fmt: skip
    for run in _SPACED_RE.finditer(text):  # a piece spelt out with whitespace inside
        where = [i for i in range(run.start(), run.end()) if not text[i].isspace()]
        compact = "".join(text[i] for i in where)
        found += [(where[i], where[i + MIN_ECHO - 1] + 1) for i in range(len(compact) - MIN_ECHO + 1)
                  if compact[i : i + MIN_ECHO] in pieces]  # fmt: skip
    spans: list[list[int]] = []
    for start, end in sorted(found):
        if spans and start <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(MASK)
        last = end
    out.append(text[last:])
    return "".join(out)


RECORD_DATA_KEYS = frozenset({"id", "text", "text_sha256"})  # a document's identity and content


def scrub_record(obj: Any, keep: frozenset[str] = RECORD_DATA_KEYS) -> Any:
    """A copy of a JSON-like object (dicts, lists, strings) with every string scrubbed.

    Values under a key in `keep` (at any depth) are left alone: by default a label
    record's document id, text and hash, which are the documents' own data (scrubbing them
    would break the hash join), not text the judge made.
    """
    if isinstance(obj, str):
        return scrub(obj)
    if isinstance(obj, Mapping):
        return {k: v if k in keep else scrub_record(v, keep) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return type(obj)(scrub_record(v, keep) for v in obj)
    return obj


class ScrubFilter(logging.Filter):
    """A logging filter that scrubs the formatted message (and any traceback text) of a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging to report
            return True
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


def install_log_filter(logger: logging.Logger) -> None:
    """Add one ScrubFilter to `logger` (idempotent)."""
    if not any(isinstance(f, ScrubFilter) for f in logger.filters):
        logger.addFilter(ScrubFilter())


install_log_filter(logging.getLogger("littlekit.judge"))


def _forget_all() -> None:
    """Tests only: drop every registered key."""
    global _pieces
    with _lock:
        _keys.clear()
        _pieces = frozenset()
