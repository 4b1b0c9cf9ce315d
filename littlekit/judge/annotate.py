"""Label documents with the judge: every prompt on every document, cached, parsed, voted.

A failed request, a malformed answer (not in the chat-completions format, a body over the
backend's size cap, a `Completion` whose text is not a string) or an unparseable answer becomes a
null vote with its message in `judge.errors`; it never stops the batch, and every good answer of
the batch is cached all the same. Each batch's failed calls are logged with their documents' ids.
A token count the backend could not report (None) counts in `usage["unknown"]`, not in the sums.
Records follow the label format documented in `littlekit.judge`; their text is scrubbed of API
keys (`redact.scrub_record`).

`check_judged(records)` is the verdict on a whole run before its labels are written: it raises
`JudgeRunError` when every call failed or no document got a band (a judge that answers HTTP 500 to
everything must not replace earlier labels with nulls), and warns (`JudgeWarning`) with the
counts when only some calls failed.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from littlekit.judge.backends import Backend, BackendError, Completion, token_count
from littlekit.judge.cache import JudgeCache, Key
from littlekit.judge.labels import JUDGE_SOURCE, text_sha256, validate_label
from littlekit.judge.parse import JudgeParseError, parse_answer
from littlekit.judge.prompts import JudgePrompt
from littlekit.judge.redact import scrub_record
from littlekit.judge.voting import VOTE_MODES
from littlekit.judge.voting import vote as vote_bands

log = logging.getLogger("littlekit.judge")


class JudgeRunError(RuntimeError):
    """A judge run that gave nothing to label with: every call failed, or no document got a band."""


class JudgeWarning(UserWarning):
    """Some of a judge run's calls failed; the documents they left without a band stay unlabelled."""


def annotate(
    texts: Iterable[str],
    prompts: Sequence[JudgePrompt],
    backend: Backend,
    cache: JudgeCache | None = None,
    vote: str = "majority",
    ids: Iterable[str] | None = None,
    batch_size: int = 64,
) -> list[dict[str, Any]]:
    """One label record per text (see `iter_annotate`)."""
    return list(iter_annotate(texts, prompts, backend, cache, vote=vote, ids=ids, batch_size=batch_size))


def iter_annotate(
    texts: Iterable[str],
    prompts: Sequence[JudgePrompt],
    backend: Backend,
    cache: JudgeCache | None = None,
    *,
    vote: str = "majority",
    ids: Iterable[str] | None = None,
    batch_size: int = 64,
) -> Iterator[dict[str, Any]]:
    """Yield label records batch by batch, so a long run can be written as it goes.

    `ids` default to the first 16 hex digits of each text's SHA-256. Answers are looked up in
    `cache` first; only the misses are sent to `backend`, and new answers are stored at once.
    """
    if vote not in VOTE_MODES:
        raise ValueError(f"unknown vote mode {vote!r}; expected one of {', '.join(VOTE_MODES)}")
    names = [p.name for p in prompts]
    if not prompts or len(set(names)) != len(names):
        raise ValueError(f"need at least one prompt and unique prompt names, got {names}")
    id_iter = iter(ids) if ids is not None else None
    text_iter = iter(texts)
    while batch := list(islice(text_iter, batch_size)):
        shas = [text_sha256(text) for text in batch]
        batch_ids = _take_ids(id_iter, len(batch)) if id_iter is not None else [s[:16] for s in shas]
        answers, fresh = _answers(batch, shas, prompts, backend, cache)
        records = [_record(doc_id, sha, prompts, backend.model_id, answers, fresh, vote)
                   for doc_id, sha in zip(batch_ids, shas, strict=True)]  # fmt: skip
        _log_failures(records)
        yield from records
        log.info("judged %d documents (%d fresh answers)", len(batch), len(fresh))


def _log_failures(records: list[dict[str, Any]]) -> None:
    """One warning for a batch's failed calls, naming the documents (by id) they left without a vote."""
    failed = [(r["id"], name, message) for r in records for name, message in r["judge"]["errors"].items()
              if message.startswith("backend:")]  # fmt: skip
    if failed:
        ids = list(dict.fromkeys(doc_id for doc_id, _, _ in failed))
        shown = ", ".join(map(repr, ids[:20])) + (f" and {len(ids) - 20:,} more" if len(ids) > 20 else "")
        doc_id, name, message = failed[0]
        log.warning("%d judge calls failed in a batch of %d documents, on documents %s (first: %r, %s: %s)",
                    len(failed), len(records), shown, doc_id, name, message[:300])


def _checked(result: Any) -> Completion | BackendError:
    """A backend's result as a Completion with text and valid token counts (unknown ones None), or
    the BackendError it is: a malformed result becomes this call's error, never the batch's."""
    if isinstance(result, BackendError):
        return result
    if isinstance(result, BaseException):
        return BackendError(f"{type(result).__name__}: {result}")
    if not isinstance(result, Completion) or not isinstance(result.text, str):
        text_kind = type(getattr(result, "text", None)).__name__
        return BackendError(f"malformed answer from the backend: {type(result).__name__} with text of type "
                            f"{text_kind}")  # fmt: skip
    input_tokens, output_tokens = token_count(result.input_tokens), token_count(result.output_tokens)
    if (input_tokens, output_tokens) != (result.input_tokens, result.output_tokens):
        return Completion(result.text, input_tokens, output_tokens)
    return result


def _take_ids(id_iter: Iterator[str], n: int) -> list[str]:
    taken = [str(doc_id) for doc_id in islice(id_iter, n)]
    if len(taken) != n:
        raise ValueError("fewer ids than texts")
    return taken


def _answers(
    texts: list[str],
    shas: list[str],
    prompts: Sequence[JudgePrompt],
    backend: Backend,
    cache: JudgeCache | None,
) -> tuple[dict[Key, Completion | BackendError], set[Key]]:
    """Every (prompt, document) answer: cached ones, then the misses from the backend."""
    wanted: dict[Key, list[dict[str, str]]] = {}
    for text, sha in zip(texts, shas, strict=True):
        for prompt in prompts:
            key = (prompt.version, backend.model_id, sha)
            if key not in wanted:
                wanted[key] = prompt.messages(text)
    answers: dict[Key, Completion | BackendError] = dict(cache.get_many(wanted)) if cache else {}
    missing = [key for key in wanted if key not in answers]
    results = backend.complete_many([wanted[key] for key in missing]) if missing else []
    if len(results) != len(missing):
        raise BackendError(f"the backend gave {len(results)} results for {len(missing)} requests")
    results = [_checked(result) for result in results]
    answers.update(zip(missing, results, strict=True))
    if cache is not None:
        cache.put_many((key, r) for key, r in zip(missing, results, strict=True) if isinstance(r, Completion))
    return answers, set(missing)


def _record(
    doc_id: str,
    sha: str,
    prompts: Sequence[JudgePrompt],
    model: str,
    answers: dict[Key, Completion | BackendError],
    fresh: set[Key],
    mode: str,
) -> dict[str, Any]:
    votes: dict[str, str | None] = {}
    errors: dict[str, str] = {}
    usage = {"input_tokens": 0, "output_tokens": 0, "cached": 0, "unknown": 0}
    for prompt in prompts:
        key = (prompt.version, model, sha)
        result = answers[key]
        votes[prompt.name] = None
        if isinstance(result, BackendError):
            errors[prompt.name] = f"backend: {result}"
            continue
        if result.input_tokens is None or result.output_tokens is None:
            usage["unknown"] += 1  # an answer whose cost the server did not report usably
        usage["input_tokens"] += result.input_tokens or 0
        usage["output_tokens"] += result.output_tokens or 0
        usage["cached"] += key not in fresh
        try:
            votes[prompt.name] = parse_answer(result.text).band
        except JudgeParseError as exc:
            errors[prompt.name] = f"parse: {exc}"
    judge = {
        "model": model,
        "prompt_versions": {p.name: p.version for p in prompts},
        "vote": mode,
        "usage": usage,
        "errors": errors,
    }
    return validate_label(scrub_record({
        "id": doc_id,
        "text_sha256": sha,
        "band": vote_bands(votes, mode),
        "votes": votes,
        "judge": judge,
        "source": JUDGE_SOURCE,
    }))


def check_judged(records: Sequence[dict[str, Any]], vote: str | None = None) -> dict[str, int]:
    """Counts of a judge run's records, or JudgeRunError when they hold nothing to label with.

    Raises when there are no records, when every call failed (a `backend:` error for every prompt
    of every document) or when no record has a band (with `vote`: no band under that vote mode,
    e.g. "unanimous" for the training labels). When some calls failed but not all, warns
    (`JudgeWarning`) with how many of how many. Returns {"documents", "calls", "failed",
    "unparsed", "labelled"}: calls made (answers served from the cache count as calls that
    succeeded), those that failed, answers that could not be parsed, documents with a band. The
    messages quote the first error, already scrubbed of API keys like everything in a record.
    """
    if vote is not None and vote not in VOTE_MODES:
        raise ValueError(f"unknown vote mode {vote!r}; expected one of {', '.join(VOTE_MODES)}")
    calls = failed = unparsed = labelled = 0
    first_error = None
    failed_ids: dict[str, None] = {}
    for record in records:
        judge = record.get("judge")
        if not isinstance(judge, dict):
            raise ValueError(f"label {record.get('id')!r} was not made by the judge")
        calls += len(judge.get("prompt_versions") or record["votes"])
        for message in judge.get("errors", {}).values():
            failed += message.startswith("backend:")
            if message.startswith("backend:"):
                failed_ids[str(record.get("id"))] = None
            unparsed += message.startswith("parse:")
            first_error = first_error or message
        band = record["band"] if vote is None else vote_bands(record["votes"], vote)
        labelled += band is not None
    counts = {"documents": len(records), "calls": calls, "failed": failed, "unparsed": unparsed,
              "labelled": labelled}  # fmt: skip
    quoted = f" (first error: {first_error[:300]})" if first_error else ""
    if not records:
        raise JudgeRunError("the judge was given no documents, so there are no labels to write")
    if failed == calls:
        raise JudgeRunError(
            f"every one of the {calls:,} judge calls failed{quoted}; no labels were made, so none are "
            "written (check the endpoint, the model name and the key)"
        )
    if not labelled:
        which = f"a {vote} band" if vote is not None else "a band"
        raise JudgeRunError(
            f"none of the {len(records):,} judged documents got {which} ({failed:,} of {calls:,} calls "
            f"failed, {unparsed:,} answers could not be parsed){quoted}; there are no labels to write"
        )
    if failed:
        message = (
            f"{failed:,} of {calls:,} judge calls failed ({unparsed:,} more answers could not be parsed); "
            f"{len(records) - labelled:,} of {len(records):,} documents have no band; failed on "
            f"{_some_ids(list(failed_ids))}{quoted}"
        )
        warnings.warn(message, JudgeWarning, stacklevel=2)
    return counts


def _some_ids(ids: list[str], shown: int = 10) -> str:
    """Document ids for a message: the first `shown`, and how many more."""
    more = f" and {len(ids) - shown:,} more" if len(ids) > shown else ""
    return "documents " + ", ".join(map(repr, ids[:shown])) + more
