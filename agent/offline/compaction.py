"""The offline model's compaction: a merged summary of facts, rule-based pins,
retirements and open questions.

It reads the compaction input written by `memory.compaction.compaction_prompt` (a
`CompactionInput` JSON document) and answers with a `CompactionOutput`, as a real
compaction model would, so memory stays bounded on a machine without a model. The
summary is built in `agent.offline.digest` (salience in `agent.offline.salience`),
the open questions in `agent.offline.questions`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import ValidationError

from agent.offline.digest import merged_summary
from agent.offline.questions import open_questions, resolved_questions
from agent.offline.salience import CJK, sentences
from memory.compaction import CompactionOutput, QuotedItem, Removal
from memory.compaction_input import CompactionInput
from memory.limits import MAX_PINNED_DECISION_CHARS, MAX_PINNED_DECISIONS
from memory.text import clamp

NOT_A_COMPACTION_INPUT = (
    "the offline compaction handler needs a CompactionInput JSON document "
    "(from memory.compaction.compaction_prompt) as the last user message"
)

_DECISION = re.compile(
    r"\bwe\s+decided\b|\bdecided\b|\balways\b|\bnever\b(?!\s+mind)|\bmust\b|决定|必须|不要",
    re.IGNORECASE,
)
_RETIREMENT = re.compile(
    r"\bno\s+longer\b|(?<!don't )(?<!don’t )(?<!do not )(?<!never )\bforget\b|不再",
    re.IGNORECASE,
)
_CJK_RUN = re.compile(f"[{CJK}]+")
_STOPWORD_LIST = """
the and for with that this these those our your you are was were have has had not
but from into about all any always never must decided decide decision longer forget
anymore please also just more only then than them they there here what when which
who whom whose its use using used make made want wants need needs should will would
can could may might shall don doesn didn isn aren won let lets now one some such
"""
_CJK_STOP_BIGRAM_LIST = """
我们 你们 他们 不再 必须 决定 不要 使用 一个 这个 那个 可以 需要 应该 现在 以后 总是 永远
忘记 忘掉 还是 就是 已经
"""
# Words too common to show that a retirement and a pin are about the same thing.
_STOPWORDS = frozenset(_STOPWORD_LIST.split())
_CJK_STOP_BIGRAMS = frozenset(_CJK_STOP_BIGRAM_LIST.split())


@dataclass(frozen=True)
class ParsedInput:
    """The compaction input, as the rules read it.

    Attributes:
        summary: the old summary ("" for none).
        pins: old pinned decisions as (number, text), in the order given.
        fold: messages to fold as (role, text), oldest first.
        kept: kept messages as (role, text), for reference only.
        questions: old open questions as (number, text), in the order given.
    """

    summary: str
    pins: list[tuple[int, str]]
    fold: list[tuple[str, str]]
    kept: list[tuple[str, str]]
    questions: list[tuple[int, str]] = field(default_factory=list)


def parse_compaction_input(messages: Sequence[BaseMessage]) -> ParsedInput:
    """Read the `CompactionInput` document from the user messages of `messages`.

    Raises:
        ValueError: when the last user message is not a `CompactionInput` document.
    """
    # the newest user message that is one: a retry adds a note after the document
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            try:
                document = CompactionInput.model_validate_json(message.text)
                break
            except ValidationError:
                continue
    else:
        raise ValueError(NOT_A_COMPACTION_INPUT)
    return ParsedInput(
        summary=document.old_summary.strip(),
        pins=[(pin.number, pin.text.strip()) for pin in document.old_pinned_decisions],
        fold=[(m.role, m.own_words or m.text) for m in document.messages_to_fold],
        kept=[(m.role, m.text) for m in document.kept_messages],
        questions=[(q.number, q.text.strip()) for q in document.old_open_questions],
    )


def keywords(text: str) -> set[str]:
    """Meaningful words of `text` (3+ letters, no stopwords) and CJK character pairs."""
    folded = text.casefold()
    words = {
        word
        for word in re.findall(r"[^\W_]+", _CJK_RUN.sub(" ", folded))
        if len(word) >= 3 and word not in _STOPWORDS
    }
    for run in _CJK_RUN.findall(folded):
        words.update(
            pair
            for pair in (run[i : i + 2] for i in range(len(run) - 1))
            if pair not in _CJK_STOP_BIGRAMS
        )
    return words


def is_decision(sentence: str) -> bool:
    """Whether a user sentence states a decision (and is not a question or a retirement)."""
    if sentence.endswith(("?", "？")) or _RETIREMENT.search(sentence):
        return False
    return bool(_DECISION.search(sentence))


def is_retirement(sentence: str) -> bool:
    """Whether a user sentence revokes something ("no longer", "forget", "不再")."""
    return bool(_RETIREMENT.search(sentence))


def pins_and_retirements(
    old_pins: Sequence[tuple[int, str]], fold: Sequence[tuple[str, str]]
) -> tuple[list[QuotedItem], list[Removal]]:
    """New pins from folded user sentences, and the old pins they revoke, each with the
    sentence it stands on as its quote.

    Sentences are read in order: a retirement also drops a new pin stated earlier in
    the same fold when they share a keyword, and never becomes a pin itself.
    """
    new_pins: list[QuotedItem] = []
    retired: dict[int, str] = {}
    for role, text in fold:  # (the speaker's own words: pasted material never pins)
        if role != "user":
            continue
        for sentence in sentences(text):
            if is_retirement(sentence):
                revoked = keywords(sentence)
                retired |= {
                    number: sentence
                    for number, pin in old_pins
                    if number not in retired and revoked & keywords(pin)
                }
                new_pins = [pin for pin in new_pins if not revoked & keywords(pin.text)]
            elif is_decision(sentence):
                pin = clamp(sentence, MAX_PINNED_DECISION_CHARS)
                if all(pin != old.text for old in new_pins):
                    new_pins.append(QuotedItem(text=pin, quote=sentence))
    removals = [Removal(number=n, quote=quote) for n, quote in sorted(retired.items())]
    return new_pins[-MAX_PINNED_DECISIONS:], removals


def compaction_output(messages: Sequence[BaseMessage]) -> CompactionOutput:
    """The offline `CompactionOutput` for a compaction prompt.

    Raises:
        ValueError: when the messages are not a compaction prompt.
    """
    parsed = parse_compaction_input(messages)
    pins, retired = pins_and_retirements(parsed.pins, parsed.fold)
    return CompactionOutput(
        summary=merged_summary(parsed.summary, parsed.fold),
        pinned_decisions=pins,
        retired_pins=retired,
        open_questions=open_questions(parsed.fold, parsed.kept),
        resolved_questions=resolved_questions(parsed.questions, parsed.fold),
    )
