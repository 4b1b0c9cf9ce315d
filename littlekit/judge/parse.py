"""Turn a judge's answer text into a band, or raise JudgeParseError.

Accepted, in this order of preference:
1. a JSON object anywhere in the answer (also inside code fences) with a "band" key
   (or "grade_band", "label"); the last such object wins;
2. a `"band": "<value>"` pair in JSON that does not parse (e.g. cut off by the token cap);
3. a bare band on the last non-empty line: "K8", "Answer: K8", "**Band:** middle school".
Band values may be the short codes (K5, K8, K12, OOS), the ranges (K-5, 6-8, 9-12), the long
names (elementary, middle, high, out-of-scope, with or without "school"), or "grade N".
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from littlekit.grades import BANDS, grade_to_band
from littlekit.judge.redact import scrub

BAND_KEYS: tuple[str, ...] = ("band", "grade_band", "label")

_ALIASES: dict[str, str] = {
    "k5": "K5", "k-5": "K5", "k to 5": "K5", "grades k-5": "K5",
    "elementary": "K5", "elementary school": "K5", "primary": "K5", "primary school": "K5",
    "k8": "K8", "6-8": "K8", "grades 6-8": "K8", "middle": "K8", "middle school": "K8",
    "k12": "K12", "9-12": "K12", "grades 9-12": "K12", "high": "K12", "high school": "K12",
    "oos": "OOS", "out-of-scope": "OOS", "out of scope": "OOS", "beyond school": "OOS",
    "beyond school level": "OOS",
}
_GRADE_RE = re.compile(r"^grade\s+(k|\d{1,2})$")
_LAST_LINE_PREFIX_RE = re.compile(
    r"^(?:final\s+)?(?:answer|band|grade\s+band|label|classification|verdict)\s*[:=\-]\s*", re.IGNORECASE
)
_BAND_PAIR_RE = re.compile(r'"(?:band|grade_band|label)"\s*:\s*"([^"]{1,40})"', re.IGNORECASE)


class JudgeParseError(ValueError):
    """The answer holds no recognisable band; `answer` keeps the text (scrubbed of API keys)."""

    def __init__(self, message: str, answer: str):
        super().__init__(scrub(message))
        self.answer = scrub(answer)


@dataclass(frozen=True)
class Judgement:
    band: str
    rationale: str = ""


def normalise_band(value: str) -> str | None:
    """A band code for any accepted spelling, or None."""
    text = _clean(value)
    band = _lookup(text)
    if band is None:
        without_aside = _clean(re.sub(r"\([^)]*\)", " ", text))
        if without_aside and without_aside != text:
            band = _lookup(without_aside)
    return band


def _clean(value: str) -> str:
    text = value.replace("\u2013", "-").replace("\u2014", "-")
    text = text.strip().strip("*_`'\".,;:!").strip()
    if text[:1] in "([" and text[-1:] in ")]":
        text = text[1:-1]
    text = re.sub(r"\s*-\s*", "-", text)
    return " ".join(text.lower().split())


def _lookup(text: str) -> str | None:
    if text.upper() in BANDS:
        return text.upper()
    if text in _ALIASES:
        return _ALIASES[text]
    grade = _GRADE_RE.match(text)
    if grade:
        try:
            return grade_to_band(grade.group(1))
        except ValueError:
            return None
    return None


def parse_answer(answer: str | None) -> Judgement:
    """The band (and rationale, when given) in a judge's answer; JudgeParseError otherwise."""
    text = answer or ""
    for obj in reversed(_json_objects(text)):
        value = _band_value(obj)
        if value is None:
            continue
        band = normalise_band(str(value))
        if band is None:
            raise JudgeParseError(f"JSON band value {str(value)[:40]!r} is not a band", text)
        return Judgement(band, str(obj.get("rationale", "")))
    pairs = _BAND_PAIR_RE.findall(text)
    if pairs:
        band = normalise_band(pairs[-1])
        if band is not None:
            return Judgement(band)
    band = _last_line_band(text)
    if band is not None:
        return Judgement(band)
    raise JudgeParseError(f"no band found in answer {_preview(text)!r}", text)


def parse_band(answer: str | None) -> str:
    """Just the band of `parse_answer`."""
    return parse_answer(answer).band


def _json_objects(text: str) -> list[dict]:
    """Every JSON object that decodes from some '{' in the text, in order of appearance."""
    decoder = json.JSONDecoder()
    found = []
    start = text.find("{")
    while start != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            found.append(obj)
        start = text.find("{", end)
    return found


def _band_value(obj: dict):
    lowered = {str(key).lower(): value for key, value in obj.items()}
    for key in BAND_KEYS:
        if key in lowered and lowered[key] is not None:
            return lowered[key]
    return None


def _last_line_band(text: str) -> str | None:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip().strip("`")]
    if not lines:
        return None
    last = lines[-1].replace("**", "").replace("__", "").strip()
    last = _LAST_LINE_PREFIX_RE.sub("", last)
    return normalise_band(last)


def _preview(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
