"""`Prefiltered`: a regular expression behind a gate of literal strings that every match
of it contains, so that a text holding none of them is never searched.

The secret detector runs some sixty patterns over every archived text, and `re` tries a
pattern with no literal prefix at every position; a substring test is a fast scan in C.
The gate is read off the pattern's parse tree (the stdlib parser `re` compiles from), as
RE2's prefilter does: a part either matches one of a few exact strings, or requires a
member of each of some sets of strings. A construct the reading does not know requires
nothing, so a gate may let through texts the pattern does not match, never the
reverse. A case-insensitive pattern is gated on the `folded` text.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterator
from typing import Any

# the stdlib's own parser has no type stubs; it is the tree `re` compiles, so the gate
# reads exactly what the engine runs
_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

MAX_EXACT = 32
"""Strings an exact set holds at most; a larger one is kept as a requirement."""
MIN_NEED = 2
"""A requirement whose shortest string is shorter rejects almost no text: it is dropped."""

_FOLD = str.maketrans({"İ": "i", "ı": "i", "ſ": "s", "K": "k"})
"""The non-ASCII characters `re.IGNORECASE` matches to ASCII letters (the `re`
documentation names these four): `str.lower` leaves "ı" and "ſ" as they are and turns
"İ" into two characters."""

Need = frozenset[str]
"""At least one of these strings occurs in a text the pattern matches."""


@functools.lru_cache(maxsize=8)
def folded(text: str) -> str:
    """`text` lower-cased with the four letters above mapped to ASCII (cached: every
    case-insensitive gate of one scan reads the same text)."""
    return text.translate(_FOLD).lower()


def _foldable(char: str) -> bool:
    """Whether a literal of a case-insensitive pattern can be looked for in the folded
    text: ASCII, or a character without case (Chinese, punctuation)."""
    return char.isascii() or char.lower() == char == char.upper()


Reading = frozenset[str] | tuple[Need, ...]
"""What a part of a pattern tells about its matches: every string it can match (a
frozenset, when they are few), or else sets (a tuple), each of which a match meets."""
_NOTHING_KNOWN: Reading = ()
_EMPTY: frozenset[str] = frozenset({""})


def _minimal(strings: frozenset[str]) -> Need:
    """The same requirement without a string that contains another one of the set."""
    return frozenset(s for s in strings if not any(t != s and t in s for t in strings))


def _needs(reading: Reading) -> tuple[Need, ...]:
    if isinstance(reading, tuple):
        return reading
    return () if "" in reading else (_minimal(reading),)


def _best(reading: Reading) -> Need | None:
    """The single requirement of `reading` that rejects most: longest shortest string."""
    return max(_needs(reading), key=lambda need: (min(map(len, need)), -len(need)), default=None)


def _read_sequence(items: Any, fold: bool) -> Reading:
    """A concatenation: exact strings multiply out while few, then become a requirement."""
    run = _EMPTY
    needs: list[Need] = []
    exact = True
    for op, av in items:
        part = _read_item(op, av, fold)
        if isinstance(part, frozenset) and len(run) * len(part) <= MAX_EXACT:
            run = frozenset(a + b for a in run for b in part)
            continue
        exact = False
        needs += _needs(run)
        run, more = (part, ()) if isinstance(part, frozenset) else (_EMPTY, part)
        needs += more
    return run if exact else (*needs, *_needs(run))


def _read_item(op: Any, av: Any, fold: bool) -> Reading:
    if op is _c.LITERAL or op is _c.IN:
        members = av if op is _c.IN else [(op, av)]
        if any(kind is not _c.LITERAL for kind, _ in members) or len(members) > MAX_EXACT:
            return _NOTHING_KNOWN  # ranges, categories, negation
        chars = [chr(code) for _, code in members]
        if fold and not all(map(_foldable, chars)):
            return _NOTHING_KNOWN
        return frozenset(folded(c) if fold else c for c in chars)
    if op is _c.BRANCH:
        parts = [_read_sequence(alternative, fold) for alternative in av[1]]
        exact = [part for part in parts if isinstance(part, frozenset)]
        if len(exact) == len(parts):
            union = frozenset[str]().union(*exact)
            if len(union) <= MAX_EXACT:
                return union
        bests = [_best(part) for part in parts]
        if None in bests:
            return _NOTHING_KNOWN  # an alternative that requires nothing
        return (_minimal(frozenset().union(*(b for b in bests if b))),)
    if op is _c.MAX_REPEAT or op is _c.MIN_REPEAT:
        low, high, sub = av
        part = _read_sequence(sub, fold)
        if low == 0 and high == 1 and isinstance(part, frozenset) and len(part) < MAX_EXACT:
            return part | _EMPTY
        return _needs(part) if low >= 1 else _NOTHING_KNOWN  # what one repetition requires
    if op is _c.SUBPATTERN:
        # scoped flags: its case rules are not the pattern's
        return _NOTHING_KNOWN if av[1] or av[2] else _read_sequence(av[3], fold)
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return _EMPTY  # zero width: the text around it is contiguous
    return _NOTHING_KNOWN  # any character, categories, back references, conditionals


def literal_needs(pattern: re.Pattern[str]) -> tuple[Need, ...]:
    """The sets of strings of which a text matched by `pattern` holds a member each
    (folded when the pattern ignores case)."""
    fold = bool(pattern.flags & re.IGNORECASE)
    needs = _needs(_read_sequence(_parser.parse(pattern.pattern, pattern.flags), fold))
    return tuple(need for need in dict.fromkeys(needs) if min(map(len, need)) >= MIN_NEED)


class Prefiltered:
    """A compiled `str` pattern, searched only in texts that hold the literals it needs."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.fold = bool(pattern.flags & re.IGNORECASE)
        # `re` finds a case-sensitive literal the pattern starts with (in groups too) with
        # a fast string search before it tries the rest: a gate would only add work
        items = () if self.fold else _parser.parse(pattern.pattern, pattern.flags)
        while items and items[0][0] is _c.SUBPATTERN and not any(items[0][1][1:3]):
            items = items[0][1][3]  # a group without scoped flags
        self.needs = () if items and items[0][0] is _c.LITERAL else literal_needs(pattern)

    def admits(self, text: str) -> bool:
        """Whether `text` may match: False only when it cannot."""
        if not self.needs:
            return True
        haystack = folded(text) if self.fold else text
        for need in self.needs:  # plain loops: this runs some twenty times per text
            for string in need:
                if string in haystack:
                    break
            else:
                return False
        return True

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self.admits(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self.admits(text) else iter(())
