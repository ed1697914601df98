"""Open questions for the offline compactor: what the user asked that no reply answered.

A user sentence in the folded messages that ends with a question mark, and carries
something (not "Can you say more?"), is an open question unless a later assistant
text, folded or kept, answers it; an old open question is resolved when a folded
assistant text answers it.

A text answers a question when it is a real reply (not the offline model's echo of
the question, not "I don't know") whose statements talk about what the question asks
about: they share at least half of the question's terms, or share one in a sentence
that gives a specific value (a number, an amount, a date or an identifier). An answer
names what it answers and a reply on something else does not; a value next to the
subject is what "how many", "when" and "which" ask for. The rule can take a reply
that only mentions the subject for an answer; it never takes the echo for one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.offline.salience import (
    Feature,
    clipped_line,
    features,
    is_content_free,
    is_offline_boilerplate,
    is_question,
    sentences,
    terms,
    without_offline_prefix,
)
from memory.compaction import QuotedItem, Removal
from memory.limits import MAX_OPEN_QUESTION_CHARS, MAX_OPEN_QUESTIONS

_REFUSAL = re.compile(
    r"\b(?:don't|do\s+not|doesn't|does\s+not)\s+know\b|\bnot\s+sure\b|\bno\s+idea\b"
    r"|\bcan(?:'t|not)\s+(?:tell|say)\b|\bunclear\b|\bunable\s+to\b|\bcouldn't\s+find\b"
    r"|不知道|不确定|不清楚|无法确定|没有找到|说不准",
    re.IGNORECASE,
)
_VALUES = frozenset({Feature.NUMBER, Feature.AMOUNT, Feature.DATE, Feature.IDENTIFIER})


def asked(text: str) -> list[QuotedItem]:
    """The questions of a user text that carry something, one line each, clamped, each
    quoting the sentence that asks it."""
    return [
        QuotedItem(text=clipped_line(sentence, MAX_OPEN_QUESTION_CHARS), quote=sentence)
        for sentence in sentences(text)
        if is_question(sentence) and not is_content_free(sentence)
    ]


def answers(question: str, reply: str) -> str | None:
    """The sentence of an assistant text that answers `question` (the rule in the module
    docstring), or None."""
    if is_offline_boilerplate(reply):
        return None
    wanted = terms(question)
    shared: set[str] = set()
    with_value = False
    first = None
    for sentence in sentences(without_offline_prefix(reply)):
        if is_question(sentence) or _REFUSAL.search(sentence):
            continue
        common = wanted & terms(sentence)
        if common:
            first = first or sentence
            shared |= common
            with_value = with_value or bool(features(sentence) & _VALUES)
    return first if shared and (with_value or 2 * len(shared) >= len(wanted)) else None


def open_questions(
    fold: Sequence[tuple[str, str]], kept: Sequence[tuple[str, str]]
) -> list[QuotedItem]:
    """Questions the user asked in `fold` that no later assistant text answers (the
    newest `MAX_OPEN_QUESTIONS`)."""
    found: list[QuotedItem] = []
    for index, (role, text) in enumerate(fold):
        if role != "user":
            continue
        replies = [reply for who, reply in (*fold[index + 1 :], *kept) if who == "assistant"]
        for question in asked(text):
            new = all(question.text != other.text for other in found)
            if new and not any(answers(question.text, r) for r in replies):
                found.append(question)
    return found[-MAX_OPEN_QUESTIONS:]


def resolved_questions(
    old: Sequence[tuple[int, str]], fold: Sequence[tuple[str, str]]
) -> list[Removal]:
    """The old open questions that a folded assistant text answers, each quoting the
    answer's sentence."""
    replies = [text for role, text in fold if role == "assistant"]
    resolved = []
    for number, question in old:
        quote = next((q for r in replies if (q := answers(question, r))), None)
        if quote is not None:
            resolved.append(Removal(number=number, quote=quote))
    return resolved
