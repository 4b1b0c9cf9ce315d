"""Stage 4's match engine: gates (`Needles`), anchors (`Anchor`) and `Rule`, which runs a pattern
only on windows around its anchor's hits and finds exactly the matches of a whole-text scan."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Set
from dataclasses import dataclass
from re import _constants, _parser  # Python's own regex parser, to size match windows
from typing import Any

Needle = str | re.Pattern[str]


class Needles:
    """A gate: groups of needles, of which every group must have one in the text.

    Build it with `needles`. Each group is kept as its single characters, its longer substrings
    and, rarely, compiled regexes. Given the text's set of characters (`characters_of`, built
    once per text for all rules), single characters and the characters of substrings are set
    tests; without it, each character is a memchr. A substring is searched for only when all
    its characters occur: in a text of one repeated character a substring search is slow.
    """

    def __init__(self, groups: Iterable[Iterable[Needle]] = ()):
        self.groups = tuple(
            (
                frozenset(n for n in group if isinstance(n, str) and len(n) == 1),
                tuple((n, frozenset(n)) for n in group if isinstance(n, str) and len(n) > 1),
                tuple(n for n in group if isinstance(n, re.Pattern)),
            )
            for group in (tuple(group) for group in groups)
        )

    def __repr__(self) -> str:
        return f"Needles({self.groups!r})"

    def opens(self, text: str, chars: Set[str] | None = None) -> bool:
        """Whether text holds a needle of every group (`chars`: the text's characters, if known)."""
        for singles, words, patterns in self.groups:
            if chars is not None:
                if not singles.isdisjoint(chars):
                    continue
            elif any(char in text for char in singles):
                continue
            if words and any(
                (letters <= chars if chars is not None else all(char in text for char in letters))
                and word in text
                for word, letters in words
            ):
                continue
            if patterns and any(pattern.search(text) for pattern in patterns):
                continue
            return False
        return True


SHORT_TEXT = 100_000  # longer texts skip the character set: building it costs more than it saves


def characters_of(text: str) -> set[str] | None:
    """The set of characters of a text up to SHORT_TEXT long, for the gates; None beyond."""
    return set(text) if len(text) <= SHORT_TEXT else None


def needles(*groups: str | tuple[Needle, ...]) -> Needles:
    """A gate (see `Needles`): a group given as a str is its characters ("<>" means "<" or ">"); a
    tuple lists substrings (or compiled regexes that must be found). `needles("=", DIGITS)`
    reads "an equals sign and a digit"."""
    return Needles(tuple(group) if isinstance(group, str) else group for group in groups)


NO_NEEDLES = Needles()


def gate_opens(gate: Needles, text: str) -> bool:
    """Whether text holds a needle of every group of the gate: substring tests, far cheaper than
    a regex scan."""
    return gate.opens(text, characters_of(text))


@dataclass(frozen=True)
class Anchor:
    """A fast necessary condition for a rule: regexes of which one hits inside, or one
    character before, every match the rule accepts.

    Each regex starts with a literal (or a small character class), so the regex engine jumps
    from candidate to candidate, and rejects the usual near misses itself with cheap
    look-arounds, so a text full of near misses costs one fast scan per regex. Several regexes
    are one anchor whose hits are their union: one literal each scans faster than one regex
    with an alternation at its start. `needs` gates the anchor; a rule uses its first anchor
    whose gate opens. `back` bounds how far before the hit a match can start (None: as far as
    the rule's longest match).
    """

    patterns: tuple[re.Pattern[str], ...]
    needs: Needles = NO_NEEDLES
    back: int | None = None

    def hits(self, text: str) -> Callable[[int], int | None]:
        """A function from a position to the first hit at or after it (None: no more hits).

        Positions asked for never decrease, so each regex searches again only once the
        position passes its last hit.
        """
        upcoming: list[int | None] = [-1] * len(self.patterns)  # -1: not searched yet

        def next_hit(position: int) -> int | None:
            best = None
            for index, pattern in enumerate(self.patterns):
                hit = upcoming[index]
                if hit is not None and hit < position:
                    found = pattern.search(text, position)
                    hit = upcoming[index] = None if found is None else found.start()
                if hit is not None and (best is None or hit < best):
                    best = hit
            return best

        return next_hit


def anchor(*patterns: str, needs: Needles = NO_NEEDLES, back: int | None = None) -> Anchor:
    return Anchor(tuple(re.compile(pattern) for pattern in patterns), needs, back)


def _reach(pattern: re.Pattern[str]) -> int:
    """Characters a match attempt can read from where it starts: longest match + look-ahead.

    From Python's own regex parser. A window that ends `reach` characters after a start gives
    the same answer at that start as the whole text. At least one character is read past the
    match, for `\\b` and a failed attempt to match more.
    """
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    reach = parsed.getwidth()[1] + max(1, _look_around(parsed))
    if reach >= _constants.MAXREPEAT:
        raise ValueError(f"unbounded pattern {pattern.pattern!r}: a window cannot hold its match")
    return reach


def _look_around(items: Iterable[tuple[Any, Any]]) -> int:
    """Longest look-around inside a parsed pattern, nested ones added to their container."""
    widest = 0
    for op, arg in items:
        if op in (_constants.ASSERT, _constants.ASSERT_NOT):
            widest = max(widest, arg[1].getwidth()[1] + _look_around(arg[1]))
        elif op is _constants.BRANCH:
            widest = max([widest, *(_look_around(branch) for branch in arg[1])])
        elif op is _constants.SUBPATTERN:
            widest = max(widest, _look_around(arg[-1]))
        elif op in (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT):
            widest = max(widest, _look_around(arg[2]))
        elif op is _constants.ATOMIC_GROUP:
            widest = max(widest, _look_around(arg))
    return widest


# After this many anchor hits without a match, a rule scans the rest of the text with its
# pattern directly (linear, as before anchors), so a text built to defeat an anchor costs at
# most this many windows more than the plain scan.
MAX_MISSED_HITS = 1000


@dataclass(frozen=True)
class Rule:
    """One pattern of the filter: its family, a name, an example it must match, and its gates.

    `needs` (see `needles`) must open for the rule to run at all. `pattern` defines what
    matches; `check`, when set, must accept the matched text. With `anchors`, the pattern is
    only run on short windows around the hits of the first anchor whose gate opens (see
    `Anchor`); the matches are the same as a scan of the whole text (tested), found faster.
    """

    family: str
    name: str
    example: str
    needs: Needles
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    anchors: tuple[Anchor, ...] = ()
    reach: int = 0

    def could_match(self, text: str, chars: Set[str] | None = None) -> bool:
        """False when a needle is missing, so the pattern cannot match (`chars`: see `Needles`)."""
        return self._anchor_for(text, chars) is not False

    def _anchor_for(self, text: str, chars: Set[str] | None = None) -> Anchor | None | bool:
        """The anchor to scan with; None to scan the whole text; False when nothing can match."""
        if not self.needs.opens(text, chars):
            return False
        if not self.anchors:
            return None
        return next((a for a in self.anchors if a.needs.opens(text, chars)), False)

    def matches(self, text: str, chars: Set[str] | None = None) -> Iterator[re.Match[str]]:
        """Every accepted match object of this rule in text, in text order (as `finditer`).

        `chars`, the text's set of characters (`characters_of`), makes the gates faster when
        several rules look at the same text.
        """
        chosen = self._anchor_for(text, chars)
        if chosen is False:
            return
        found = self.pattern.finditer(text) if chosen is None else self._around_hits(text, chosen)
        for match in found:
            if self.check is None or self.check(match.group(0)):
                yield match

    def finditer(self, text: str, chars: Set[str] | None = None) -> Iterator[str]:
        """Every accepted match of this rule in text, as strings."""
        for found in self.matches(text, chars):
            yield found.group(0)

    def _around_hits(self, text: str, anchor: Anchor) -> Iterator[re.Match[str]]:
        """The pattern's matches, looked for only next to the anchor's hits.

        Every match the rule accepts starts in [hit - back, hit + 1] for some hit, so the
        leftmost match at or after `pos` is the leftmost match starting in that range for the
        first hit at or after `pos - 1`, or there is none before the next hit. The start of the
        text counts as a hit just before it (an anchor may need the character before a match,
        as the formula anchor does). Matches do not overlap, as with `finditer`.
        """
        back = self.reach if anchor.back is None else anchor.back
        next_hit = anchor.hits(text)
        pos, hit, missed = 0, -1, 0
        while True:
            found = self._first_match_near(text, max(pos, hit - back), hit + 1)
            if found is None:
                pos = hit + 2
                missed += 1
                if missed > MAX_MISSED_HITS:
                    yield from self.pattern.finditer(text, pos)
                    return
            else:
                yield found
                pos = found.end()
            upcoming = next_hit(pos - 1)
            if upcoming is None:
                return
            hit = upcoming

    def _first_match_near(self, text: str, low: int, high: int) -> re.Match[str] | None:
        """The leftmost match starting in [low, high], read through a window of `reach`."""
        end = high + self.reach
        if high - low < 3:
            for start in range(low, high + 1):
                found = self.pattern.match(text, start, end)
                if found is not None:
                    return found
            return None
        found = self.pattern.search(text, low, end)
        return found if found is not None and found.start() <= high else None
