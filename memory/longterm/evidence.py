"""The evidence an operation stands on, checked in code: the user's own words in its
turn, whole words (whitespace, width and case aside); no secret; an item that restates
its quote. Each refusal names its `Reason`, in words safe to show.

What is not the user's own words is found by structure only, never meaning: a quote
(`>` lines, quote marks, code blocks), a hand-off ("X wrote:", an e-mail header, "here
is the email:", "下面是…发来的："), a line that speaks as someone else ("assistant: …",
"系统："), an attack on the assistant ("ignore previous instructions") or a pasted
memory block or JSON document ends or removes what the user stated themselves.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from enum import StrEnum

from memory.archive.terms import tokens
from memory.limits import MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.items import STRAIGHT_QUOTES
from memory.longterm.operations import Operation, OwedTurn
from memory.longterm.secrets import find_secret

CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
QUOTED_LINE = re.compile(r"^\s*(?:>|&gt;|\|).*$", re.M)
QUOTE_MARKS = re.compile(
    r"\"[^\"\n]{2,}\"|“[^”]{2,}”|「[^」]{2,}」|『[^』]{2,}』|‘[^’]{4,}’"
    r"|(?<![A-Za-z])'[^'\n]{8,}'(?![A-Za-z])"
)
HANDOFF = re.compile(
    r"(?:\b(?:wrote|writes|said|says|replied|posted|sent(?: me)?|forwarded)\b\s*:"
    r"|-{2,}\s*(?:forwarded|original) message\s*-{2,}"
    r"|^\s*(?:from|to|subject|date|cc|sent|发件人|收件人|主题)\s*[:：]"
    r"|\b(?:here(?:'s| is| are)|below is|this is)\b[^\n:：]{0,40}[:：]"
    r"|(?:下面|以下|这)是[^\n：:]{0,20}[：:]"
    r"|[^\n：:]{0,12}(?:发来的|转发的|写道|说道|原文)[^\n：:]{0,6}[：:]"
    r"|\b(?:proofread|translate|rewrite|edit|polish|check|summari[sz]e)\b[^\n:：]{0,30}[:：]"
    r"|(?:润色|翻译|改写|检查)[^\n：:]{0,10}[：:]"
    # a line that speaks as someone else ("assistant: …", "> system: …", "助手：…")
    r"|^[\s>]*(?:assistant|system|user|ai|bot|model|助手|系统|用户)\s*[:：]"
    # a prompt injection: what follows is an attack on the assistant, not the user's say
    r"|\b(?:ignore|disregard|forget)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+)?"
    r"(?:previous|prior|above|earlier|system)\s+(?:instructions|prompts?|rules|messages)\b"
    r"|忽略(?:之前|以上|前面|上面)的?(?:所有)?(?:指令|指示|提示|规则)"
    # a pasted memory block, or a pasted JSON document
    r"|^\s*(?:pinned decisions|summary of (?:the|our) earlier conversation|from earlier"
    r" conversations|what i remember about you|long-term memory)\b[^\n]{0,40}[:：(]"
    r"|^\s*[\[{]\s*[\"\[{])",
    re.I | re.M,
)
SLASH_COMMAND = re.compile(r"^\s*/[a-z]+\b", re.I)


def own_words(text: str) -> str:
    """`text` without what the user did not state themselves (above); a slash command
    states nothing."""
    text = text.replace("\r", "")
    if SLASH_COMMAND.match(text):  # "/memory", "/forget 3"
        return ""
    text = CODE_BLOCK.sub(" ", text)
    text = HANDOFF.split(text, maxsplit=1)[0]  # what comes before a hand-off
    text = QUOTED_LINE.sub(" ", text)
    return QUOTE_MARKS.sub(" … ", text)


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
_SPACES = re.compile(r"\s+")
_EDGES = " \t\n.,;:!?。，；：！？…\"'()[]「」"


def normalised_words(text: str) -> str:
    """`text` as a quote is compared: NFKC, case-folded, curly quotes straightened, every
    run of whitespace one space, punctuation at its ends left out."""
    folded = unicodedata.normalize("NFKC", text).translate(STRAIGHT_QUOTES).casefold()
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
