"""The judge's three prompts, with rubrics drawn from the real CCSS and NGSS text at run time.

The paper's judge asks for a grade band through three seed prompts with orthogonal signals:
language complexity, context complexity, and a subject-aggregated rubric over math, life,
physical and earth/space science. Ours follow that split. The hand-written part of each
prompt says what to look at; the rubric part quotes a few standards per band, chosen
deterministically from `data/standards/standards.csv` (columns framework, code, grade, band,
subject, text), so the prompts say what each band teaches in the standards' own words.

Each prompt's `version` is a hash of everything that decides the question the model sees
(name, system text, user template, truncation length); it is part of the cache key, so any
edit to a prompt or to the standards it quotes makes fresh answers.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from littlekit.config import data_path

PROMPT_NAMES: tuple[str, ...] = ("language", "context", "subject")
SCHOOL_BANDS: tuple[str, ...] = ("K5", "K8", "K12")  # bands the standards cover; OOS has none
DEFAULT_MAX_CHARS = 6000  # a text snippet, as in the paper; longer documents are cut
STANDARD_CHARS = 220  # each quoted standard is cut to about this many characters

SUBJECTS: dict[str, str] = {
    "math": "Mathematics (CCSS-Math)",
    "life": "Life science (NGSS LS)",
    "physical": "Physical science (NGSS PS)",
    "earth_space": "Earth and space science (NGSS ESS)",
}

BAND_DEFINITIONS = """Grade bands (United States schooling):
- K5: elementary school, kindergarten to grade 5 (ages about 5 to 11).
- K8: middle school, grades 6 to 8 (ages about 11 to 14).
- K12: high school, grades 9 to 12 (ages about 14 to 18).
- OOS: out of scope, beyond school level: university, professional or specialist material \
that assumes knowledge past the high-school standards."""

DECISION_RULE = """Choose the lowest band whose typical student could read and understand the \
whole text on their own. A single passage that needs a higher band decides the band. If you \
are unsure between two bands, choose the higher one: showing a young reader text that is too \
advanced is the worse mistake."""

OUTPUT_FORMAT = """Respond with one JSON object and nothing else:
{"rationale": "<one or two sentences naming the evidence>", "band": "<K5|K8|K12|OOS>"}"""

USER_TEMPLATE = """Text:
<<<
{text}
>>>

Which grade band is this text for? Answer with the JSON object only."""

LANGUAGE_FOCUS = """You are a reading specialist who places texts in United States grade bands \
by their language alone.

Look at the words and the sentences: how familiar the vocabulary is (everyday words, or \
academic, technical and Latin- or Greek-derived terms), word length, sentence length and \
structure (simple and compound sentences, or embedded clauses, passive voice and \
nominalisations), and figurative or idiomatic language. Judge only the language; other \
judges look at the topic and at the knowledge it assumes, so a plain story about a hard topic \
is judged by its plain words.

What the Common Core language standards expect in each band:"""

CONTEXT_FOCUS = """You are a curriculum specialist who places texts in United States grade \
bands by the knowledge and reasoning they demand.

Look at what the reader must already know and do: the background knowledge assumed (concepts, \
events, institutions, jargon left unexplained), how abstract the ideas are, how many ideas are \
connected and how (sequence, cause and effect, argument, counter-argument), the purpose and \
structure of the text, and themes suitable only for older readers. Judge the demands of the \
content, not the word choice; another judge looks at the language.

What the Common Core reading standards expect readers to do with texts in each band:"""

SUBJECT_FOCUS = """You are a mathematics and science curriculum specialist who places texts in \
United States grade bands.

Find the most advanced mathematical or scientific idea the text needs (in mathematics, life \
science, physical science, or earth and space science) and place it against the standards \
below: the band is the one where that idea is taught. Procedures, notation and quantities \
count as much as topics (for example fractions and decimals are elementary; negative numbers, \
ratios and linear equations are middle school; functions, exponential models and chemical \
equations are high school). If the text holds no mathematics or science, judge the band in \
which its content would be taught in school.

What the Common Core mathematics standards and the Next Generation Science Standards teach in \
each band:"""


@dataclass(frozen=True)
class JudgePrompt:
    """One prompt variant: a system message (focus + rubric + output format) and a user template."""

    name: str
    system: str
    user_template: str = USER_TEMPLATE
    max_chars: int = DEFAULT_MAX_CHARS

    @property
    def version(self) -> str:
        """Hash of everything that decides the question; part of the cache key."""
        payload = json.dumps([self.name, self.system, self.user_template, self.max_chars])
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]

    def messages(self, text: str) -> list[dict[str, str]]:
        """Chat messages for one document (the text is cut to `max_chars`)."""
        user = self.user_template.replace("{text}", truncate(text, self.max_chars))
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def truncate(text: str, max_chars: int) -> str:
    """Cut at the last whitespace before `max_chars` and say so, so the judge knows."""
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    space = cut.rfind(" ")
    if space > max_chars // 2:
        cut = cut[:space]
    return cut + " [...]"


def load_standards_frame(root: str | None = None) -> pd.DataFrame:
    """The embedded (or `$LITTLEKIT_DATA`) standards table."""
    return pd.read_csv(data_path("standards/standards.csv", root), dtype=str, keep_default_na=False)


def build_prompts(
    standards: pd.DataFrame | None = None,
    per_band: int = 5,
    per_subject_band: int = 2,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> list[JudgePrompt]:
    """The three seed prompts (language, context, subject) with rubrics quoted from `standards`.

    `standards` has columns framework, code, grade, band, subject, text; by default it is read
    from `data/standards/standards.csv`. The choice of quoted standards is deterministic.
    """
    frame = load_standards_frame() if standards is None else standards
    groups = standards_by_group(frame)
    language = _rubric(groups, ["ela_language"], per_band, "CCSS-ELA language standards")
    context = _rubric(groups, ["ela_reading"], per_band, "CCSS-ELA reading standards")
    subject = _subject_rubric(groups, per_subject_band)
    return [
        _prompt("language", LANGUAGE_FOCUS, language, max_chars),
        _prompt("context", CONTEXT_FOCUS, context, max_chars),
        _prompt("subject", SUBJECT_FOCUS, subject, max_chars),
    ]


def _prompt(name: str, focus: str, rubric: str, max_chars: int) -> JudgePrompt:
    system = "\n\n".join([focus, rubric, BAND_DEFINITIONS, DECISION_RULE, OUTPUT_FORMAT])
    return JudgePrompt(name=name, system=system, max_chars=max_chars)


_NGSS_DISCIPLINE_RE = re.compile(r"-(ESS|LS|PS|ETS)\d")
_ELA_STRAND_RE = re.compile(r"(?:^|\.)(RL|RI|RF|RST|RH|SL|WHST|W|L)\.(?:K|\d)", re.IGNORECASE)
_TAG_RE = re.compile(r"<[^>]{1,40}>")  # stray HTML emphasis in the CCSS text
_NGSS_GROUPS = {"ESS": "earth_space", "LS": "life", "PS": "physical"}


def standard_group(framework: str, code: str, subject: str = "") -> str | None:
    """Which rubric a standard feeds: math, life, physical, earth_space, ela_language, ela_reading.

    None for standards no prompt quotes (engineering design, writing, speaking and listening).
    """
    fw = framework.lower()
    if "math" in fw:
        return "math"
    if "ngss" in fw:
        match = _NGSS_DISCIPLINE_RE.search(code)
        if match:
            return _NGSS_GROUPS.get(match.group(1))
        return _subject_keyword(subject)
    if "ela" in fw:
        match = _ELA_STRAND_RE.search(code)
        strand = match.group(1).upper() if match else ""
        if strand == "L":
            return "ela_language"
        if strand in {"RL", "RI", "RST", "RH"}:
            return "ela_reading"
        return None
    return _subject_keyword(subject)


def _subject_keyword(subject: str) -> str | None:
    text = subject.lower()
    for keyword, group in (("math", "math"), ("life", "life"), ("physical", "physical"),
                           ("earth", "earth_space"), ("space", "earth_space")):
        if keyword in text:
            return group
    return None


def standards_by_group(frame: pd.DataFrame) -> dict[tuple[str, str], list[str]]:
    """(group, band) -> standard lines "code: text" in natural code order.

    A text that recurs in several bands of a group (e.g. "Demonstrate command of the
    conventions of standard English grammar ...", repeated every grade) cannot tell bands
    apart, so it is left out; a text repeated within one band is kept once.
    """
    missing = {"framework", "code", "band", "text"} - set(frame.columns)
    if missing:
        raise ValueError(f"standards frame lacks columns {sorted(missing)}")
    subject = frame["subject"] if "subject" in frame.columns else pd.Series("", index=frame.index)
    rows: list[tuple[str, str, str, str]] = []  # group, band, code, clean text
    for fw, code, band, text, subj in zip(
        frame["framework"], frame["code"], frame["band"], frame["text"], subject, strict=True
    ):
        group = standard_group(str(fw), str(code), str(subj))
        clean = _clean_text(str(text))
        if group is not None and band in SCHOOL_BANDS and clean:
            rows.append((group, str(band), str(code), clean))
    bands_of: dict[tuple[str, str], set[str]] = {}
    for group, band, _, clean in rows:
        bands_of.setdefault((group, clean), set()).add(band)
    groups: dict[tuple[str, str], dict[str, tuple[list, str]]] = {}
    for group, band, code, clean in sorted(rows, key=lambda row: _natural_key(row[2])):
        if len(bands_of[(group, clean)]) == 1:
            groups.setdefault((group, band), {}).setdefault(clean, (_natural_key(code), code))
    return {
        key: [f"{code}: {_shorten(clean)}" for clean, (_, code) in texts.items()]
        for key, texts in groups.items()
    }


def pick_evenly(lines: list[str], k: int) -> list[str]:
    """k lines spread evenly over the list (first and last included): a deterministic sample."""
    if k <= 0 or not lines:
        return []
    if len(lines) <= k:
        return list(lines)
    if k == 1:
        return [lines[len(lines) // 2]]
    step = (len(lines) - 1) / (k - 1)
    return [lines[round(i * step)] for i in range(k)]


def _rubric(groups: dict, group_names: list[str], k: int, what: str) -> str:
    blocks = []
    for band in SCHOOL_BANDS:
        lines = [line for name in group_names for line in pick_evenly(groups.get((name, band), []), k)]
        if lines:
            blocks.append(f"{band}:\n" + "\n".join(f"- {line}" for line in lines))
    if not blocks:
        raise ValueError(f"the standards frame holds no {what}; cannot build this prompt's rubric")
    return "\n".join(blocks)


def _subject_rubric(groups: dict, k: int) -> str:
    blocks = []
    for band in SCHOOL_BANDS:
        lines = []
        for group, label in SUBJECTS.items():
            for line in pick_evenly(groups.get((group, band), []), k):
                lines.append(f"- [{label}] {line}")
        if lines:
            blocks.append(f"{band}:\n" + "\n".join(lines))
    if not blocks:
        raise ValueError("the standards frame holds no CCSS-Math or NGSS standards")
    return "\n".join(blocks)


def _clean_text(text: str) -> str:
    return " ".join(_TAG_RE.sub("", text).split())


def _shorten(text: str, limit: int = STANDARD_CHARS) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return cut[: cut.rfind(" ")] + " ..." if " " in cut else cut + "..."


def _natural_key(code: str) -> list:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", code)]


def save_prompts(prompts: list[JudgePrompt], path: str | Path) -> None:
    """Write prompts as JSON (for example after optimising them elsewhere)."""
    Path(path).write_text(json.dumps([asdict(p) for p in prompts], indent=2), encoding="utf-8")


def load_prompts(path: str | Path) -> list[JudgePrompt]:
    """Read prompts written by `save_prompts` (or by hand, same keys)."""
    return [JudgePrompt(**item) for item in json.loads(Path(path).read_text(encoding="utf-8"))]


# --- the Jeopardy evaluation's NGSS prompt (`littlekit.evals.jeopardy`) ---------------------------

NGSS_SYSTEM = """You are a science curriculum specialist. You place quiz facts in the grade band \
of United States schooling where the Next Generation Science Standards (NGSS) teach them.

You will see a Jeopardy! clue and its correct response. Decide which idea a student must know \
to give the response, and find the band in which NGSS first teaches that idea:
- K5: kindergarten to grade 5 (the codes K-, 1- to 5- below)
- K8: middle school, grades 6 to 8 (MS- codes)
- K12: high school, grades 9 to 12 (HS- codes)
- OOS: beyond school science (university or specialist knowledge, or no NGSS idea at all)

Judge the scientific idea, not the wording of the clue: a hard word for a simple idea is still \
the band of the idea, and a trivia detail (a name, a date, a record) belongs to the band of the \
idea it is about. If you are unsure between two bands, choose the higher one.

NGSS disciplinary core ideas, with one performance expectation each:
{dci_text}

Respond with one JSON object and nothing else:
{{"rationale": "<one sentence naming the idea>", "dci": "<the closest code, e.g. 2-LS4 or MS-PS1>", \
"band": "<K5|K8|K12|OOS>"}}"""

NGSS_USER = """{text}

In which grade band does NGSS teach the fact needed for this response? Answer with the JSON object only."""

_DCI_RE = re.compile(r"^((?:K|\d|MS|HS)-(?:ESS|LS|PS)\d)")


def dci_code(performance_expectation: str) -> str | None:
    """'2-LS4-1' -> '2-LS4'; None for engineering (ETS) and codes of other shapes."""
    match = _DCI_RE.match(performance_expectation)
    return match.group(1) if match else None


def dci_table(standards: pd.DataFrame, per_dci: int = 1, max_chars: int = 200) -> pd.DataFrame:
    """NGSS disciplinary core ideas of a standards table (`littlekit.databuild.corpora.load_standards`):
    `dci, band, subject, text` (the first `per_dci` expectations of each, cut near `max_chars`)."""
    ngss = standards[standards["framework"].str.upper() == "NGSS"].copy()
    ngss["dci"] = ngss["code"].map(dci_code)
    ngss = ngss[ngss["dci"].notna()]
    rows = []
    for dci, group in ngss.groupby("dci", sort=False):
        texts = [
            t if len(t) <= max_chars else t[: max_chars - 3].rsplit(" ", 1)[0] + "..."
            for t in group["text"].head(per_dci)
        ]
        rows.append(
            {
                "dci": dci,
                "band": group["band"].iloc[0],
                "subject": group["subject"].iloc[0],
                "text": " ".join(texts),
            }
        )
    return pd.DataFrame(rows, columns=["dci", "band", "subject", "text"])


def build_ngss_prompt(standards: pd.DataFrame, per_dci: int = 1) -> JudgePrompt:
    """The Jeopardy judge's prompt, named "ngss_science": a clue's band is the band of the NGSS idea
    its response needs, and the system text quotes every DCI of `standards` (`dci_table`)."""
    table = dci_table(standards, per_dci=per_dci)
    lines = [f"- {r.dci} ({r.band}, {r.subject}): {r.text}" for r in table.itertuples(index=False)]
    system = NGSS_SYSTEM.format(dci_text="\n".join(lines))
    return JudgePrompt(name="ngss_science", system=system, user_template=NGSS_USER)
