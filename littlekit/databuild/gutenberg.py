"""Project Gutenberg books -> clean paragraphs -> passages of 80-300 words.

Strips the Gutenberg header and footer (modern `*** START OF ... ***` markers and the older
`*END*THE SMALL PRINT!` variant), fixes encodings and line endings, drops what is not running
text (headings, contents, illustration notes, all-caps lines) and joins paragraphs into passages.
"""

from __future__ import annotations

import re
import statistics
import unicodedata

from littlekit.databuild.chunking import chunk_paragraphs

_START_RE = re.compile(
    r"^\s*\*{3}\s*START OF (THE|THIS) PROJECT GUTENBERG.*$"
    r"|^.*\*END\*THE SMALL PRINT!.*$",
    re.IGNORECASE | re.MULTILINE,
)
_END_RE = re.compile(
    r"^\s*\*{3}\s*END OF (THE|THIS) PROJECT GUTENBERG.*$"
    r"|^\s*End of (the )?Project Gutenberg.*$"
    r"|^\s*\*{3}\s*START: FULL LICENSE",
    re.IGNORECASE | re.MULTILINE,
)
_ILLUSTRATION_RE = re.compile(r"\[(Illustration|Frontispiece)[^\]]*\]", re.IGNORECASE)
_ITALIC_RE = re.compile(r"_([^_]+)_")
_STRAY_UNDERSCORE_RE = re.compile(r"(?<!\w)_|_(?!\w)")
_FOOTNOTE_REF_RE = re.compile(r"\[\d+\]")
_HEADING_RE = re.compile(
    r"^(chapter|book|part|act|scene|stave|volume|preface|introduction|contents|footnotes?)\b[\s\dIVXLC.:\-—]*",
    re.IGNORECASE,
)
_NUMBERED_HEADING_RE = re.compile(
    r"^(chapter|book|part|act|scene|stave|volume)\s+[IVXLCDM\d]+\b", re.IGNORECASE
)
_FIRST_HEADING_RE = re.compile(
    r"^[ \t]*(chapter|book|part|act|stave)\s+(I|1|one)\b(?![\w'’])", re.IGNORECASE | re.MULTILINE
)
_SENTENCE_END = (".", "!", "?", '"', "'", "”", "’", ":", ";", ",", "—", "-", ")")
_BOILERPLATE_RE = re.compile(
    r"gutenberg|produced by|transcriber|e-?text|http|www\.|copyright|illustrated by|\*\s+\*\s+\*",
    re.IGNORECASE,
)


def decode_book(raw: bytes, encoding: str) -> str:
    """Text of a book file: BOM dropped, Latin-1 files read as cp1252, CRLF/CR -> LF, NFC."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    # the manifest's encoding is a hint: one "us-ascii" book has a stray cp1252 byte
    candidates = ("utf-8", "cp1252") if encoding.lower() in {"utf-8", "us-ascii", "ascii"} else ("cp1252",)
    text = None
    for candidate in candidates:
        try:
            text = raw.decode(candidate)
            break
        except UnicodeDecodeError:
            continue
    if text is None:
        text = raw.decode("latin-1")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def strip_gutenberg(text: str) -> str:
    """The book body between the last start marker and the first end marker after it."""
    starts = list(_START_RE.finditer(text))
    body_start = starts[-1].end() if starts else 0
    end = _END_RE.search(text, body_start)
    body_end = end.start() if end else len(text)
    return text[body_start:body_end].strip("\n")


def raw_paragraphs(text: str) -> list[str]:
    """Blank-line separated blocks; a line over 200 characters (unwrapped prose) is its own block."""
    blocks: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = [line.rstrip() for line in block.split("\n") if line.strip()]
        current: list[str] = []
        for line in lines:
            if len(line) > 200:
                if current:
                    blocks.append("\n".join(current))
                    current = []
                blocks.append(line)
            else:
                current.append(line)
        if current:
            blocks.append("\n".join(current))
    return blocks


def is_running_text(block: str) -> bool:
    """False for headings, contents entries, title-page lines, all-caps lines and boilerplate."""
    flat = " ".join(block.split())
    words = flat.split()
    if not words or not any(ch.islower() for ch in flat):
        return False
    if re.match(r"\[\d+\]", flat):  # a footnote
        return False
    if _BOILERPLATE_RE.search(flat):
        return False
    if len(words) < 12 and (_HEADING_RE.match(flat) or not flat.endswith(_SENTENCE_END)):
        return False
    if len(words) < 40 and _NUMBERED_HEADING_RE.match(flat):
        return False
    # cast lists and title pages: many all-caps words
    capitals = sum(1 for word in words if len(word) > 1 and word.isupper())
    if capitals / len(words) > 0.3:
        return False
    lines = block.split("\n")
    # contents pages: most lines end in a page number or are chapter entries
    numbered = sum(1 for line in lines if re.search(r"\d+\s*$", line) or _HEADING_RE.match(line.strip()))
    return not (len(lines) >= 3 and numbered / len(lines) > 0.5)


def clean_block(block: str) -> str:
    """One paragraph's text: prose lines joined by spaces, verse keeps its line breaks."""
    lines = [" ".join(line.split()) for line in _ILLUSTRATION_RE.sub("", block).split("\n") if line.strip()]
    if not lines:
        return ""
    is_verse = len(lines) >= 2 and max(len(line) for line in lines) < 60
    if is_verse and statistics.mean(len(line) for line in lines) < 50:
        joined = "\n".join(lines)
    else:
        joined = " ".join(lines)
    joined = _FOOTNOTE_REF_RE.sub("", _ITALIC_RE.sub(r"\1", joined))
    return _STRAY_UNDERSCORE_RE.sub("", joined)


def skip_front_matter(text: str, within: float = 0.25) -> str:
    """The text from the book's first chapter heading ('CHAPTER I', 'BOOK 1', 'ACT I', ...) on.

    A heading counts when one of the two blocks after it is prose of 20+ words, so a contents
    entry does not; only the first quarter of the book is searched. What precedes the heading
    (editors' and translators' prefaces, title pages) is not the exemplar text. A book without such
    a heading is returned whole.
    """
    limit = len(text) * within
    for match in _FIRST_HEADING_RE.finditer(text):
        if match.start() > limit:
            break
        following = raw_paragraphs(text[match.end() : match.end() + 3000])[:2]
        if any(is_running_text(block) and len(block.split()) >= 20 for block in following):
            return text[match.start() :]
    return text


def book_paragraphs(text: str) -> list[str | None]:
    """Clean paragraphs of a stripped book; None marks a break (a heading or dropped block)."""
    result: list[str | None] = []
    for block in raw_paragraphs(_ILLUSTRATION_RE.sub("", text)):
        if is_running_text(block):
            cleaned = clean_block(block)
            result.append(cleaned if cleaned else None)
        else:
            result.append(None)
    return result


def book_passages(raw: bytes, encoding: str) -> list[str]:
    """All candidate passages of one book file."""
    body = skip_front_matter(strip_gutenberg(decode_book(raw, encoding)))
    return chunk_paragraphs(book_paragraphs(body))
