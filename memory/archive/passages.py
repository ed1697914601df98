"""The passage of a long line that a query matched: its best sentences, in their order.

An assistant's answer runs to hundreds of words, and what a later question needs of it
is rarely its opening ("That's a great question!"): a recalled line that is cut to its
head spends the budget on the part nobody asked about. So a line longer than its share
shows its run of consecutive sentences, within the share, that holds the most of the
query's terms (a rarer term within the line weighs more: a word every sentence repeats
singles none out), with an ellipsis where sentences were left out. A run rather than
the best sentences strewn over the line: a fact is often stated over a few sentences,
and on RealMem's dev personas a run kept more of the evidence. A line that holds none
of the query's terms (a neighbour shown for what it answers) shows its head.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Sequence

from memory.archive.terms import line_terms, term_weight
from memory.text import clamp

SENTENCE = re.compile(r"(?:[^.!?。！？\n]|\.(?=\d))+[.!?。！？]*[\"”'’)]*\s*|\n")
"""A sentence: up to its closing mark and quote ("1.5 bar" is one sentence, not two); a
line break ends one too (a list's items)."""
GAP = "…"
"""Where sentences were left out, before or after the passage."""


def sentences(text: str) -> list[str]:
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
    lines_with = Counter(term for found in held for term in found)
    weights = [
        sum(term_weight(term) * math.log(1 + len(parts) / lines_with[term]) for term in found)
        for found in held
    ]
    best, best_score = (0, 0), 0.0
    for start in range(len(parts)):
        end, used, score = start, 0, 0.0
        while end < len(parts) and used + len(parts[end]) + 1 <= limit:
            used += len(parts[end]) + 1
            score += weights[end]
            end += 1
        if score > best_score:
            best, best_score = (start, end), score
    start, end = best
    if best_score == 0.0:  # nothing matched, or the best sentence alone is too long
        matched = max(range(len(parts)), key=lambda i: (weights[i], -i))
        return clamp(parts[matched] if weights[matched] else text, limit)
    return " ".join(
        ([GAP] if start > 0 else []) + parts[start:end] + ([GAP] if end < len(parts) else [])
    )
