"""One reading of a user's message per turn: what it discloses, how it is kept, and
whether it may hold something to remember.

A turn reads its user's text once (`read`) and hands the reading on: the archive and
the conversation's title keep its secret-redacted form, and `finalize` owes a long-term
extraction only for a text that may hold something (`says_something`). The skip filter
is judged by what it must never skip: it skips only what plainly holds nothing (an
empty text, a slash command, pasted or quoted text alone, greetings, thanks and
acknowledgements, questions that say nothing about the user); whatever else the user
says reaches the extractor, which decides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.archive.lines import REDACTED
from memory.longterm.analysis import Clause, ClauseType, Subject
from memory.longterm.rules import analysed
from memory.longterm.secrets import SecretKind, find_secret

_GREETING = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|howdy|good (?:morning|afternoon|evening)|thanks?|thank you)"
    r"\b(?:\s+\w+){0,2}|(?:你好|您好|嗨|谢谢|早上好|晚上好)\w{0,3})[\s!.,，。！~]*$",
    re.IGNORECASE,
)
"""A greeting or thanks, with a word or two after it ("hi there", "thanks a lot")."""


_SENTENCE_ENDS = re.compile(r"(\n|(?<=[.!?;])\s+|(?<=[。！？；])\s*)")
"""Where a line or sentence ends (captured, so that what is kept keeps its layout): a
Latin stop only before a space, never inside a value ("P@ssw0rd!77")."""


def redact_secrets(text: str, secret: SecretKind | None = None) -> str:
    """`text` as it is kept (the archive, a title, what an extractor reads): each
    sentence that discloses a secret replaced by `[redacted]`, or the whole text when
    the secret spans sentences ("Remember my bank password. It's hunter2!").

    Args:
        text: the text.
        secret: what `find_secret(text)` found, when the caller has it already.
    """
    if secret is None and find_secret(text) is None:
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
    """Whether `text` may state something to remember: False only for what plainly
    holds nothing (see the module docstring), by the clause analysis of the rules."""
    text = text.replace(REDACTED, " ")
    if not text.strip() or _GREETING.match(text.strip()):
        return False
    return any(asked or _may_state(clause) for clause, asked in analysed(text))


def _may_state(clause: Clause) -> bool:
    if clause.type in (ClauseType.SOCIAL, ClauseType.REQUEST):
        return False  # thanks, greetings; "continue with section 4", "translate this"
    # a question about the user may carry a statement ("can you remember that I'm vegan?")
    return clause.type is not ClauseType.QUESTION or clause.subject is Subject.USER


@dataclass(frozen=True)
class UserText:
    """A turn's reading of its user's text.

    Attributes:
        text: the text as the user sent it (validated, stripped).
        secret: what it discloses, if anything (never the value).
        kept: the text as the archive and a title keep it (secret lines redacted).
        says_something: whether a long-term extraction may find something in it.
    """

    text: str = ""
    secret: SecretKind | None = None
    kept: str = ""
    says_something: bool = False


def read(text: str) -> UserText:
    """The one reading of a user's text a turn makes (one secret scan)."""
    secret = find_secret(text)
    kept = redact_secrets(text, secret) if secret is not None else text
    # a secret beside something lasting ("I'm allergic to peanuts. My wifi password
    # is …") leaves the rest to extract: an extractor reads the kept text
    return UserText(text=text, secret=secret, kept=kept, says_something=says_something(kept))
