"""The offline model's compaction: an extractive summary, rule-based pins and retirements.

It reads the compaction input written by `memory.compaction.compaction_prompt` (the
`COMPACTION_INPUT` template) and answers with a `CompactionOutput`, as a real
compaction model would, so memory stays bounded on a machine without a model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from string import Formatter

from langchain_core.messages import BaseMessage, HumanMessage

from memory.compaction import CompactionOutput, clamp
from memory.limits import MAX_PINNED_DECISION_CHARS, MAX_PINNED_DECISIONS, MAX_SUMMARY_CHARS
from memory.prompts import COMPACTION_INPUT, NONE_MARKER

TURN_SIDE_CHARS = 160
"""Each side of a folded turn is condensed to at most this many characters."""

TURN_LINE = "User: {user} / Assistant: {assistant}"
USER_ONLY_LINE = "User: {user}"
ASSISTANT_ONLY_LINE = "Assistant: {assistant}"
CODE_PLACEHOLDER = "[code]"
DROPPED_MARKER = "…"
EMPTY_SUMMARY = "Nothing from the earlier conversation needs to be remembered."
NOT_A_COMPACTION_INPUT = (
    "the offline compaction handler needs the COMPACTION_INPUT text "
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
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*|\n+")
_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_TRANSCRIPT_LINE = re.compile(r"^\[(user|assistant)\] ?(.*)$")
_PIN_LINE = re.compile(r"^\s*(\d+)\.\s*(.*)$")
_CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
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
class CompactionInput:
    """The parsed compaction input.

    Attributes:
        summary: the old summary ("" for none).
        pins: old pinned decisions as (number, text), in the order given.
        fold: messages to fold as (role, text), oldest first.
        kept: kept messages as (role, text), for reference only.
    """

    summary: str
    pins: list[tuple[int, str]]
    fold: list[tuple[str, str]]
    kept: list[tuple[str, str]]


def _input_pattern() -> re.Pattern[str]:
    # Built from the template itself, so a reworded header cannot silently break parsing.
    parts: list[str] = []
    for literal, name, _, _ in Formatter().parse(COMPACTION_INPUT):
        if literal.strip():
            parts.append(re.escape(literal.strip()))
        if name:
            parts.append(f"(?P<{name}>.*?)")
    return re.compile(r"\A\s*" + r"\s*".join(parts) + r"\s*\Z", re.DOTALL)


_INPUT = _input_pattern()


def _section(text: str) -> str:
    text = text.strip()
    return "" if text == NONE_MARKER else text


def _transcript(text: str) -> list[tuple[str, str]]:
    messages: list[tuple[str, str]] = []
    for line in _section(text).splitlines():
        match = _TRANSCRIPT_LINE.match(line)
        if match:
            messages.append((match.group(1), match.group(2)))
        elif messages:  # a message text that spans several lines
            role, previous = messages[-1]
            messages[-1] = (role, f"{previous}\n{line}")
    return messages


def parse_compaction_input(messages: Sequence[BaseMessage]) -> CompactionInput:
    """Read the compaction input from the last user message of `messages`.

    Raises:
        ValueError: when no user message follows the `COMPACTION_INPUT` layout.
    """
    for message in reversed(messages):
        if not isinstance(message, HumanMessage):
            continue
        match = _INPUT.match(message.text)
        if match is None:
            break
        pins = [
            (int(pin.group(1)), pin.group(2).strip())
            for line in _section(match.group("pins")).splitlines()
            if (pin := _PIN_LINE.match(line))
        ]
        return CompactionInput(
            summary=_section(match.group("summary")),
            pins=pins,
            fold=_transcript(match.group("fold")),
            kept=_transcript(match.group("kept")),
        )
    raise ValueError(NOT_A_COMPACTION_INPUT)


def condense(text: str, limit: int = TURN_SIDE_CHARS) -> str:
    """`text` on one line, code blocks replaced by a placeholder, cut to `limit`."""
    text = _CODE_BLOCK.sub(CODE_PLACEHOLDER, text)
    return clamp(" ".join(text.split()), limit)


def _turn_lines(fold: Sequence[tuple[str, str]]) -> list[str]:
    turns: list[tuple[list[str], list[str]]] = []
    for role, text in fold:
        if role == "user" or not turns:
            turns.append(([], []))
        turns[-1][0 if role == "user" else 1].append(text)
    lines: list[str] = []
    for user_texts, assistant_texts in turns:
        user = condense(" ".join(user_texts))
        assistant = condense(" ".join(assistant_texts))
        if user and assistant:
            lines.append(TURN_LINE.format(user=user, assistant=assistant))
        elif user:
            lines.append(USER_ONLY_LINE.format(user=user))
        elif assistant:
            lines.append(ASSISTANT_ONLY_LINE.format(assistant=assistant))
    return lines


def extractive_summary(old_summary: str, fold: Sequence[tuple[str, str]]) -> str:
    """Old summary plus one condensed line per folded turn; the newest lines win the limit."""
    lines = [line for line in old_summary.splitlines() if line.strip()]
    lines += _turn_lines(fold)
    if not lines:
        return EMPTY_SUMMARY
    dropped = False
    while len(lines) > 1 and len("\n".join(lines)) + len(DROPPED_MARKER) + 1 > MAX_SUMMARY_CHARS:
        lines.pop(0)
        dropped = True
    summary = "\n".join([DROPPED_MARKER, *lines] if dropped else lines)
    return clamp(summary, MAX_SUMMARY_CHARS)


def sentences(text: str) -> list[str]:
    """`text` split into trimmed sentences (Latin and CJK end marks, line breaks)."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part and part.strip()]


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
) -> tuple[list[str], list[int]]:
    """New pins from folded user sentences, and the numbers of old pins they revoke.

    Sentences are read in order: a retirement also drops a new pin stated earlier in
    the same fold when they share a keyword, and never becomes a pin itself.
    """
    new_pins: list[str] = []
    retired: list[int] = []
    for role, text in fold:
        if role != "user":
            continue
        for sentence in sentences(text):
            if is_retirement(sentence):
                revoked = keywords(sentence)
                retired.extend(
                    number
                    for number, pin in old_pins
                    if number not in retired and revoked & keywords(pin)
                )
                new_pins = [pin for pin in new_pins if not revoked & keywords(pin)]
            elif is_decision(sentence):
                pin = clamp(" ".join(sentence.split()), MAX_PINNED_DECISION_CHARS)
                if pin not in new_pins:
                    new_pins.append(pin)
    return new_pins[-MAX_PINNED_DECISIONS:], sorted(retired)


def compaction_output(messages: Sequence[BaseMessage]) -> CompactionOutput:
    """The offline `CompactionOutput` for a compaction prompt.

    Raises:
        ValueError: when the messages are not a compaction prompt.
    """
    parsed = parse_compaction_input(messages)
    pins, retired = pins_and_retirements(parsed.pins, parsed.fold)
    return CompactionOutput(
        summary=extractive_summary(parsed.summary, parsed.fold),
        pinned_decisions=pins,
        retired_pins=retired,
    )
