"""Compaction: fold older turns into a bounded summary and pinned decisions.

The compaction model (structured output, temperature 0) proposes a new summary, new
pinned decisions and open questions, and the old ones to retire or resolve, each with
the quote it stands on. Everything else is derived here: which messages are folded,
the checks (`memory.compaction_checks`), the clamps, which pins survive, and the
deterministic local fallback that keeps the bound when the model keeps failing. The
model reads one JSON document (`CompactionInput`) in which every text is an escaped value.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import Field, ValidationInfo, field_validator

from memory.compaction_checks import LOST_VALUE, Checked, QuotedItem, Removal, Strict, lost_values
from memory.limits import (
    COMPACTION_KEEP_MESSAGES,
    HARD_MESSAGE_CAP,
    MAX_OPEN_QUESTION_CHARS,
    MAX_OPEN_QUESTIONS,
    MAX_PINNED_DECISION_CHARS,
    MAX_PINNED_DECISIONS,
    MAX_RECENT_MESSAGES,
    MAX_SUMMARY_CHARS,
    validate_keep,
)
from memory.longterm.evidence import own_words
from memory.prompts import COMPACTION_SYSTEM, FALLBACK_SUMMARY_LINE, LOST_VALUES_RETRY
from memory.schema import ChatThreadMessage, Role, ThreadState, utcnow, validated
from memory.text import clamp, quoted

logger = logging.getLogger(__name__)

FALLBACK_LINE_CHARS = 200


class CompactionOutput(Strict):
    """What the compaction model returns (its structured-output schema)."""

    summary: str = Field(
        description=(
            "Updated summary of the conversation before the kept messages: what it is "
            "about, then the key facts as short items, one per line."
        )
    )
    pinned_decisions: list[QuotedItem] = Field(
        description="New explicit decisions or constraints, each with its quote."
    )
    retired_pins: list[Removal] = Field(
        description="Old pinned decisions that the conversation revoked, each with its quote."
    )
    open_questions: list[QuotedItem] = Field(
        default_factory=list,
        description="New questions the user asked that are still unanswered, with quotes.",
    )
    resolved_questions: list[Removal] = Field(
        default_factory=list,
        description="Old open questions now answered or dropped, each with its quote.",
    )

    @field_validator("*", mode="before")
    @classmethod
    def _bare(cls, items: object, info: ValidationInfo) -> object:
        # a bare text or number (a weak model's) is an item with no quote: refused, counted
        removals = info.field_name in ("retired_pins", "resolved_questions")
        key, bare = ("number", int) if removals else ("text", str)
        if not isinstance(items, list):
            return items
        return [{key: i, "quote": ""} if isinstance(i, bare) else i for i in items]


class FoldedMessage(Strict):
    """A message to the model, its role outside its text: no text can pass for another speaker."""

    role: Role
    text: str
    own_words: str | None = None
    """What the speaker said themselves, when the text also holds pasted, quoted or
    forwarded material (None: all of it is theirs)."""


class NumberedItem(Strict):
    """An old pinned decision, by the number the model may retire it with."""

    number: int
    text: str


class CompactionInput(Strict):
    """What the compaction model reads: one JSON document, every text an escaped value."""

    old_summary: str
    old_pinned_decisions: list[NumberedItem]
    old_open_questions: list[NumberedItem] = Field(default_factory=list)
    messages_to_fold: list[FoldedMessage]
    kept_messages: list[FoldedMessage]


def _numbered(texts: Sequence[str]) -> list[NumberedItem]:
    return [NumberedItem(number=n, text=text) for n, text in enumerate(texts, start=1)]


def folded(message: ChatThreadMessage) -> FoldedMessage:
    """A message as the compaction model reads it: the speaker's own words apart from pastes."""
    own = " ".join(own_words(message.text).split())
    kept = None if own == " ".join(message.text.split()) else own
    return FoldedMessage(role=message.role, text=message.text, own_words=kept)


def compaction_prompt(
    state: ThreadState, fold: Sequence[ChatThreadMessage], kept: Sequence[ChatThreadMessage]
) -> list[BaseMessage]:
    """The compaction model's input: the instruction, then the `CompactionInput` as JSON."""
    system = COMPACTION_SYSTEM.format(
        max_summary=MAX_SUMMARY_CHARS,
        max_pin=MAX_PINNED_DECISION_CHARS,
        max_question=MAX_OPEN_QUESTION_CHARS,
    )
    document = CompactionInput(
        old_summary=state.summary,
        old_pinned_decisions=_numbered(state.pinned_decisions),
        old_open_questions=_numbered(state.open_questions),
        messages_to_fold=[folded(m) for m in fold],
        kept_messages=[folded(m) for m in kept],
    )
    body = json.dumps(document.model_dump(exclude_none=True), ensure_ascii=False, indent=1)
    return [SystemMessage(content=system), HumanMessage(content=body)]


class CompactionStatus(StrEnum):
    """Outcome of a compaction attempt, as streamed and reported in `TurnResult`."""

    SKIPPED = "skipped"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    FALLBACK = "fallback"


@dataclass(frozen=True)
class CompactionResult:
    """A compaction outcome and the state to store; `error` is for logs, never users."""

    status: CompactionStatus
    state: ThreadState
    error: str | None = None
    refused: Mapping[str, int] = field(default_factory=dict)
    """The proposals the checks refused, and summaries that lost a value in force, by reason."""


class InvalidCompactionOutput(ValueError):
    """The compaction model answered, but not with a usable result."""


def split_for_fold(
    messages: Sequence[ChatThreadMessage], keep: int = COMPACTION_KEEP_MESSAGES
) -> tuple[list[ChatThreadMessage], list[ChatThreadMessage]]:
    """Split into (messages to fold, messages to keep); the kept part starts a turn."""
    boundary = max(len(messages) - keep, 0)
    while boundary < len(messages) and messages[boundary].role != "user":
        boundary += 1
    return list(messages[:boundary]), list(messages[boundary:])


def _item_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def merge_numbered(
    old: Sequence[str],
    proposed: Sequence[str],
    retired: Sequence[int],
    *,
    limit: int,
    max_chars: int,
) -> list[str]:
    """Old items minus retired ones (1-based), then the new ones not restating a kept
    one; the oldest go past `limit`. An old item omitted but not retired is kept."""
    retired_set = set(retired)
    items = [item for number, item in enumerate(old, start=1) if number not in retired_set]
    seen = {_item_key(item) for item in items}
    for item in proposed:
        clamped = clamp(item, max_chars)
        key = _item_key(clamped)
        if clamped and key not in seen:
            items.append(clamped)
            seen.add(key)
    return items[-limit:]


merge_pins = partial(
    merge_numbered, limit=MAX_PINNED_DECISIONS, max_chars=MAX_PINNED_DECISION_CHARS
)


def summary_contract(state: ThreadState, fold: Sequence[ChatThreadMessage]) -> dict[str, Any]:
    """The version and coverage fields of a compaction that folded `fold`."""
    covered = fold[-1].id if fold else state.covered_until
    return {"summary_version": state.summary_version + 1, "covered_until": covered}


def merge_compaction(
    state: ThreadState,
    output: CompactionOutput,
    fold: Sequence[ChatThreadMessage],
    kept: Sequence[ChatThreadMessage],
    now: datetime,
) -> tuple[ThreadState, Checked]:
    """The new state (the storage `version` is the caller's compare-and-set), with what
    the checks refused and what the summary lost. Raises `InvalidCompactionOutput` for
    an empty summary, which would silently drop the folded turns."""
    summary = clamp(output.summary, MAX_SUMMARY_CHARS)
    if not summary:
        raise InvalidCompactionOutput("compaction returned an empty summary")
    checked = Checked()
    retired = checked.removed(output.retired_pins, state.pinned_decisions, fold)
    pins = merge_pins(
        state.pinned_decisions, checked.stated(output.pinned_decisions, fold), retired
    )
    resolved = checked.removed(output.resolved_questions, state.open_questions, fold)
    questions = merge_numbered(
        state.open_questions,
        checked.stated(output.open_questions, fold),
        resolved,
        limit=MAX_OPEN_QUESTIONS,
        max_chars=MAX_OPEN_QUESTION_CHARS,
    )
    checked.lost = lost_values(state.summary, state.pinned_decisions, summary, pins)
    new = state.model_copy(
        update={
            "messages": list(kept),
            "summary": summary,
            "pinned_decisions": pins,
            "open_questions": questions,
            "last_compacted_at": now,
            **summary_contract(state, fold),
        }
    )
    return new, checked


def local_fallback(
    state: ThreadState, keep: int = COMPACTION_KEEP_MESSAGES, now: datetime | None = None
) -> ThreadState:
    """Deterministic compaction without a model: old messages folded as short summary
    lines (the newest win past the limit), pins and open questions unchanged."""
    fold, kept = split_for_fold(state.messages, validate_keep(keep))
    lines = [
        FALLBACK_SUMMARY_LINE.format(
            speaker="User" if message.role == "user" else "Assistant",
            text=quoted(clamp(" ".join(message.text.split()), FALLBACK_LINE_CHARS)),
        )
        for message in fold
    ]
    summary = "\n".join(part for part in (state.summary, *lines) if part)
    if len(summary) > MAX_SUMMARY_CHARS:
        summary = "…" + summary[-(MAX_SUMMARY_CHARS - 1) :].lstrip()
    return state.model_copy(
        update={
            "messages": kept,
            "summary": summary,
            "last_compacted_at": now or utcnow(),
            **summary_contract(state, fold),
        }
    )


COMPACTION_MAX_TOKENS = 2_000
"""The most a compaction's answer may take: a full summary and its pins, as JSON."""


def compact(
    state: ThreadState,
    compactor: Runnable[Any, Any],
    *,
    keep: int = COMPACTION_KEEP_MESSAGES,
    now: datetime | None = None,
) -> CompactionResult:
    """Compact `state` with `compactor` (a runnable answering a `CompactionOutput` or its dict)
    when it holds more than `MAX_RECENT_MESSAGES` messages, keeping the newest `keep`.
    Model errors are reported, never raised. A summary that lost a value in force is asked
    for once more, then the fallback keeps the pins and questions that checked out."""
    if len(state.messages) <= MAX_RECENT_MESSAGES:
        return CompactionResult(CompactionStatus.SKIPPED, state)
    fold, kept = split_for_fold(state.messages, validate_keep(keep))
    prompt = compaction_prompt(state, fold, kept)
    at = now or utcnow()

    def attempt(prompt: list[BaseMessage]) -> tuple[ThreadState, Checked]:
        output = validated(CompactionOutput, compactor.invoke(prompt), InvalidCompactionOutput)
        return merge_compaction(state, output, fold, kept, at)

    try:
        new, checked = attempt(prompt)
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
        logger.warning("compaction model failed: %s", reason)
        # an answer of the wrong form (a ValueError: empty, cut, not the schema) fails the
        # same way again, so the fallback folds now (and at the hard cap); a timeout or lost
        # connection may pass: memory stays as it is, the compaction owed for a later upkeep
        folds = isinstance(exc, ValueError) or len(state.messages) >= HARD_MESSAGE_CAP
        if not folds:
            return CompactionResult(CompactionStatus.FAILED, state, reason)
        return CompactionResult(CompactionStatus.FALLBACK, local_fallback(state, keep, at), reason)
    if not checked.lost:
        return CompactionResult(CompactionStatus.SUCCEEDED, new, refused=checked.refused)
    logger.info("compaction summary lost %d values in force: asked again", len(checked.lost))
    refused = Counter({LOST_VALUE: 1}) + checked.refused
    retry = HumanMessage(content=LOST_VALUES_RETRY.format(values=", ".join(checked.lost)))
    try:
        again, checked_again = attempt([*prompt, retry])
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}"
    else:
        refused += checked_again.refused
        if not checked_again.lost:
            return CompactionResult(CompactionStatus.SUCCEEDED, again, refused=refused)
        new, reason = again, "summary lost values in force"
        refused[LOST_VALUE] += 1
    held = {k: getattr(new, k) for k in ("pinned_decisions", "open_questions")}
    fallback = local_fallback(state, keep, at).model_copy(update=held)
    return CompactionResult(CompactionStatus.FALLBACK, fallback, reason, refused)
