"""The evidence an operation stands on, checked in code: the user's own words in its
turn, whole words (whitespace, width and case aside), outside what they pasted or
quoted; no secret; an item that restates its quote. Each refusal names its `Reason`, in
words safe to show."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from enum import StrEnum

from memory.archive.terms import tokens
from memory.limits import MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.analysis import own_words
from memory.longterm.operations import Operation, OwedTurn
from memory.longterm.secrets import find_secret


class Reason(StrEnum):
    """Why the gate refused an operation."""

    NO_QUOTE = "no_quote"
    NOT_SAID = "quote_not_said"
    PASTED = "quote_in_pasted_text"
    SECRET = "secret"
    EMPTY = "empty"
    NOT_GROUNDED = "not_grounded"
    UNKNOWN_ITEM = "unknown_item"
    UNKNOWN_TURN = "unknown_turn"
    TURN_LIMIT = "turn_limit"
    SAME_QUOTE = "same_quote"
    AMBIGUOUS = "ambiguous_forget"
    UNSTORABLE = "unstorable"
    NOT_ABOUT_ITEM = "quote_not_about_item"
    """A compaction's retirement quotes words that share none with the pin it retires."""


MESSAGES = {
    Reason.NO_QUOTE: "nothing the user said was given for it",
    Reason.NOT_SAID: "the user never said that",
    Reason.PASTED: "quoted, pasted or forwarded text is not something you said about yourself",
    Reason.SECRET: "that looks like {kind}; secrets are never remembered",
    Reason.EMPTY: "there is nothing to remember in that text",
    Reason.NOT_GROUNDED: "only what the user said is remembered, never what was inferred",
    Reason.UNKNOWN_ITEM: "there is no such memory",
    Reason.NOT_ABOUT_ITEM: "what was said is not about that item",
    Reason.UNKNOWN_TURN: "there is no such turn",
    Reason.TURN_LIMIT: f"at most {MAX_NEW_MEMORIES_PER_TURN} new items are remembered per turn",
    Reason.SAME_QUOTE: "one item is remembered per thing the user said",
    Reason.AMBIGUOUS: "several memories match that; say which one to forget, or forget it"
    " from the memory panel",
    Reason.UNSTORABLE: "that text cannot be stored",
}
GROUNDED = 0.5
"""The share of an item's tokens its quote (with the line it answered) must hold."""
_SELF = tokens("user users 用户")
"""How an item may name the user ("User's name is Sam"): not what it is about."""
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "`": "'"})
_SPACES = re.compile(r"\s+")
_EDGES = " \t\n.,;:!?。，；：！？…\"'()[]「」"


def normalised_words(text: str) -> str:
    """`text` as a quote is compared: NFKC, case-folded, curly quotes straightened, every
    run of whitespace one space, punctuation at its ends left out."""
    folded = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    return _SPACES.sub(" ", folded).strip(_EDGES)


def _alphanumeric(char: str) -> bool:
    """A character that continues a word written with spaces (not CJK, which has none)."""
    return char.isalnum() and not "\u2e80" <= char <= "\u9fff"


def _holds_words(said: str, wanted: str) -> bool:
    """Whether `wanted` occurs in `said` as whole words: "ice" is not in "rice"."""
    start = said.find(wanted)
    while start != -1:
        end = start + len(wanted)
        before = start > 0 and _alphanumeric(said[start - 1]) and _alphanumeric(wanted[0])
        after = end < len(said) and _alphanumeric(said[end]) and _alphanumeric(wanted[-1])
        if not (before or after):
            return True
        start = said.find(wanted, start + 1)
    return False


def quote_refusal(quote: str, said: str) -> Reason | None:
    """Why `quote` is not the user's own words in `said` (None when it is)."""
    wanted = normalised_words(quote)
    if not wanted:
        return Reason.NO_QUOTE
    if _holds_words(normalised_words(own_words(said)), wanted):
        return None
    return Reason.PASTED if _holds_words(normalised_words(said), wanted) else Reason.NOT_SAID


def grounded(text: str, quote: str, answered: str) -> bool:
    """Whether an item restates its quote: most of what the item is about is in the
    quote, or in the assistant's line the quote answered ("Yes, Denver." to "Where do
    you live now?"), and the quote says some of it."""
    if normalised_words(text) in normalised_words(quote):
        return True
    own, quoted = tokens(text) - _SELF, tokens(quote)
    known = (quoted | tokens(answered)) & own
    return bool(own & quoted) and len(known) >= GROUNDED * len(own)


def verify(op: Operation, turns: Sequence[OwedTurn]) -> tuple[Reason, str] | None:
    """Checks 1-3 for one operation (None: it passes): its turn, its quote, secrets."""
    if not 1 <= op.turn <= len(turns):
        return Reason.UNKNOWN_TURN, ""
    reason = quote_refusal(op.quote, turns[op.turn - 1].user_text)
    if reason is not None:
        return reason, ""
    for text in (op.text, op.quote):
        secret = find_secret(text) if text else None
        if secret is not None:
            return Reason.SECRET, secret.value
    return None
