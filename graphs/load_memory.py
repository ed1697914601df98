"""`load_memory`: the node that opens a turn.

It takes the run's request (`graphs.run_input`), reads the conversation's memory, the
user's long-term items and the earlier lines the archive recalls, builds the model
context and sends the turn to its route (with `Command`, no router). A memory failure
never fails the turn: it is logged, the turn is answered without that memory, and the
result says `degraded`.

The node is a plain function: storage calls are direct, so a turn run with
`graph.invoke` makes none of them through a thread, and under `graph.astream`
LangGraph runs it in a worker thread.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.chat_view import input_message_id
from graphs.events import emit, emit_memory
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.request import WORKFLOW_ROUTES, TurnRequest
from graphs.resources import Lazy
from graphs.run_input import resolve_turn
from graphs.state import FRESH_TURN, AgentState, AgentUpdate, Context, MemoryContext, Node
from memory import ConversationNotFound, ThreadState
from memory.archive import Recall
from memory.budget import ContextBudget
from memory.context import context_parts
from memory.conversations import ConversationMemory
from memory.longterm import MemoryItem
from memory.longterm.store import LongTermMemory

logger = logging.getLogger(__name__)


def stored_memory(
    memory: ConversationMemory, session_id: str, conversation_id: str, admit: bool
) -> tuple[ThreadState, bool]:
    """(the conversation's memory, whether reading it failed)."""
    try:
        return memory.memory_for_turn(session_id, conversation_id, admit=admit), False
    except ConversationNotFound:
        raise  # deleted since it was admitted, or never the session's
    except Exception:
        logger.exception("reading chat memory failed; answering without it")
        return ThreadState(), True


def recalled(
    long_term: Lazy[LongTermMemory] | None, session_id: str, text: str
) -> tuple[list[MemoryItem], bool]:
    """(the long-term items this turn recalls, whether reading them failed)."""
    if long_term is None:
        return [], False
    try:
        return long_term.get().recall(session_id, text), False
    except Exception:
        logger.exception("recalling long-term memory failed; answering without it")
        return [], True


def recalled_lines(
    memory: ConversationMemory, session_id: str, conversation_id: str, text: str, state: ThreadState
) -> tuple[Recall | None, bool]:
    """(the earlier lines this turn recalls from the session's archive, whether reading
    them failed)."""
    try:
        return memory.recall(session_id, conversation_id, text, state), False
    except Exception:
        logger.exception("recalling earlier conversations failed; answering without them")
        return None, True


def turn_update(
    state: AgentState, request: TurnRequest, stored: ThreadState, context: MemoryContext
) -> AgentUpdate:
    """The run state of a turn that starts: every per-turn key reset, then this turn's."""
    turn_id = uuid.uuid4().hex
    route = request["route"]
    return {
        **FRESH_TURN,
        "turn_id": turn_id,
        "user_text": request["text"],
        "route": route,
        "tools_allowed": request["tools_allowed"],
        # a task list stops for its review before it runs anything: seen from
        # outside, its state is paused (or stopped by a crash) until it finishes
        "status": "interrupted" if route == "tasklist" else "running",
        "turn_messages": [
            HumanMessage(content=request["text"], id=input_message_id(state) or turn_id)
        ],
        "context": context,
        "memory_summary": stored.summary,
        "memory_pins": list(stored.pinned_decisions),
    }


def make_load_memory(
    memory: Lazy[ConversationMemory],
    routes: frozenset[str],
    system_prompt: str = AGENT_SYSTEM_PROMPT,
    long_term: Lazy[LongTermMemory] | None = None,
    budget: ContextBudget | None = None,
) -> Node:
    """Build `load_memory`: validate the input, read the conversation and the user's
    long-term items, build the context (fitted into `budget` when given)."""

    def load_memory(
        state: AgentState, config: RunnableConfig, runtime: Runtime[Context]
    ) -> Command[Any]:
        """Validate the turn, read its chat memory, build the model context, and go to
        the turn's route (decided once, when the request was validated)."""
        thread_id = config.get("configurable", {}).get("thread_id")
        session_id, conversation_id, request, admitted = resolve_turn(
            state, runtime.context, thread_id, routes, budget, system_prompt
        )
        stored, degraded = stored_memory(
            memory.get(), session_id, conversation_id, admit=not admitted
        )
        items, recall_failed = recalled(long_term, session_id, request["text"])
        route = request["route"]
        earlier: Recall | None = None
        if route not in WORKFLOW_ROUTES and not degraded:  # a workflow reads no context
            earlier, archive_failed = recalled_lines(
                memory.get(), session_id, conversation_id, request["text"], stored
            )
            recall_failed = recall_failed or archive_failed
        emit("route", route=route)
        if earlier is not None and earlier.lines:
            emit_memory("recall", "succeeded", lines=earlier.ids)
        # kept in pieces: each model call of the turn fits them with its own messages
        parts = context_parts(
            stored, None, system_prompt=system_prompt, long_term=items, recalled=earlier
        )
        update = turn_update(state, request, stored, MemoryContext(parts, budget))
        update |= {
            "session_id": session_id,
            "conversation_id": conversation_id,
            "degraded": degraded or recall_failed,
        }
        return Command(update=update, goto=route)

    return load_memory
