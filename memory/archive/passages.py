"""The passage of a long line that a query matched: its best sentences, in their order.

An assistant's answer runs to hundreds of words, and what a later question needs of it
is rarely its opening ("That's a great question!"): a recalled line that is cut to its
head spends the budget on the part nobody asked about. So a line longer than its share
shows the sentences that hold the most of the query's terms (a rarer term within the
line weighs more: a word every sentence repeats singles none out), then the sentences
right after and before them (a fact is often finished in the next sentence), in the
order they were said, with an ellipsis where sentences were left out. A line that holds
none of the query's terms (a neighbour shown for what it answers) shows its head.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

from memory.archive.terms import line_terms, term_weight
from memory.text import clamp

SENTENCE = re.compile(r"(?:[^.!?。！？\n]|\.(?=\d))+[.!?。！？]*[\"”'’)]*\s*|\n")
"""A sentence: up to its closing mark and quote ("1.5 bar" is one sentence, not two); a
line break ends one too (a list's items)."""
GAP = " … "
"""Where sentences were left out between two shown ones."""


def sentences(text: str) -> list[str]:
    """`text`'s sentences, stripped, empty ones left out."""
    return [s.strip() for s in SENTENCE.findall(text) if s.strip()]


def passage(text: str, terms: Sequence[str], limit: int) -> str:
    """`text` in at most about `limit` characters: whole when it fits; else its best
    sentences for `terms` and those around them (see the module docstring)."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return _passage(text, tuple(terms), limit)


@functools.lru_cache(maxsize=4096)
def _passage(text: str, terms: tuple[str, ...], limit: int) -> str:
    # cached: a recall prices each candidate, and the next turn's mostly again
    parts = sentences(text)
    held = [line_terms(part).intersection(terms) for part in parts]
    lines_with: dict[str, int] = {}
    for found in held:
        for term in found:
            lines_with[term] = lines_with.get(term, 0) + 1

    def score(index: int) -> float:
        return sum(
            term_weight(term) * math.log(1 + len(parts) / lines_with[term]) for term in held[index]
        )

    best = sorted((i for i in range(len(parts)) if held[i]), key=lambda i: (-score(i), i))
    if not best:
        return clamp(text, limit)
    chosen: set[int] = set()
    used = 0

    def take(index: int) -> bool:
        nonlocal used
        if index in chosen or not 0 <= index < len(parts):
            return False
        cost = len(parts[index]) + len(GAP)
        if used + cost > limit:
            return False
        chosen.add(index)
        used += cost
        return True

    for index in best:
        take(index)
    for index in best:  # then what finishes each matched sentence, and what leads to it
        take(index + 1)
        take(index - 1)
    if not chosen:  # even the best sentence is longer than the limit
        return clamp(parts[best[0]], limit)
    return _joined(parts, sorted(chosen))


def _joined(parts: Sequence[str], chosen: Sequence[int]) -> str:
    out = [GAP.strip()] if chosen[0] > 0 else []
    for previous, index in zip((-1, *chosen), chosen, strict=False):
        if out and previous >= 0 and index > previous + 1:
            out.append(GAP.strip())
        out.append(parts[index])
    if chosen[-1] < len(parts) - 1:
        out.append(GAP.strip())
    return " ".join(out)
