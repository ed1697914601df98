"""The nodes that open and close a turn: `load_memory` and `finalize`.

`load_memory` sends the turn to its route (with `Command`, no router). `finalize` is
the only writer of turns; in the same transaction it records the upkeep the turn
leaves owed (an extraction when a completed turn's user text has a cue and long-term
memory is on; a compaction past eight messages), then ends the run, or goes on to
`upkeep` when the run pays it inline (`graphs.upkeep`). A memory failure never fails
the turn: it is logged, the answer is still returned, and the result says `degraded`.

The nodes are plain functions: storage calls are direct, so a turn run with
`graph.invoke` makes none of them through a thread, and under `graph.astream`
LangGraph runs each node in a worker thread, one hop per node.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.events import emit, emit_memory
from graphs.prompts import AGENT_SYSTEM_PROMPT, NO_ANSWER
from graphs.request import (
    ROUTE_UNAVAILABLE,
    WORKFLOW_ROUTES,
    InvalidRequest,
    TurnRequest,
    check_id,
    check_text,
    graph_message,
    parse_request,
)
from graphs.resources import Lazy
from graphs.state import (
    FRESH_TURN,
    AgentState,
    AgentUpdate,
    Context,
    MemoryContext,
)
from graphs.upkeep import Node
from memory import (
    ConversationMemory,
    ConversationNotFound,
    ThreadState,
    hydration_dto,
)
from memory.archive import Recall
from memory.budget import ContextBudget
from memory.context import context_parts
from memory.longterm import LongTermMemory, MemoryItem, has_cue
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


def checked_request(value: Mapping[str, Any], routes: frozenset[str]) -> TurnRequest:
    """A request handed in already validated (by `ChatAgent`): its shape is checked, its
    route is not decided again."""
    route = value.get("route")
    if route not in routes:
        raise InvalidRequest(ROUTE_UNAVAILABLE.format(route=route))
    if not isinstance(value.get("tools_allowed"), bool) or not isinstance(
        value.get("create"), bool
    ):
        raise InvalidRequest("request must carry tools_allowed and create flags")
    return TurnRequest(
        text=check_text(value.get("text")),
        route=route,
        tools_allowed=value["tools_allowed"],
        create=value["create"],
    )


def resolve_turn(
    state: AgentState,
    context: Context | None,
    thread_id: str | None,
    routes: frozenset[str],
    budget: ContextBudget | None = None,
    system_prompt: str | None = None,
) -> tuple[str, str, TurnRequest, bool]:
    """(session id, conversation id, request, admitted) of a run's input.

    A request from `ChatAgent` was admitted before the run: `load_memory` checks that
    its conversation is still the session's. A raw input (Studio, the SDK) is
    validated here, and its conversation is admitted by `load_memory`: under
    `langgraph dev` a thread starts a conversation.

    Raises:
        InvalidRequest: naming what is wrong; nothing has been read or written.
    """
    context = context or Context()
    session_id = check_id(state.get("session_id") or context.session_id, "session id")
    conversation_id = check_id(
        state.get("conversation_id") or context.conversation_id or thread_id, "conversation id"
    )
    given = state.get("request")
    if given:
        return session_id, conversation_id, checked_request(given, routes), True
    mode = state.get("mode") or context.mode
    _, request = parse_request(
        graph_message(state),
        mode=mode,
        create_conversation=True,
        routes=routes,
        budget=budget,
        system_prompt=system_prompt,
    )
    return session_id, conversation_id, request, False


def input_message_id(state: AgentState) -> str | None:
    """The id of Studio's input message, reused so that a `messages` stream that saw it
    as input does not show it again as output."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last.id if isinstance(last, HumanMessage) and last.id else None


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
        degraded = False
        try:
            stored = memory.get().open(session_id, conversation_id, admit=not admitted)
        except ConversationNotFound:
            raise  # deleted since it was admitted, or never the session's
        except Exception:
            logger.exception("reading chat memory failed; answering without it")
            stored, degraded = ThreadState(), True
        items, recall_failed = recalled(long_term, session_id, request["text"])
        route = request["route"]
        earlier: Recall | None = None
        if route not in WORKFLOW_ROUTES and not degraded:  # a workflow reads no context
            earlier, archive_failed = recalled_lines(
                memory.get(), session_id, conversation_id, request["text"], stored
            )
            recall_failed = recall_failed or archive_failed
        turn_id = uuid.uuid4().hex
        emit("route", route=route)
        if earlier is not None and earlier.lines:
            emit_memory("recall", "succeeded", lines=earlier.ids)
        update: AgentUpdate = {
            **FRESH_TURN,
            "session_id": session_id,
            "conversation_id": conversation_id,
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
            # kept in pieces: each model call of the turn fits them with its own messages
            "context": MemoryContext(
                context_parts(
                    stored, None, system_prompt=system_prompt, long_term=items, recalled=earlier
                ),
                budget,
            ),
            "degraded": degraded or recall_failed,
            "memory_summary": stored.summary,
            "memory_pins": list(stored.pinned_decisions),
        }
        return Command(update=update, goto=route)

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


def visible_messages(state: AgentState, answer: str) -> list[AnyMessage]:
    """The turn as Studio's chat view shows it: the user's message and the answer, with
    the ids they already had, so that a `messages` stream shows each one once."""
    turn_messages = state.get("turn_messages") or []
    user = turn_messages[0] if turn_messages else HumanMessage(content=state["user_text"])
    final = final_ai_message(turn_messages)
    answer_id = final.id if final is not None else f"{state['turn_id']}-a"
    return [user, AIMessage(content=answer, id=answer_id)]


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
        owed = not gone and write.state.owes_upkeep
        pending: AgentUpdate = {
            "upkeep": "pending" if owed else "done",
            "compaction": "pending" if owed and write.state.compaction_owed else "skipped",
        }
        emit_memory(
            "write",
            "succeeded" if write.written else "skipped",
            reason=write.skipped.value if write.skipped else None,
            messages=len(write.state.messages),
            # the conversations this turn's listing pushed out, named for the notice
            **({"pruned": list(write.pruned_titles)} if write.pruned_titles else {}),
        )
        update: AgentUpdate = {
            **result,
            **pending,
            "memory_written": write.written,
            "conversation_deleted": gone,
            "memory_state": write.state,
            "hydration": None if gone else hydration_dto(conversation_id, write.state),
        }
        inline = (runtime.context or Context()).upkeep == "inline"
        return Command(update=update, goto="upkeep" if owed and inline else END)

    return finalize
