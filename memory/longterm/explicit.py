"""Explicit requests: "remember that …" and "forget that …", read by code in every mode.

The forms are anchored prefixes of a sentence of the user's own words: "remember
that", "please remember", "forget that" (an optional "please"); 记住, 请记住, 忘掉, 忘记,
别记. Offline they are how a turn adds or forgets an item; with a model they are applied
beside its operations. "forget that X" forgets the items whose text holds all of X's
words (several: the gate asks which). Explicit items never supersede each other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memory.archive.terms import tokens
from memory.limits import MAX_IMPORTANCE, MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.evidence import own_words
from memory.longterm.items import MemoryItem, tidy
from memory.longterm.operations import Operation, OwedTurn

REMEMBER_FORM = re.compile(
    r"^(?:please\s+remember(?:\s+that)?|remember\s+that)\b[\s,:]*|^请?记住[\s,:：，]*", re.I
)
FORGET_FORM = re.compile(
    r"^(?:please\s+)?forget\s+that\b[\s,:]*|^请?(?:忘掉|忘记|别记)[\s,:：，]*", re.I
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|(?<=[。！？；])|\n+")
_FORGET_ANYWHERE = re.compile(
    r"(?<![\w'])(?<!don't )(?<!do not )(?<!never )forget\s+that\b"
    r"|(?<!别)(?<!不要)(?:忘掉|忘记)|别记",
    re.I,
)
"""A forget form anywhere in a quote ("so please forget that …"), but never "don't forget
that …" or "别忘记…", which ask to remember."""


@dataclass(frozen=True)
class Request:
    """One explicit request of a text: a forgetting ("forget that …") or a remembering,
    its whole `sentence`, form included (a forgetting's quote), and its `body`, what
    follows the form as said (a remembering's quote and text)."""

    forgets: bool
    sentence: str
    body: str


def requests(text: str) -> list[Request]:
    """The explicit requests of `text`'s own words, in order (at most
    `MAX_NEW_MEMORIES_PER_TURN`)."""
    found: list[Request] = []
    for piece in _SENTENCE.split(own_words(text)):
        sentence = piece.strip().rstrip(".!?;。！？；")
        for form, forgets in ((REMEMBER_FORM, False), (FORGET_FORM, True)):
            matched = form.match(sentence)
            if matched is not None:
                found.append(Request(forgets, sentence, sentence[matched.end() :].strip()))
                break
    return found[:MAX_NEW_MEMORIES_PER_TURN]


def is_explicit(text: str) -> bool:
    """Whether `text` holds an explicit request."""
    return bool(requests(text))


def asks_to_forget(quote: str) -> bool:
    """Whether `quote` holds a documented forget form: only such a quote deletes; any
    other taking-back keeps the item as history."""
    return bool(_FORGET_ANYWHERE.search(quote))


def explicit_operations(turns: Sequence[OwedTurn], items: Sequence[MemoryItem]) -> list[Operation]:
    """The operations the explicit requests of `turns` ask for, given the user's items
    (current and history: a forgetting may name either)."""
    operations: list[Operation] = []
    for n, turn in enumerate(turns, start=1):
        for request in requests(turn.user_text):
            if request.forgets:
                wanted = tokens(request.body)
                operations += [
                    Operation(op="forget", turn=n, quote=request.sentence, id=item.id)
                    for item in items
                    if wanted and wanted <= tokens(item.text)
                ]
            elif request.body:
                operations.append(
                    Operation(
                        op="add",
                        turn=n,
                        quote=request.body,
                        kind="fact",
                        text=tidy(request.body),
                        importance=MAX_IMPORTANCE,
                    )
                )
    return operations


def strip_form(text: str) -> str:
    """`text` without a leading remember form ("Remember that I'm vegan" → "I'm vegan")."""
    return REMEMBER_FORM.sub("", text.strip(), count=1).strip()
