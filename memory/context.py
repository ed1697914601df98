"""The context builder: what a model sees for a turn, built from server-side memory only.

Order (a stable prefix first): system prompt, long-term block, the lines recalled from
earlier conversations, pinned decisions block, summary block (with the open
questions), recent messages, the latest user input. Client-sent history is never an
input here. `ContextParts` keeps the context in the pieces a `ContextBudget`
(`memory.budget`) may shorten; each model call of a turn fits them again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from memory.archive.lines import ArchivedLine
from memory.archive.recall import Recall, render
from memory.longterm.items import MemoryItem
from memory.prompts import (
    LONG_TERM_BLOCK,
    OPEN_QUESTIONS_BLOCK,
    PINNED_BLOCK,
    RECALL_BLOCK,
    SUMMARY_BLOCK,
)
from memory.schema import ChatThreadMessage, ThreadState

LONG_TERM_BLOCK_ID = "memory-long-term"
PINNED_BLOCK_ID = "memory-pinned-decisions"
SUMMARY_BLOCK_ID = "memory-summary"
RECALL_BLOCK_ID = "memory-recall"


def long_term_block(items: Sequence[MemoryItem]) -> SystemMessage | None:
    """The recalled long-term items, one `[kind] text` line each, or None when none."""
    if not items:
        return None
    lines = "\n".join(f"- [{item.kind}] {item.text}" for item in items)
    return SystemMessage(content=LONG_TERM_BLOCK.format(items=lines), id=LONG_TERM_BLOCK_ID)


def recall_block(groups: Sequence[Sequence[ArchivedLine]]) -> SystemMessage | None:
    """The lines recalled from earlier conversations, oldest first, under their date and
    conversation title, or None when none."""
    lines = [line for group in groups for line in group]
    if not lines:
        return None
    return SystemMessage(content=RECALL_BLOCK.format(lines=render(lines)), id=RECALL_BLOCK_ID)


def pinned_block(state: ThreadState) -> SystemMessage | None:
    """The pinned-decisions block, or None when there are none."""
    if not state.pinned_decisions:
        return None
    pins = enumerate(state.pinned_decisions, start=1)
    content = PINNED_BLOCK.format(pins="\n".join(f"{n}. {pin}" for n, pin in pins))
    return SystemMessage(content=content, id=PINNED_BLOCK_ID)


def summary_block(state: ThreadState) -> SystemMessage | None:
    """The summary block with the open questions, or None when the summary is empty."""
    if not state.summary:
        return None
    content = SUMMARY_BLOCK.format(summary=state.summary)
    if state.open_questions:
        questions = "\n".join(f"- {question}" for question in state.open_questions)
        content += OPEN_QUESTIONS_BLOCK.format(questions=questions)
    return SystemMessage(content=content, id=SUMMARY_BLOCK_ID)


@dataclass(frozen=True)
class ContextParts:
    """A turn's context in the pieces a `ContextBudget` may shorten: `long_term` items
    and `recalled` groups (best first) keep their first `*_count`; the system prompt,
    pins and `tail` (the turn's own messages: the input, a tool turn's calls and
    results) always stay."""

    system: SystemMessage | None
    long_term: tuple[MemoryItem, ...]
    long_term_count: int
    pins: SystemMessage | None
    summary: SystemMessage | None
    recent: tuple[BaseMessage, ...]
    tail: tuple[BaseMessage, ...] = ()
    recalled: tuple[tuple[ArchivedLine, ...], ...] = ()
    recalled_count: int = 0

    def messages(self, *, with_tail: bool = True) -> list[BaseMessage]:
        """The context in its order: system, long-term, recalled lines, pins, summary,
        recent, the turn."""
        kept = long_term_block(self.long_term[: self.long_term_count])
        earlier = recall_block(self.recalled[: self.recalled_count])
        head = (self.system, kept, earlier, self.pins, self.summary)
        context: list[BaseMessage] = [block for block in head if block is not None]
        context.extend(self.recent)
        if with_tail:
            context.extend(self.tail)
        return context


def to_langchain(message: ChatThreadMessage) -> BaseMessage:
    """A stored message as a LangChain message (ids kept, for tracing)."""
    if message.role == "user":
        return HumanMessage(content=message.text, id=message.id)
    return AIMessage(content=message.text, id=message.id)


def context_parts(
    state: ThreadState,
    latest_input: str | None,
    *,
    system_prompt: str | None = None,
    long_term: Sequence[MemoryItem] = (),
    recalled: Recall | None = None,
) -> ContextParts:
    """The pieces of a turn's context, before any fitting."""
    items = tuple(long_term)
    groups = recalled.groups if recalled is not None else ()
    return ContextParts(
        system=SystemMessage(content=system_prompt) if system_prompt else None,
        long_term=items,
        long_term_count=len(items),
        pins=pinned_block(state),
        summary=summary_block(state),
        recent=tuple(to_langchain(message) for message in state.messages),
        tail=() if latest_input is None else (HumanMessage(content=latest_input),),
        recalled=groups,
        recalled_count=len(groups),
    )
