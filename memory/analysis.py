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


def redact_secrets(text: str, secret: SecretKind | None = None) -> str:
    """`text` as it is kept (the archive, a title): each line that discloses a secret
    replaced by `[redacted]`, or the whole text when the secret spans lines.

    Args:
        text: the text.
        secret: what `find_secret(text)` found, when the caller has it already.
    """
    if secret is None and find_secret(text) is None:
        return text
    lines = [REDACTED if find_secret(line) is not None else line for line in text.split("\n")]
    if REDACTED not in lines:
        return REDACTED
    kept = "\n".join(lines)
    return kept if find_secret(kept) is None else REDACTED


def says_something(text: str) -> bool:
    """Whether `text` may state something to remember: False only for what plainly
    holds nothing (see the module docstring), by the clause analysis of the rules."""
    if _GREETING.match(text.strip()):
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
    return UserText(
        text=text,
        secret=secret,
        kept=redact_secrets(text, secret) if secret is not None else text,
        says_something=secret is None and says_something(text),
    )
