"""What the compaction model reads: the folded and kept messages, the old summary, pins
and open questions, as one JSON document in which every text is an escaped value."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ConfigDict, Field

from memory.limits import MAX_OPEN_QUESTION_CHARS, MAX_PINNED_DECISION_CHARS, MAX_SUMMARY_CHARS
from memory.longterm.evidence import own_words
from memory.prompts import COMPACTION_SYSTEM
from memory.schema import ChatThreadMessage, Role, ThreadState


class FoldedMessage(BaseModel):
    """One message of the compaction input: its role outside its text, so that no text
    can pass for another speaker."""

    model_config = ConfigDict(extra="forbid")

    role: Role
    text: str
    own_words: str | None = None
    """What the speaker said themselves, when the text also holds pasted, quoted or
    forwarded material (None: all of it is theirs)."""


class NumberedItem(BaseModel):
    """An old pinned decision, by the number the model may retire it with."""

    model_config = ConfigDict(extra="forbid")

    number: int
    text: str


class CompactionInput(BaseModel):
    """What the compaction model reads: one JSON document, every text an escaped value."""

    model_config = ConfigDict(extra="forbid")

    old_summary: str
    old_pinned_decisions: list[NumberedItem]
    old_open_questions: list[NumberedItem] = Field(default_factory=list)
    messages_to_fold: list[FoldedMessage]
    kept_messages: list[FoldedMessage]


def _numbered(texts: Sequence[str]) -> list[NumberedItem]:
    return [NumberedItem(number=n, text=text) for n, text in enumerate(texts, start=1)]


def folded(message: ChatThreadMessage) -> FoldedMessage:
    """A message as the compaction model reads it: pasted material marked by giving the
    speaker's own words apart."""
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
