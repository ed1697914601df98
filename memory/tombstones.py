"""Tombstone marks: what a forgetting leaves behind so that no later import brings the
forgotten words back, without keeping the words.

A forgotten text leaves keyed hashes (HMAC under the server secret) of its normalised
text, its terms and its names: without the secret they tell nothing of the words. An
import forgets each sentence that repeats a mark by the forgetting's own rule (the
whole text, most of its terms, or a name), so an export made before the forgetting
cannot restore it. The marks are the server's: an export never carries them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from memory.archive.forgetting import FORGET_SHARE, forget_sentences_where, names_in
from memory.archive.terms import line_terms, query_terms
from memory.longterm.items import normalise

Keyed = Callable[[str], str]
"""A keyed hash of a string (`ThreadIds.mark`)."""
_MAX_TERMS = 16
"""Terms a mark keeps, in the text's order: enough to recognise it, small enough for the
registry every turn reads."""
_TEXT, _TERM = "text:", "term:"


class ForgottenMark(BaseModel):
    """A forgotten text, as keyed hashes: of its normalised text, its terms, its names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: StrictStr = Field(max_length=128)
    terms: list[StrictStr] = Field(default_factory=list, max_length=4 * _MAX_TERMS)
    names: list[StrictStr] = Field(default_factory=list, max_length=4 * _MAX_TERMS)


def marks_of(texts: Iterable[str], keyed: Keyed) -> list[ForgottenMark]:
    """The marks forgetting `texts` leaves (a text with no words leaves none)."""
    return [
        ForgottenMark(
            text=keyed(_TEXT + words),
            terms=[keyed(_TERM + t) for t in query_terms(text)[:_MAX_TERMS]],
            names=sorted(keyed(_TERM + t) for t in names_in(text))[:_MAX_TERMS],
        )
        for text in texts
        if (words := normalise(text))
    ]


class Forgotten:
    """The texts a session forgot, as its `marks` (made with `keyed`) recognise them in
    other texts."""

    def __init__(self, marks: Sequence[ForgottenMark], keyed: Keyed) -> None:
        self.marks = [m for m in marks if m.terms or m.names]
        self.texts = {m.text for m in marks}
        self.keyed = keyed
        # a document repeats its words: one hash each
        self._term = functools.cache(lambda term: keyed(_TERM + term))

    def repeats(self, sentence: str) -> bool:
        """Whether `sentence` says a forgotten text again: the whole of it, most of its
        terms, or a name it contains."""
        words = normalise(sentence)
        if words and self.keyed(_TEXT + words) in self.texts:
            return True
        own = {self._term(term) for term in line_terms(sentence)}
        return any(
            own.intersection(m.names)
            or (m.terms and len(own.intersection(m.terms)) >= FORGET_SHARE * len(m.terms))
            for m in self.marks
        )

    def __call__(self, text: str) -> str:
        """`text` with each sentence that repeats a forgotten text read `[forgotten]`."""
        if not self.texts:
            return text
        return forget_sentences_where(text, self.repeats)
