"""What a revoking clause is about, for the rules stand-in: which items it names, and
whether it forgets them ("forget that I…", "scratch that", "别记了") or says they changed
("I'm no longer vegetarian", "我不再吃辣了").

A change keeps the old item as history; a forgetting erases it. A model extractor says
which it is itself (`retire` or `forget`, with the item's id); these rules decide the
same from the clause's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Protocol

from memory.longterm.recall import tokens
from memory.longterm.rules import revoked_words, subject_of

_FORGETS = re.compile(
    r"\b(?:forget|forgot|don'?t remember|do not remember|stop remembering|delete|erase|"
    r"remove|scratch that|never mind|disregard)\b|忘记|忘掉|忘了|别记|不要记|删掉|删除|算了",
    re.IGNORECASE,
)


class Said(Protocol):
    """An item as the rules see it (a stored item, or one a model was shown)."""

    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


class Kept(Said, Protocol):
    """A stored item: it also says where and when it was said."""

    @property
    def conversation_id(self) -> str | None: ...

    @property
    def updated_at(self) -> datetime: ...


def forgets(clause: str) -> bool:
    """Whether a revoking clause asks to forget (else it says something changed)."""
    return bool(_FORGETS.search(clause))


def named_by(clause: str, items: Iterable[Said]) -> list[str]:
    """Ids of the items a revocation clause ("I no longer want Chinese") is about: those on
    its subject ("I'm no longer vegetarian": the diet), else those sharing the most of its
    words. A forgetting, which cannot be undone, goes by the words first: "forget that I
    lived in Lisbon" is about Lisbon, not about where I live now."""
    candidates = list(items)
    on_subject, in_words = _on_subject(clause, candidates), _sharing_words(clause, candidates)
    if forgets(clause):
        return in_words or on_subject
    return on_subject or in_words


def _on_subject(clause: str, items: Sequence[Said]) -> list[str]:
    subject = subject_of(clause)
    if subject is None:
        return []
    return [item.id for item in items if subject_of(item.text) == subject]


def _sharing_words(clause: str, items: Sequence[Said]) -> list[str]:
    """The items sharing the most of the clause's words, when they share two, or a third
    of them."""
    words = revoked_words(clause)
    if not words:
        return []
    overlaps = [(len(words & tokens(item.text)), item.id) for item in items]
    best = max((count for count, _ in overlaps), default=0)
    # one shared word is enough when it is a third of what the clause is about (a short
    # Chinese clause, "我不再吃辣了", is about a few character pairs)
    if best == 0 or (best < 2 and best * 3 < len(words)):
        return []
    return [item_id for count, item_id in overlaps if count == best]


def newest_said_in(items: Sequence[Kept], conversation_id: str | None) -> list[str]:
    """The newest item said in the conversation (what a later bare "scratch that" is
    about), if any."""
    here = [item for item in items if conversation_id and item.conversation_id == conversation_id]
    return [max(here, key=lambda item: item.updated_at).id] if here else []
