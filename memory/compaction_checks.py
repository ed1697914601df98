"""A compaction's proposed items, and what they must stand on, checked in code as extraction's is.

Each new pin or open question must say something and restate its quote, a folded
message's own words; a retirement or resolution must quote words about what it removes,
so an old pin stays unless a message revokes it. A new summary must keep every name,
number and date in force (found by its form, in no retired pin). Every refusal is
counted by its reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from memory.archive.terms import tokens
from memory.limits import MAX_SUMMARY_CHARS
from memory.longterm.evidence import Reason, grounded, quote_refusal
from memory.longterm.secrets import find_secret
from memory.schema import ChatThreadMessage

LOST_VALUE = "summary_lost_value"
"""The refusal counted when a summary leaves out a name, number or date in force."""
MIN_WORDS = 2
"""A pin or question states something: two words at least (`["always", "never"]` says nothing)."""

FULL = 0.9
"""The share of its limit from which a summary is full: what it drops, it drops for space
(a fact is a line, and the line that would keep a value may not fit)."""

_TOKEN = re.compile(r"[0-9A-Za-z\u00c0-\u024f_$€£¥%#@+.,/:\-]+")
_EDGES = ".,:;!?/-+"
_LIST_MARKER = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+", re.MULTILINE)
_IDENTIFIER = re.compile(r"[a-z][A-Z]|[A-Z].*[A-Z]|_|\w[./@:]\w")
T = TypeVar("T")


class Strict(BaseModel):
    """A document the compaction model writes or reads: no field beyond the schema's."""

    model_config = ConfigDict(extra="forbid")


class QuotedItem(Strict):
    """A new pinned decision or open question, with the words that state it."""

    text: str = Field(description="The decision or question, one short sentence.")
    quote: str = Field(description="The words of a message to fold that state it, copied exactly.")


class Removal(Strict):
    """An old pin revoked, or an old open question answered, with the words that do it."""

    number: int = Field(description="The old item's number.")
    quote: str = Field(
        description="The words of a message to fold that revoke or answer it, copied exactly."
    )


def values(text: str) -> frozenset[str]:
    """The names, numbers and dates of `text`, found by their form: a token with a
    digit ("42", "2026-03-01", "v2", "$48"), or an identifier ("PostgreSQL", "API",
    "user_id", "app.py"); case-folded. A list's own numbering is not a value."""
    found = set()
    for raw in _TOKEN.findall(_LIST_MARKER.sub(" ", text)):
        token = raw.strip(_EDGES)
        if any(c.isdigit() for c in token) or (len(token) > 1 and _IDENTIFIER.search(token)):
            found.add(token.casefold())
    return frozenset(found)


def lost_values(
    old_summary: str, old_pins: Sequence[str], summary: str, pins: Sequence[str]
) -> list[str]:
    """The values in force (`values` of the old summary and pins, none of an old pin
    that left: retired, or the oldest past the limit) that neither the new `summary`
    nor the `pins` holds, sorted. A summary at `FULL` of its limit dropped them for
    space (the bound comes first): nothing is lost then."""
    staying = set(pins)
    gone = frozenset().union(*(values(pin) for pin in old_pins if pin not in staying))
    in_force = values("\n".join([old_summary, *old_pins])) - gone
    lost = sorted(in_force - values("\n".join([summary, *pins])))
    return lost if len(summary) < FULL * MAX_SUMMARY_CHARS else []


def said_in(quote: str, messages: Sequence[ChatThreadMessage]) -> Reason | None:
    """Why `quote` is no speaker's own words in `messages` (None when it is): quoted or
    pasted text is named as such when that is where the words are."""
    reasons = [quote_refusal(quote, message.text) for message in messages]
    if not reasons or None in reasons:
        return None if reasons else Reason.NOT_SAID
    return Reason.PASTED if Reason.PASTED in reasons else reasons[0]


def stated_refusal(item: QuotedItem, messages: Sequence[ChatThreadMessage]) -> Reason | None:
    """Why a new pin or open question is refused (None: it stands on its quote)."""
    if (reason := said_in(item.quote, messages)) is not None:
        return reason
    found = tokens(item.text)
    if not found or max(len(item.text.split()), len(found)) < MIN_WORDS:  # CJK: no spaces
        return Reason.EMPTY
    if not grounded(item.text, item.quote, ""):
        return Reason.NOT_GROUNDED
    if find_secret(item.text) is not None:
        return Reason.SECRET
    return None


def removal_refusal(
    item: Removal, old: Sequence[str], messages: Sequence[ChatThreadMessage]
) -> Reason | None:
    """Why a retirement or resolution is refused (None: a message revokes the item)."""
    if not 1 <= item.number <= len(old):
        return Reason.UNKNOWN_ITEM
    if (reason := said_in(item.quote, messages)) is not None:
        return reason
    return None if tokens(item.quote) & tokens(old[item.number - 1]) else Reason.NOT_ABOUT_ITEM


@dataclass
class Checked:
    """A compaction's proposals refused, by reason, and the values in force its summary lost."""

    refused: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)

    def _passed(self, items: Sequence[T], refusal: Callable[[T], Reason | None]) -> list[T]:
        """The `items` with no refusal; each refusal counted by its reason."""
        reasons = [refusal(item) for item in items]
        self.refused.update(reason.value for reason in reasons if reason is not None)
        return [item for item, reason in zip(items, reasons, strict=True) if reason is None]

    def stated(
        self, items: Sequence[QuotedItem], messages: Sequence[ChatThreadMessage]
    ) -> list[str]:
        """The texts of the `items` that stand on their quotes."""
        return [i.text for i in self._passed(items, lambda i: stated_refusal(i, messages))]

    def removed(
        self, items: Sequence[Removal], old: Sequence[str], messages: Sequence[ChatThreadMessage]
    ) -> list[int]:
        """The numbers of the old items a message revokes."""
        return [i.number for i in self._passed(items, lambda i: removal_refusal(i, old, messages))]
