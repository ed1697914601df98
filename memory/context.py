"""The context builder: what a model sees for a turn, built from server-side memory only.

Order (a stable prefix first): system prompt, long-term block, the lines recalled from
earlier conversations, pinned decisions block, summary block (with the open
questions), recent messages, the latest user input.
Client-sent history is never an input here. With a `ContextBudget` the context is
fitted into it (`memory.budget`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from memory.archive.recall import Recall
from memory.budget import ContextBudget
from memory.context_blocks import ContextParts, pinned_block, summary_block
from memory.longterm.items import MemoryItem
from memory.schema import ChatThreadMessage, ThreadState


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


def build_context(
    state: ThreadState,
    latest_input: str | None,
    *,
    system_prompt: str | None = None,
    long_term: Sequence[MemoryItem] = (),
    recalled: Recall | None = None,
    budget: ContextBudget | None = None,
    append_input: bool = True,
) -> list[BaseMessage]:
    """The messages a model receives for a turn.

    Args:
        state: the conversation's memory.
        latest_input: the user's new message (None: none to count or append).
        system_prompt: the route's instructions; omitted when None or empty.
        long_term: the user's recalled long-term items, best first (within their budget).
        recalled: lines recalled from the session's earlier conversations.
        budget: fit the context into this many tokens (`memory.budget`); None: as is.
        append_input: False when the caller appends the new input itself (it is still
            counted against the budget).

    Without a budget every stored message is included: compaction keeps them few (at
    most `MAX_RECENT_MESSAGES` between turns, `HARD_MESSAGE_CAP` after failed
    compactions), and a message is never dropped before it is folded into the summary.
    """
    parts = context_parts(
        state, latest_input, system_prompt=system_prompt, long_term=long_term, recalled=recalled
    )
    if budget is not None:
        parts = budget.fit(parts)
    return parts.messages(with_tail=append_input)
