"""The two memory nodes of a turn: `load_memory` opens it, `finalize` closes it.

`load_memory` reads the conversation's memory with its registry in one query, the user's
long-term items and the lines the archive recalls, builds the model context and sends
the turn to its route. `finalize`, the only writer of turns, writes the turn and, in
the same transaction, the upkeep it leaves owed. A memory failure never fails the turn:
it is logged, the answer stands, and the result says `degraded`. The nodes are plain
functions: under `graph.astream` LangGraph runs each in a worker thread.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, cast

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.events import emit, emit_memory
from graphs.prompts import AGENT_SYSTEM_PROMPT, NO_ANSWER
from graphs.request import (
    WORKFLOW_ROUTES,
    TurnRequest,
    graph_message,
    parse_request,
)
from graphs.state import FRESH_TURN, AgentState, Context, MemoryContext, turn_ids
from memory import ConversationNotFound, ThreadState
from memory.analysis import UserText, read
from memory.archive import Recall
from memory.context import ContextBudget, context_parts
from memory.conversations import ConversationMemory
from memory.longterm.recall import Recalled
from memory.longterm.store import LongTermMemory
from memory.redaction import Substitute, redact_value, repeats_forgotten
from memory.session_documents import Snapshot
from memory.turn_write import TurnWrite
from memory.turns import (
    FinalTurn,
    Route,
    SkipReason,
    TurnStatus,
    final_ai_message,
    truncate_report,
)

logger = logging.getLogger(__name__)

WORKFLOW_STATUSES = {
    "completed": TurnStatus.COMPLETED,
    "blocked": TurnStatus.BLOCKED,
    "rejected": TurnStatus.CANCELLED,
}


def final_turn(state: AgentState) -> FinalTurn:
    """The turn's user-visible outcome, with stable message ids derived from the turn id.

    Chat and tool: only the last message counts, and only if it is an assistant message
    that asks for no tool; tool calls and results never reach memory (a turn that ran a
    tool is a tool turn).
    Workflows: the request and the final text (a delivery's report cut to the memory
    limit); `rejected` and `failed` runs are never written.
    """
    route = Route(state["route"])
    if route in (Route.TASKLIST, Route.DELIVERY):
        text = state.get("workflow_text", "")
        text = truncate_report(text) if route is Route.DELIVERY else text
        status = WORKFLOW_STATUSES.get(state.get("workflow_status", ""), TurnStatus.FAILED)
    else:
        messages = state.get("turn_messages") or []
        final = final_ai_message(messages)
        text = final.text.strip() if final is not None else ""
        status = TurnStatus.COMPLETED if text else TurnStatus.FAILED
        route = Route.TOOL if any(isinstance(m, ToolMessage) for m in messages) else route
    return FinalTurn(
        route=route,
        status=status,
        user_text=state["user_text"],
        assistant_text=text,
        user_message_id=f"{state['turn_id']}-u",
        assistant_message_id=f"{state['turn_id']}-a",
    )


def given(state: AgentState) -> list[str]:
    """What the turn's model was given besides the user's message (remembered items,
    recalled lines, pins, summary and recent messages, tool results): an answer that
    repeats it is archived without indexing the repetition."""
    memory = state.get("context")
    parts = memory.parts if isinstance(memory, MemoryContext) else None
    turn = state.get("turn_messages") or []
    texts = [m.text.strip() for m in turn if isinstance(m, ToolMessage)]
    if parts is not None:
        texts += [item.text for item in parts.long_term]
        texts += [line.text for group in parts.recalled for line in group]
        texts += [b.text.strip() for b in (parts.pins, parts.summary) if b is not None]
        texts += [m.text.strip() for m in parts.recent]
    return texts


SAID_ONCE: dict[str, Any] = {"user_text": "", "turn_messages": [], "workflow_text": ""}
"""The working copies of the turn's texts, emptied by `finalize`: a finished run's
checkpoint holds the user's text and the answer once each, in `messages` (Studio's chat
view; `answer` is the run's output only), so a forgetting has less to chase."""


def visible_messages(state: AgentState, answer: str) -> list[AnyMessage]:
    """The turn as Studio's chat view shows it: the user's message and the answer, with
    the ids they already had, so that a `messages` stream shows each one once."""
    turn_messages = state.get("turn_messages") or []
    user = turn_messages[0] if turn_messages else HumanMessage(content=state["user_text"])
    final = final_ai_message(turn_messages)
    answer_id = final.id if final is not None else f"{state['turn_id']}-a"
    return [user, AIMessage(content=answer, id=answer_id)]


def _input_message_id(state: AgentState) -> str | None:
    """The id of Studio's input message, reused so that a `messages` stream that saw it
    as input does not show it again as output."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    return last.id if isinstance(last, HumanMessage) and last.id else None


def _emit_written(write: TurnWrite) -> None:
    """The `memory` event of a turn's write: written or skipped, and why."""
    emit_memory(
        "write",
        "succeeded" if write.written else "skipped",
        reason=write.skipped.value if write.skipped else None,
        messages=len(write.state.messages),
        # the conversations this turn's listing pushed out, named for the notice
        **({"pruned": list(write.pruned_titles)} if write.pruned_titles else {}),
    )


def _without(forgotten: Sequence[str], result: dict[str, Any]) -> dict[str, Any]:
    """The turn's outcome without the texts of items forgotten while it ran, as its write
    took them out of memory (the run checkpoint keeps what it is told last, and holds
    the turn's texts only here: `SAID_ONCE`)."""
    redact = repeats_forgotten(forgotten)
    if redact is None:
        return result
    return {
        **result,
        "answer": redact(result["answer"]),
        "messages": [_forget_in(message, redact) for message in result["messages"]],
    }


def _forget_in(message: AnyMessage, redact: Substitute) -> AnyMessage:
    """`message` with `redact` applied to its content and its tool calls' arguments."""
    update: dict[str, Any] = {"content": redact_value(message.content, redact)}
    if isinstance(message, AIMessage) and message.tool_calls:
        update["tool_calls"] = [
            {**call, "args": redact_value(call["args"], redact)} for call in message.tool_calls
        ]
    return message.model_copy(update=update)


@dataclass(eq=False)
class TurnNodes:
    """`load_memory` and `finalize` over the chat and long-term memory (None: no recall)."""

    memory: ConversationMemory
    routes: frozenset[str]
    _: KW_ONLY
    long_term: LongTermMemory | None = None
    budget: ContextBudget | None = None
    remembers: bool = False
    """Whether the upkeep extracts long-term items (a completed turn worth it owes one)."""
    explicit_only: bool = False
    """The upkeep reads explicit requests alone: only a turn holding one owes an extraction."""

    def _request(self, state: AgentState, context: Context) -> TurnRequest:
        """The turn's request: the one the caller validated, else the raw input's."""
        if isinstance(context.request, TurnRequest):
            return context.request
        _, request = parse_request(
            graph_message(state),
            mode=state.get("mode") or context.mode,
            create_conversation=True,
            routes=self.routes,
            budget=self.budget,
            system_prompt=AGENT_SYSTEM_PROMPT,
        )
        return request

    def _stored(self, session_id: str, conversation_id: str, admit: bool) -> Snapshot | None:
        """The conversation's memory and its registry (None: reading failed, logged)."""
        try:
            return self.memory.memory_for_turn(session_id, conversation_id, admit=admit)
        except ConversationNotFound:
            raise  # deleted since it was admitted, or never the session's
        except Exception:
            logger.exception("reading chat memory failed; answering without it")
            return None

    def _items(self, session_id: str, text: str) -> Recalled | None:
        """What this turn reads of the long-term items (None: reading them failed, logged)."""
        if self.long_term is None:
            return Recalled([], frozenset(), ())
        try:
            return self.long_term.recall_with_changes(session_id, text)
        except Exception:
            logger.exception("recalling long-term memory failed; answering without it")
            return None

    def _lines(
        self,
        session_id: str,
        conversation_id: str,
        text: str,
        stored: ThreadState,
        changed: frozenset[str],
    ) -> Recall | None:
        """The earlier lines this turn recalls, never one that a later statement changed
        (None: reading them failed, logged)."""
        try:
            return self.memory.recall(
                session_id, conversation_id, text, stored, exclude_message_ids=changed
            )
        except Exception:
            logger.exception("recalling earlier conversations failed; answering without them")
            return None

    def load_memory(self, state: AgentState, runtime: Runtime[Context]) -> Command[Any]:
        """Read the turn's memory, build the model context, and go to the turn's route
        (decided once, when the request was validated)."""
        context = runtime.context or Context()
        session_id, conversation_id = turn_ids(context)
        request = self._request(state, context)
        text, route = request.text, request.route
        # a request the caller validated was admitted by it; a raw input starts its thread
        found = self._stored(session_id, conversation_id, admit=context.request is None)
        stored = found.memory if found is not None else ThreadState()
        profile = self._items(session_id, text)
        recall, recall_failed = None, False
        if route not in WORKFLOW_ROUTES and found is not None:  # a workflow reads no context
            changed = profile.changed if profile is not None else frozenset()
            recall = self._lines(session_id, conversation_id, text, stored, changed)
            recall_failed = recall is None
        # a chat turn that may ask for a tool announces its route once the model has chosen
        if not (route == "chat" and request.tools_allowed and "tool" in self.routes):
            emit("route", route=route)
        if recall is not None and recall.lines:
            emit_memory("recall", "succeeded", lines=recall.ids)
        turn_id = uuid.uuid4().hex
        # kept in pieces: each model call of the turn fits them with its own messages
        parts = context_parts(
            stored,
            None,
            system_prompt=AGENT_SYSTEM_PROMPT,
            long_term=profile.items if profile is not None else (),
            recalled=recall,
        )
        update = {
            **FRESH_TURN,
            "conversation_id": conversation_id,
            "turn_id": turn_id,
            "user_text": text,
            "route": route,
            "tools_allowed": request.tools_allowed,
            # a task list stops for its review before it runs anything: seen from
            # outside, its state is paused (or stopped by a crash) until it finishes
            "status": "interrupted" if route == "tasklist" else "running",
            "turn_messages": [HumanMessage(content=text, id=_input_message_id(state) or turn_id)],
            "said": read(text),
            "context": MemoryContext(
                parts, self.budget, profile.held if profile is not None else (), found
            ),
            "degraded": found is None or profile is None or recall_failed,
        }
        return Command(update=update, goto=route)

    def _owes(self, said: UserText) -> bool:
        """Whether a completed turn's text owes an extraction (structure and cost)."""
        return said.explicit if self.explicit_only else said.says_something or said.explicit

    def finalize(self, state: AgentState, runtime: Runtime[Context]) -> Command[Any]:
        """Write the user's text and the final answer to the conversation's memory, with
        the upkeep it leaves owed (an extraction when a completed turn's text may hold
        something about the user; a compaction past eight messages)."""
        turn = final_turn(state)
        # a workflow's user sees its whole text; memory may keep a truncated copy
        answer = state.get("workflow_text") or turn.assistant_text or NO_ANSWER
        session_id, conversation_id = turn_ids(runtime.context)
        result: dict[str, Any] = {
            "conversation_id": conversation_id,  # a resumed run's output names it too
            "route": cast(Any, turn.route.value),
            "status": turn.status.value,
            "answer": answer,
            "messages": visible_messages(state, answer),
            **SAID_ONCE,
        }
        said = state.get("said") or UserText()
        completed = turn.status is TurnStatus.COMPLETED
        memory_context = state.get("context") or MemoryContext()
        emit_memory("write", "started")
        try:
            write = self.memory.write_turn(
                session_id,
                conversation_id,
                turn,
                owe_remember=self.remembers and completed and self._owes(said),
                kept_user_text=said.kept or None,
                held=memory_context.held,
                context=given(state),
                read=memory_context.read,
            )
        except Exception:
            logger.exception("writing the turn to chat memory failed")
            emit_memory("write", "failed")
            return Command(update={**result, "degraded": True}, goto=END)
        _emit_written(write)
        result = _without(write.forgotten, result)
        gone = write.skipped is SkipReason.GONE
        owed = not gone and write.state.owes_upkeep
        update = {
            **result,
            "upkeep": "pending" if owed else "done",
            "compaction": "pending" if owed and write.state.compaction_owed else "skipped",
            "memory_written": write.written,
            "conversation_deleted": gone,
        }
        inline = (runtime.context or Context()).upkeep == "inline"
        return Command(update=update, goto="upkeep" if owed and inline else END)
