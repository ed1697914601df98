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
from dataclasses import dataclass
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


@dataclass(frozen=True)
class _Reading:
    """What a part of a pattern tells about its matches: `exact`, every string it can
    match (when they are few), or else `needs`, sets each of which a match meets."""

    exact: frozenset[str] | None = None
    needs: tuple[Need, ...] = ()


_NOTHING_KNOWN = _Reading()
_EMPTY = _Reading(exact=frozenset({""}))


def _minimal(strings: frozenset[str]) -> Need:
    """The same requirement without a string that contains another one of the set."""
    return frozenset(s for s in strings if not any(t != s and t in s for t in strings))


def _as_needs(exact: frozenset[str]) -> tuple[Need, ...]:
    return () if "" in exact else (_minimal(exact),)


def _best(reading: _Reading) -> Need | None:
    """The single requirement of `reading` that rejects most: longest shortest string."""
    candidates = _as_needs(reading.exact) if reading.exact is not None else reading.needs
    if not candidates:
        return None
    return max(candidates, key=lambda need: (min(map(len, need)), -len(need)))


def _read_sequence(items: Any, fold: bool) -> _Reading:
    """A concatenation: exact strings multiply out while few, then become a requirement."""
    product: frozenset[str] | None = frozenset({""})
    run = frozenset({""})
    needs: list[Need] = []
    for op, av in items:
        part = _read_item(op, av, fold)
        if part.exact is not None and len(run) * len(part.exact) <= MAX_EXACT:
            run = frozenset(a + b for a in run for b in part.exact)
            continue
        product = None
        needs.extend(_as_needs(run))
        run = part.exact if part.exact is not None else frozenset({""})
        needs.extend(part.needs)
    if product is not None:
        return _Reading(exact=run)
    needs.extend(_as_needs(run))
    return _Reading(needs=tuple(needs))


def _read_item(op: Any, av: Any, fold: bool) -> _Reading:
    if op is _c.LITERAL:
        char = chr(av)
        if fold and not _foldable(char):
            return _NOTHING_KNOWN
        return _Reading(exact=frozenset({folded(char) if fold else char}))
    if op is _c.IN:
        if any(kind is not _c.LITERAL for kind, _ in av) or len(av) > MAX_EXACT:
            return _NOTHING_KNOWN  # ranges, categories, negation
        chars = [chr(code) for _, code in av]
        if fold and not all(map(_foldable, chars)):
            return _NOTHING_KNOWN
        return _Reading(exact=frozenset(folded(c) if fold else c for c in chars))
    if op is _c.BRANCH:
        parts = [_read_sequence(alternative, fold) for alternative in av[1]]
        exact = [part.exact for part in parts]
        if all(e is not None for e in exact):
            union = frozenset().union(*(e for e in exact if e is not None))
            if len(union) <= MAX_EXACT:
                return _Reading(exact=union)
        bests = [_best(part) for part in parts]
        if any(best is None for best in bests):
            return _NOTHING_KNOWN  # an alternative that requires nothing
        return _Reading(needs=(_minimal(frozenset().union(*(b for b in bests if b))),))
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        low, high, sub = av
        part = _read_sequence(sub, fold)
        if low == high == 1:
            return part
        if low == 0 and high == 1 and part.exact is not None and len(part.exact) < MAX_EXACT:
            return _Reading(exact=part.exact | {""})
        if low >= 1:  # what one repetition requires
            return _Reading(needs=_as_needs(part.exact) if part.exact is not None else part.needs)
        return _NOTHING_KNOWN
    if op is _c.SUBPATTERN:
        _, add_flags, del_flags, sub = av
        if add_flags or del_flags:
            return _NOTHING_KNOWN  # scoped flags: its case rules are not the pattern's
        return _read_sequence(sub, fold)
    if op is _c.ATOMIC_GROUP:
        return _read_sequence(av, fold)
    if op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
        return _EMPTY  # zero width: the text around it is contiguous
    return _NOTHING_KNOWN  # any character, categories, back references, conditionals


def literal_needs(pattern: re.Pattern[str]) -> tuple[Need, ...]:
    """The sets of strings of which a text matched by `pattern` holds a member each
    (folded when the pattern ignores case)."""
    fold = bool(pattern.flags & re.IGNORECASE)
    reading = _read_sequence(_parser.parse(pattern.pattern, pattern.flags), fold)
    needs = _as_needs(reading.exact) if reading.exact is not None else reading.needs
    return tuple(need for need in dict.fromkeys(needs) if min(map(len, need)) >= MIN_NEED)


def engine_skips(pattern: re.Pattern[str]) -> bool:
    """Whether `pattern` starts with a case-sensitive literal, which `re` finds with a
    fast string search before it tries the rest (a gate would only add work)."""
    if pattern.flags & re.IGNORECASE:
        return False
    items = _parser.parse(pattern.pattern, pattern.flags)
    while items:
        op, av = items[0]
        if op is _c.LITERAL:
            return True
        if op is not _c.SUBPATTERN or av[1] or av[2]:
            return False
        items = av[3]
    return False


class Prefiltered:
    """`pattern`, searched only in texts that hold the literals it needs.

    Args:
        pattern: a compiled `str` pattern.
    """

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.fold = bool(pattern.flags & re.IGNORECASE)
        # the engine itself skips to a case-sensitive literal the pattern starts with
        self.needs = () if engine_skips(pattern) else literal_needs(pattern)

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
        """`pattern.search(text)`."""
        return self.pattern.search(text) if self.admits(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        """`pattern.finditer(text)`."""
        return self.pattern.finditer(text) if self.admits(text) else iter(())


def prefiltered(pattern: str, flags: int = 0) -> Prefiltered:
    """`re.compile(pattern, flags)` behind its gate."""
    return Prefiltered(re.compile(pattern, flags))
