"""`finalize`: the node that closes a turn, the only writer of turns.

It writes the turn's final text to chat memory and, in the same transaction, records
the upkeep the turn leaves owed (an extraction when a completed turn's user text has
a cue and long-term memory is on; a compaction past eight messages), then ends the
run, or goes on to `upkeep` when the run pays it inline (`graphs.upkeep`). A memory
failure never fails the turn: it is logged, the answer is still returned, and the
result says `degraded`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from langchain_core.messages import AnyMessage, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.chat_view import visible_messages
from graphs.events import emit_memory
from graphs.prompts import NO_ANSWER
from graphs.resources import Lazy
from graphs.state import AgentState, AgentUpdate, Context, Node
from memory import hydration_dto
from memory.conversations import ConversationMemory, TurnWrite
from memory.longterm import has_cue
from memory.turns import (
    FinalTurn,
    Route,
    SkipReason,
    TurnStatus,
    chat_turn,
    delivery_turn,
    final_ai_message,
    message_text,
    tasklist_turn,
    tool_turn,
)

logger = logging.getLogger(__name__)


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


def owed_update(write: TurnWrite) -> AgentUpdate:
    """What a written turn leaves owed, as the caller sees it: the upkeep and the
    compaction `pending` until the upkeep pays them."""
    owed = write.skipped is not SkipReason.GONE and write.state.owes_upkeep
    return {
        "upkeep": "pending" if owed else "done",
        "compaction": "pending" if owed and write.state.compaction_owed else "skipped",
    }


def emit_written(write: TurnWrite) -> None:
    """The `memory` event of a turn's write: written or skipped, and why."""
    emit_memory(
        "write",
        "succeeded" if write.written else "skipped",
        reason=write.skipped.value if write.skipped else None,
        messages=len(write.state.messages),
        # the conversations this turn's listing pushed out, named for the notice
        **({"pruned": list(write.pruned_titles)} if write.pruned_titles else {}),
    )


def make_finalize(memory: Lazy[ConversationMemory], *, remember: bool = False) -> Node:
    """Build `finalize`: write the turn's final text to chat memory, once.

    Args:
        memory: the chat memory.
        remember: whether the graph has a `remember` node (long-term memory on).
    """

    def finalize(state: AgentState, runtime: Runtime[Context]) -> Command[Any]:
        """Write the user's text and the final answer to the conversation's memory, with
        the upkeep it leaves owed (an extraction of what a completed turn's user said
        about themselves, only when it has a cue; a compaction past eight messages)."""
        turn = final_turn(state)
        # a workflow's user sees its whole text; memory may keep a truncated copy
        answer = state.get("workflow_text") or turn.assistant_text or NO_ANSWER
        result: AgentUpdate = {
            "route": cast(Any, turn.route.value),
            "status": turn.status.value,
            "answer": answer,
            "messages": visible_messages(state, answer),
        }
        session_id, conversation_id = state["session_id"], state["conversation_id"]
        completed = turn.status is TurnStatus.COMPLETED
        owe_remember = remember and completed and has_cue(state["user_text"])
        emit_memory("write", "started")
        try:
            write = memory.get().write_turn(
                session_id, conversation_id, turn, owe_remember=owe_remember
            )
        except Exception:
            logger.exception("writing the turn to chat memory failed")
            emit_memory("write", "failed")
            return Command(update={**result, "degraded": True}, goto=END)
        gone = write.skipped is SkipReason.GONE
        pending = owed_update(write)
        emit_written(write)
        update: AgentUpdate = {
            **result,
            **pending,
            "memory_written": write.written,
            "conversation_deleted": gone,
            "memory_state": write.state,
            "hydration": None if gone else hydration_dto(conversation_id, write.state),
        }
        inline = (runtime.context or Context()).upkeep == "inline"
        owed = pending["upkeep"] == "pending"
        return Command(update=update, goto="upkeep" if owed and inline else END)

    return finalize
