"""The memory nodes of the main graph: `load_memory`, `finalize` and `compact`.

`finalize` is the only writer of turns; `compact` runs only when the memory holds
more than eight messages. A memory failure never fails the turn: it is logged, the
answer is still returned, and the result says `degraded`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from graphs.events import emit, emit_memory
from graphs.prompts import AGENT_SYSTEM_PROMPT, NO_ANSWER
from graphs.resources import Lazy
from graphs.state import AgentState, Context
from graphs.turn_input import parse_turn_input
from memory import ConversationMemory, ThreadState, build_context, hydration_dto
from memory.compaction import CompactionStatus, structured_compactor
from memory.limits import MAX_RECENT_MESSAGES
from memory.turns import (
    FinalTurn,
    Route,
    TurnStatus,
    chat_turn,
    delivery_turn,
    final_ai_message,
    message_text,
    tasklist_turn,
    tool_turn,
)

logger = logging.getLogger(__name__)

Node = Callable[..., Awaitable[dict[str, Any]]]


def make_load_memory(
    memory: Lazy[ConversationMemory], routes: set[str], system_prompt: str = AGENT_SYSTEM_PROMPT
) -> Node:
    """Build `load_memory`: validate the input, read the conversation, build the context."""

    async def load_memory(
        state: AgentState, config: RunnableConfig, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """Validate the turn, read its chat memory and build the model context."""
        thread_id = config.get("configurable", {}).get("thread_id")
        turn = parse_turn_input(state, runtime.context, thread_id, routes)
        degraded = False
        try:
            store = await memory.aget()
            stored = await store.aload(turn.session_id, turn.conversation_id)
        except Exception:
            logger.exception("reading chat memory failed; answering without it")
            stored, degraded = ThreadState(), True
        context = build_context(stored, turn.text, system_prompt=system_prompt)
        emit("route", route=turn.route)
        return {
            "message": None,
            "mode": None,
            "session_id": turn.session_id,
            "conversation_id": turn.conversation_id,
            "turn_id": uuid.uuid4().hex,
            "user_text": turn.text,
            "route": turn.route,
            "tools_allowed": turn.tools_allowed,
            "turn_messages": context,
            "context_size": len(context) - 1,
            "messages": [],
            "answer": "",
            "status": "running",
            "memory_written": False,
            "compaction": CompactionStatus.SKIPPED.value,
            "degraded": degraded,
            "hydration": None,
            "memory_messages": len(stored.messages),
            "memory_summary": stored.summary,
            "memory_pins": list(stored.pinned_decisions),
            "workflow_text": "",
            "workflow_status": "",
        }

    return load_memory


def used_tools(messages: list[AnyMessage]) -> bool:
    """Whether this turn ran any tool."""
    return any(isinstance(m, ToolMessage) for m in messages)


WORKFLOW_STATUSES = {
    "completed": TurnStatus.COMPLETED,
    "blocked": TurnStatus.BLOCKED,
    "rejected": TurnStatus.CANCELLED,
}
WORKFLOW_ADAPTERS: dict[Route, Callable[..., FinalTurn]] = {
    Route.TASKLIST: tasklist_turn,
    Route.DELIVERY: delivery_turn,
}


def final_turn(state: AgentState) -> FinalTurn:
    """The turn's user-visible outcome, with stable message ids derived from the turn id.

    Chat and tool: only the last assistant message counts, and only if it is not a
    tool request; tool calls and results never reach memory. Workflows: the goal or
    request and the final text; `rejected` and `failed` runs are never written.
    """
    ids = {
        "user_message_id": f"{state['turn_id']}-u",
        "assistant_message_id": f"{state['turn_id']}-a",
    }
    route = Route(state["route"])
    if route in WORKFLOW_ADAPTERS:
        status = WORKFLOW_STATUSES.get(state.get("workflow_status", ""), TurnStatus.FAILED)
        adapter = WORKFLOW_ADAPTERS[route]
        return adapter(state["user_text"], state.get("workflow_text", ""), status, **ids)
    messages = state.get("turn_messages", [])
    final = final_ai_message(messages)
    answered = final is not None and bool(message_text(final))
    status = TurnStatus.COMPLETED if answered else TurnStatus.FAILED
    if used_tools(messages):
        return tool_turn(state["user_text"], messages, status, **ids)
    # an explicit tool mode whose model answered without a tool keeps its route
    return replace(chat_turn(state["user_text"], final or "", status, **ids), route=route)


def make_finalize(memory: Lazy[ConversationMemory]) -> Node:
    """Build `finalize`: write the turn's final text to chat memory, once."""

    async def finalize(state: AgentState) -> dict[str, Any]:
        """Write the user's text and the final answer to the conversation's memory."""
        turn = final_turn(state)
        # a workflow's user sees its whole text; memory may keep a truncated copy
        answer = state.get("workflow_text") or turn.assistant_text or NO_ANSWER
        result: dict[str, Any] = {
            # the run thread keeps this turn's own messages (question, tool calls and
            # results, answer); the memory context before them lives in chat memory
            "turn_messages": state.get("turn_messages", [])[state.get("context_size", 0) :],
            "route": turn.route.value,
            "status": turn.status.value,
            "answer": answer,
            "messages": [HumanMessage(content=turn.user_text), AIMessage(content=answer)],
        }
        session_id, conversation_id = state["session_id"], state["conversation_id"]
        emit_memory("write", "started")
        try:
            store = await memory.aget()
            write = await store.awrite_turn(session_id, conversation_id, turn)
        except Exception:
            logger.exception("writing the turn to chat memory failed")
            emit_memory("write", "failed")
            emit_answer(result, memory_written=False, degraded=True)
            return {**result, "degraded": True}
        emit_answer(result, memory_written=write.written, degraded=False)
        emit_memory(
            "write",
            "succeeded" if write.written else "skipped",
            reason=write.skipped.value if write.skipped else None,
            messages=len(write.state.messages),
        )
        return {
            **result,
            "memory_written": write.written,
            "memory_messages": len(write.state.messages),
            "hydration": hydration_dto(conversation_id, write.state),
        }

    return finalize


def emit_answer(result: dict[str, Any], **fields: Any) -> None:
    """Stream the turn's outcome as soon as it exists (`answer` event): a client still
    gets it if storing the run's last checkpoint fails afterwards."""
    emit(
        "answer",
        answer=result["answer"],
        status=result["status"],
        route=result["route"],
        **fields,
    )


async def route_after_finalize(state: AgentState) -> Literal["compact", "__end__"]:
    """Compact only when the memory holds more than eight messages."""
    return "compact" if state.get("memory_messages", 0) > MAX_RECENT_MESSAGES else "__end__"


def make_compact(
    memory: Lazy[ConversationMemory],
    model: Lazy[BaseChatModel],
    method: str | None = None,
) -> Node:
    """Build `compact`: fold older turns into the summary and pinned decisions."""

    async def compact(state: AgentState) -> dict[str, Any]:
        """Run the compaction model (structured output) over the conversation's memory."""
        session_id, conversation_id = state["session_id"], state["conversation_id"]
        emit_memory("compact", "started")
        try:
            store = await memory.aget()
            # nostream: the compaction model's raw output is memory internals, not answer tokens
            compactor = structured_compactor(await model.aget(), method).with_config(
                tags=[TAG_NOSTREAM]
            )
            result = await store.acompact(session_id, conversation_id, compactor)
        except Exception:
            logger.exception("compaction failed before reaching the model")
            emit_memory("compact", "failed")
            return {"compaction": CompactionStatus.FAILED.value, "degraded": True}
        emit_memory(
            "compact",
            result.status.value,
            summaryChars=result.summary_chars,
            pinnedDecisions=result.pinned_count,
        )
        return {
            "compaction": result.status.value,
            "memory_messages": len(result.state.messages),
            "hydration": hydration_dto(conversation_id, result.state),
        }

    return compact
