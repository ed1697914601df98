"""Recall: which long-term items a turn's context gets, within its budget.

Always-on items (boundary or style, importance 4-5) come first but take at most
`ALWAYS_ON_MAX` slots, so they never crowd out relevant facts; the rest is ranked by
relevance to the new message × importance × freshness. Relevance is lexical offline,
the store's vector index's (`scores`) with embeddings. Preferences and style shape every
answer, so they need no word in common; a fact or a goal does, unless important (4-5).
When all items fit the budget all are recalled ("What do you know about me?" shares no
word with the answer), the ranked first. A text that discloses a secret is never recalled.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

from memory.archive.terms import tokens
from memory.limits import RECALL_MAX_CHARS, RECALL_MAX_ITEMS
from memory.longterm.items import MemoryItem
from memory.longterm.secrets import find_secret

FRESHNESS_HALF_LIFE_DAYS = 180.0
"""Freshness is 1 for an item said today, halving every this many days."""
DISTINCT = 0.25
"""A fact or goal is recalled for a shared word only if the word is this distinctive
(weight of a word all of several items share: 0.18; of one only one item has: ≥ 0.29)."""
ALWAYS_ELIGIBLE = frozenset({"boundary", "preference", "style"})
IMPORTANT = 4
ALWAYS_ON_MAX = 3
ALWAYS_ON_KINDS = frozenset({"boundary", "style"})


def rank(
    items: Sequence[MemoryItem],
    query: str,
    now: datetime,
    *,
    scores: Mapping[str, float] | None = None,
) -> list[MemoryItem]:
    """Eligible items, best first, as the module says (`scores`: relevance by item id
    from a vector index, 0-1; lexical when None)."""
    query_tokens = tokens(query)
    weights: dict[str, float] = {}
    if scores is None:
        # how distinctive each token is among the session's items (BM25's inverse document
        # frequency): a word every item has ("project") says little about which one is meant
        counts = Counter(token for item in items for token in tokens(item.text))
        weights = {t: math.log(1 + (len(items) - n + 0.5) / (n + 0.5)) for t, n in counts.items()}

    def relevance(item: MemoryItem) -> tuple[float, bool]:
        if scores is not None:
            score = max(scores.get(item.id, 0.0), 0.0)
            return score, score > 0
        # the weights of the shared tokens over the root of the item's length; about it
        # when the most distinctive of them is distinctive enough
        own = tokens(item.text)
        found = [weights.get(token, 0.0) for token in own & query_tokens]
        if not found:
            return 0.0, False
        return sum(found) / math.sqrt(len(own)), max(found) >= DISTINCT

    scored = []
    for item in items:
        related, about = relevance(item)
        ineligible = item.kind not in ALWAYS_ELIGIBLE and not about and item.importance < IMPORTANT
        if ineligible or find_secret(item.text) is not None:
            continue
        age_days = max((now - item.updated_at).total_seconds(), 0.0) / 86_400
        score = (1.0 + related) * item.importance * 0.5 ** (age_days / FRESHNESS_HALF_LIFE_DAYS)
        scored.append((-score, -item.updated_at.timestamp(), item, about))
    scored.sort(key=lambda entry: entry[:2])
    always_on = [entry for entry in scored if _always_on(entry[2])]
    # the most important first, the most relevant among equals
    always_on.sort(key=lambda entry: (-entry[2].importance, entry[0]))
    first = [entry[2] for entry in always_on[:ALWAYS_ON_MAX]]
    chosen = {item.id for item in first}
    # past their share, always-on items compete by relevance like the rest
    rest = [
        item
        for _, _, item, about in scored
        if item.id not in chosen and (about or not _always_on(item))
    ]
    return first + rest


def _always_on(item: MemoryItem) -> bool:
    return item.kind in ALWAYS_ON_KINDS and item.importance >= IMPORTANT


class Recalled(NamedTuple):
    """What a turn reads of the session's items."""

    items: list[MemoryItem]
    """The current items recalled for it."""
    changed: frozenset[str]
    """The messages that said what later statements changed (their archived lines are
    never recalled as current)."""
    held: tuple[MemoryItem, ...]
    """Every item read: those forgotten while the turn runs leave what it writes."""


def recall(
    items: Sequence[MemoryItem],
    query: str,
    now: datetime,
    *,
    scores: Mapping[str, float] | None = None,
) -> list[MemoryItem]:
    """What a turn about `query` recalls: ranked, then the first that fit the budget;
    every item when they all fit."""
    ranked = rank(items, query, now, scores=scores)
    shown = [item for item in items if find_secret(item.text) is None]
    if len(shown) <= RECALL_MAX_ITEMS and sum(len(item.text) for item in shown) <= RECALL_MAX_CHARS:
        chosen = {item.id for item in ranked}
        rest = sorted(
            (item for item in shown if item.id not in chosen),
            key=lambda item: (-item.importance, -item.updated_at.timestamp()),
        )
        return [*ranked, *rest]
    fitted: list[MemoryItem] = []
    for item in ranked:  # one that does not fit is passed over for a shorter one after it
        if len(fitted) == RECALL_MAX_ITEMS:
            break
        if sum(len(kept.text) for kept in [*fitted, item]) <= RECALL_MAX_CHARS:
            fitted.append(item)
    return fitted
