"""A turn's context as a list of messages, for tests and benchmarks that build one from
memory without running the graph (the graph keeps it in pieces, `ContextParts`), and a
conversation's memory set by a test."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from langchain_core.messages import BaseMessage

from memory.archive.recall import Recall
from memory.context import ContextBudget, context_parts
from memory.conversations import ConversationMemory
from memory.longterm.items import MemoryItem
from memory.schema import ThreadState


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
    """The messages a model receives for a turn (fitted into `budget` when given;
    `append_input=False`: the new input is counted but left out)."""
    parts = context_parts(
        state, latest_input, system_prompt=system_prompt, long_term=long_term, recalled=recalled
    )
    if budget is not None:
        parts = budget.fit(parts)
    return (parts if append_input else replace(parts, tail=())).messages()


def overwrite_memory(
    memory: ConversationMemory, session_id: str, conversation_id: str, state: ThreadState
) -> ThreadState:
    """Store `state` as the conversation's memory (as a run of turns could have left it),
    compare-and-set against what is stored now, read under the session's lock (an upkeep
    still running commits under it too); returns it as stored."""
    with memory.documents.lock(session_id):
        read = memory.documents.read(session_id, conversation_id)
        stored = state.model_copy(update={"version": read.memory.version + 1})
        memory.documents.commit(
            session_id, read.registry, None, {conversation_id: stored}, read=(conversation_id, read)
        )
    return stored
