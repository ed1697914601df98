"""One reading of a user's message per turn: what it discloses, how it is kept, and
whether an extraction is owed for it.

A turn reads its user's text once (`read`) and hands the reading on: the archive and
the conversation's title keep its secret-redacted form, and `finalize` owes a long-term
extraction by structure and cost alone, never by what the text seems to mean: an empty
or trivial text (a word of a letter or two, punctuation), a slash command or text the
user only pasted or quoted owes none; an explicit request ("remember that …") is noted,
as offline it is all that is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.archive.lines import REDACTED
from memory.longterm.evidence import own_words
from memory.longterm.explicit import is_explicit
from memory.longterm.secrets import find_secret

TRIVIAL_CHARS = 2
"""A one-word text this short ("ok", "k", "嗯") is not worth an extraction call."""


_SENTENCE_ENDS = re.compile(r"(\n|(?<=[.!?;])\s+|(?<=[。！？；])\s*)")
"""Where a line or sentence ends (captured, so that what is kept keeps its layout): a
Latin stop only before a space, never inside a value ("P@ssw0rd!77")."""


def redact_secrets(text: str) -> str:
    """`text` as it is kept (the archive, a title, what an extractor reads): each
    sentence that discloses a secret replaced by `[redacted]`, or the whole text when
    the secret spans sentences ("Remember my bank password. It's hunter2!")."""
    if find_secret(text) is None:
        return text
    pieces = _SENTENCE_ENDS.split(text)
    for i in range(0, len(pieces), 2):  # the sentences; the odd places are their ends
        if find_secret(pieces[i]) is not None:
            pieces[i] = REDACTED
    kept = "".join(pieces)
    if REDACTED not in pieces or find_secret(kept) is not None:
        return REDACTED
    return kept


def says_something(text: str) -> bool:
    """Whether `text` is worth an extraction call: some words of the user's own, more
    than a trivial one (see the module docstring)."""
    own = own_words(text.replace(REDACTED, " ")).strip()
    if not any(char.isalnum() for char in own):
        return False
    return len(own.split()) > 1 or len(own.strip(".,!?;:。！？，…~ ")) > TRIVIAL_CHARS


@dataclass(frozen=True)
class UserText:
    """A turn's reading of its user's text: the text as the archive and a title keep it
    (secret lines redacted), whether a model's extraction is owed for it, whether it holds
    an explicit request ("remember that …")."""

    kept: str = ""
    says_something: bool = False
    explicit: bool = False


def read(text: str) -> UserText:
    """The one reading of a user's text a turn makes (one secret scan: `find_secret` is cached)."""
    kept = redact_secrets(text)
    # a secret beside something lasting ("I'm allergic to peanuts. My wifi password
    # is …") leaves the rest to extract: an extractor reads the kept text
    return UserText(kept=kept, says_something=says_something(kept), explicit=is_explicit(kept))
