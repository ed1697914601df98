"""The memory view: a read-only graph showing what the agent keeps of a conversation and
its user, for Studio and the SDK (a turn's run never holds the memory). Best run without
a thread, so no checkpoint keeps a copy: `client.runs.wait(None, "memory",
input={"conversation_id": …})`; the session is the run's, as for a turn.
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from graphs.request import run_ids
from graphs.state import Context
from memory.conversations import ConversationMemory
from memory.longterm.store import LongTermMemory


class ViewInput(TypedDict, total=False):
    """Which conversation to show (default: the run's thread)."""

    conversation_id: str
    session_id: str


class ViewOutput(TypedDict, total=False):
    """The conversation's hydration DTO and the user's long-term items."""

    conversation: dict[str, Any]
    memories: list[dict[str, Any]]


class ViewState(ViewInput, ViewOutput, total=False):
    """Input and output, nothing else."""


def build_memory_view_graph(
    *, memory: ConversationMemory, long_term: LongTermMemory | None = None
) -> StateGraph[ViewState, Context, ViewInput, ViewOutput]:
    """`START → read_memory → END`."""

    def read_memory(state: ViewState, runtime: Runtime[Context]) -> ViewOutput:
        """Read the conversation's memory (`ConversationNotFound` for another session's)
        and the session's long-term items."""
        context = runtime.context or Context()
        thread_id = get_config().get("configurable", {}).get("thread_id")
        session_id, conversation_id = run_ids(
            state, context.session_id, context.conversation_id, thread_id
        )
        items = [] if long_term is None else long_term.items(session_id)
        return {
            "conversation": memory.hydrate(session_id, conversation_id),
            "memories": [item.to_dto() for item in items],
        }

    builder = StateGraph(
        ViewState, context_schema=Context, input_schema=ViewInput, output_schema=ViewOutput
    )
    builder.add_node(read_memory)
    builder.add_edge(START, "read_memory")
    builder.add_edge("read_memory", END)
    return builder
