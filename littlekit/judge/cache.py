"""An on-disk cache of judge answers (SQLite), so a re-run costs nothing.

Key: (prompt version, model id, SHA-256 of the document text). Value: the answer text and
the tokens it cost. Only answers the model actually gave are stored (unparseable ones too,
since at temperature 0 asking again would give the same text); failed requests are not.
Answers are scrubbed of API keys (`redact.scrub`) when stored and when read, so a key a server
echoed never reaches the file, nor leaves an older file.
A token count the server did not report usably (None in the `Completion`) is stored as -1 and
read back as None; the answer itself is kept.
One connection guarded by a lock serves all threads; WAL mode and a busy timeout let
several processes share the file.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from littlekit.judge.backends import Completion, token_count
from littlekit.judge.redact import scrub

Key = tuple[str, str, str]  # (prompt_version, model, text_sha256)
UNKNOWN_TOKENS = -1  # how an unknown token count is stored (the columns are NOT NULL)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    prompt_version TEXT NOT NULL,
    model TEXT NOT NULL,
    text_sha256 TEXT NOT NULL,
    answer TEXT NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (prompt_version, model, text_sha256)
)
"""


class JudgeCache:
    """SQLite answers table; `":memory:"` gives a throw-away cache."""

    def __init__(self, path: str | Path = ":memory:"):
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
        with self._lock, self._conn:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"JudgeCache({self.path!r})"

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def get(self, key: Key) -> Completion | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[Key]) -> dict[Key, Completion]:
        """The cached answers among `keys`."""
        found: dict[Key, Completion] = {}
        with self._lock:
            for key in dict.fromkeys(keys):
                row = self._conn.execute(
                    "SELECT answer, input_tokens, output_tokens FROM answers "
                    "WHERE prompt_version=? AND model=? AND text_sha256=?",
                    key,
                ).fetchone()
                if row is not None:
                    found[key] = Completion(text=scrub(row[0]), input_tokens=token_count(row[1]),
                                            output_tokens=token_count(row[2]))  # fmt: skip
        return found

    def put(self, key: Key, completion: Completion) -> None:
        self.put_many([(key, completion)])

    def put_many(self, items: Iterable[tuple[Key, Completion]]) -> None:
        """Store answers in one transaction (a later answer for the same key replaces it).

        ValueError, before anything is stored, for an answer whose text is not a string."""
        now = time.time()
        rows = []
        for key, c in items:
            if not isinstance(c.text, str):
                raise ValueError(f"answer for {key} is not text ({type(c.text).__name__}); nothing stored")
            rows.append((*key, scrub(c.text), _stored(c.input_tokens), _stored(c.output_tokens), now))
        with self._lock, self._conn:
            self._conn.executemany("INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _stored(tokens: object) -> int:
    count = token_count(tokens)
    return UNKNOWN_TOKENS if count is None else count
