"""The context builder: what a model sees for a turn, built from server-side memory only.

Order (a stable prefix first): system prompt, long-term block, pinned decisions block,
summary block, recent messages, the latest user input. Client-sent history is never an
input here.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from memory.longterm.items import MemoryItem
from memory.prompts import LONG_TERM_BLOCK, PINNED_BLOCK, SUMMARY_BLOCK
from memory.schema import ChatThreadMessage, ThreadState

LONG_TERM_BLOCK_ID = "memory-long-term"
PINNED_BLOCK_ID = "memory-pinned-decisions"
SUMMARY_BLOCK_ID = "memory-summary"


def numbered(items: list[str]) -> str:
    """`items` as a numbered list, one per line, starting at 1."""
    return "\n".join(f"{index}. {item}" for index, item in enumerate(items, start=1))


def long_term_block(items: Sequence[MemoryItem]) -> SystemMessage | None:
    """The recalled long-term items, one `[kind] text` line each, or None when none."""
    if not items:
        return None
    lines = "\n".join(f"- [{item.kind}] {item.text}" for item in items)
    return SystemMessage(content=LONG_TERM_BLOCK.format(items=lines), id=LONG_TERM_BLOCK_ID)


def pinned_block(state: ThreadState) -> SystemMessage | None:
    """The pinned-decisions block, or None when there are none."""
    if not state.pinned_decisions:
        return None
    content = PINNED_BLOCK.format(pins=numbered(state.pinned_decisions))
    return SystemMessage(content=content, id=PINNED_BLOCK_ID)


def summary_block(state: ThreadState) -> SystemMessage | None:
    """The summary block, or None when the summary is empty."""
    if not state.summary:
        return None
    return SystemMessage(content=SUMMARY_BLOCK.format(summary=state.summary), id=SUMMARY_BLOCK_ID)


def to_langchain(message: ChatThreadMessage) -> BaseMessage:
    """A stored message as a LangChain message (ids kept, for tracing)."""
    if message.role == "user":
        return HumanMessage(content=message.text, id=message.id)
    return AIMessage(content=message.text, id=message.id)


def build_context(
    state: ThreadState,
    latest_input: str | None,
    *,
    system_prompt: str | None = None,
    long_term: Sequence[MemoryItem] = (),
) -> list[BaseMessage]:
    """The messages a model receives for a turn.

    Args:
        state: the conversation's memory.
        latest_input: the user's new message; None when the caller appends its own.
        system_prompt: the route's instructions; omitted when None or empty.
        long_term: the user's recalled long-term items (already within their budget).

    Every stored message is included: compaction keeps them few (at most
    `MAX_RECENT_MESSAGES` between turns, `HARD_MESSAGE_CAP` after failed compactions),
    and a message is never dropped before it is folded into the summary.
    """
    context: list[BaseMessage] = []
    if system_prompt:
        context.append(SystemMessage(content=system_prompt))
    for block in (long_term_block(long_term), pinned_block(state), summary_block(state)):
        if block is not None:
            context.append(block)
    context.extend(to_langchain(message) for message in state.messages)
    if latest_input is not None:
        context.append(HumanMessage(content=latest_input))
    return context
