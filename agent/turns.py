"""Turn results (`TurnResult`), what a running turn streams, and its bookkeeping."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from agent.errors import NOTHING_TO_RECOVER, TURN_FAILED, WAITING_FOR_REVIEW, InvalidRequest
from agent.streaming import custom_event, token_event
from graphs.outcome import OUTCOME_KEY
from graphs.request import WORKFLOW_ROUTES, TurnRequest
from graphs.state import Context
from memory import ConversationMemory
from memory.ids import turn_lock_key


@dataclass(frozen=True)
class TurnResult:
    """The outcome of a turn.

    Attributes:
        conversation_id: the conversation the turn ran in (new for a draft).
        status: completed | blocked (both written to memory) | interrupted (waiting
            for a review) | cancelled (a rejected workflow) | failed.
        route: chat | tool | tasklist | delivery.
        text: the final user-visible text.
        interrupt: the pending review payload when `status` is interrupted.
        memory_written: whether the turn was written to chat memory.
        compaction: skipped | pending (the turn's upkeep runs after it) | succeeded |
            failed | fallback.
        degraded: memory storage failed; the answer was still delivered.
        conversation_deleted: the conversation was deleted (or pruned) while the turn
            ran: it stays deleted, and the turn wrote nothing.
        remembered: texts of the long-term items the turn added or said again (empty
            while its upkeep is pending).
        upkeep: pending (memory upkeep runs after the turn: `memory` events and the
            hydration DTO tell its outcome) | done | failed.
    """

    conversation_id: str
    status: str
    route: str
    text: str
    interrupt: dict[str, Any] | None = None
    memory_written: bool = False
    compaction: str = "skipped"
    degraded: bool = False
    conversation_deleted: bool = False
    remembered: tuple[str, ...] = ()
    upkeep: str = "done"

    @classmethod
    def from_output(cls, conversation_id: str, output: dict[str, Any]) -> TurnResult:
        """The result of a run from the graph's output (or its pending interrupt)."""
        interrupts = output.get("__interrupt__") or ()
        if interrupts:
            payload = getattr(interrupts[0], "value", interrupts[0])
            return cls(
                conversation_id=conversation_id,
                status="interrupted",
                route=str(output.get("route", "")),
                text="",
                interrupt=payload if isinstance(payload, dict) else {"value": payload},
            )
        return cls(
            conversation_id=conversation_id,
            status=str(output.get("status", "failed")),
            route=str(output.get("route", "")),
            text=str(output.get("answer", "")),
            memory_written=bool(output.get("memory_written")),
            compaction=str(output.get("compaction", "skipped")),
            degraded=bool(output.get("degraded")),
            conversation_deleted=bool(output.get("conversation_deleted")),
            remembered=tuple(output.get("remembered") or ()),
            upkeep=str(output.get("upkeep", "done")),
        )

    def to_dict(self) -> dict[str, Any]:
        """camelCase form for HTTP and stream clients."""
        data = asdict(self)
        return {
            "conversationId": data["conversation_id"],
            "status": data["status"],
            "route": data["route"],
            "text": data["text"],
            "interrupt": data["interrupt"],
            "memoryWritten": data["memory_written"],
            "compaction": data["compaction"],
            "degraded": data["degraded"],
            "conversationDeleted": data["conversation_deleted"],
            "remembered": list(data["remembered"]),
            "upkeep": data["upkeep"],
        }


@dataclass
class TurnRecorder:
    """Follows what a run streams: the client events it makes, and the turn's result.

    Attributes:
        conversation_id: the turn's conversation.
        output: the run's latest top-level state (`values`), interrupts included.
    """

    conversation_id: str
    output: dict[str, Any] = field(default_factory=dict)
    answer: dict[str, Any] = field(default_factory=dict)
    """The outcome `finalize` recorded (`graphs.outcome.OUTCOME_KEY`)."""

    def config(self, config: RunnableConfig) -> RunnableConfig:
        """`config` with this recorder's outcome dict, for `finalize` to fill."""
        self.answer = {}
        return {**config, "configurable": {**config["configurable"], OUTCOME_KEY: self.answer}}

    def event(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> dict[str, Any] | None:
        """The client event for one stream part, if any; records the turn on the way:
        `values` and `updates` of the main graph, and `finalize`'s outcome."""
        if mode == "messages":
            return token_event(namespace, cast(tuple[Any, dict[str, Any]], chunk))
        if mode == "custom":
            return custom_event(chunk)
        if mode == "values" and not namespace:
            self.output.update(cast(dict[str, Any], chunk))
        return None

    @property
    def answered(self) -> bool:
        """Whether the run got as far as the answer (`finalize` ran)."""
        return bool(self.answer)

    def result(self, *, crashed: bool = False) -> TurnResult:
        """The turn's result. When the run raised (`crashed`) after the answer existed,
        as when storing its last checkpoint failed, the answer is delivered degraded;
        before it, the turn failed with a safe message."""
        if not crashed:
            return TurnResult.from_output(self.conversation_id, self.output)
        if self.answered:
            outcome = {**self.output, **self.answer, "degraded": True}
            return TurnResult.from_output(self.conversation_id, outcome)
        return TurnResult(self.conversation_id, "failed", "", TURN_FAILED)


Durability = Literal["exit", "sync"]
CHAT_DURABILITY: Durability = "exit"
"""A chat or tool turn's run thread is checkpointed when the turn ends: that is the only
state anyone reads, and it costs one checkpoint write per turn."""
WORKFLOW_DURABILITY: Durability = "sync"
"""A task list or delivery is checkpointed after every step (each task, each reviewer),
before the next starts: a run stopped by a crash resumes where it stopped
(`ChatAgent.recover`), and finished work is never done again."""


def durability(turn: Turn) -> Durability:
    """How often the turn's run thread is checkpointed: after every step for a workflow
    (a resume or a recovery continues one), once at the end for chat and tool turns."""
    if turn.request is None or turn.request["route"] in WORKFLOW_ROUTES:
        return WORKFLOW_DURABILITY
    return CHAT_DURABILITY


RESUME_CHANNEL = "__resume__"
"""Where LangGraph keeps a review's answer, beside the checkpoint of the step that asked
for it, until that step finishes."""


def review_answered(saver: BaseCheckpointSaver[Any], state: Any) -> bool:
    """Whether the review a run thread's state waits for was answered already: the run
    was resumed and then stopped (a crash) before the reviewed step finished. Such a
    run is unfinished, not waiting: recovering it goes on with the recorded answer."""
    if not state.interrupts:
        return False
    found = saver.get_tuple(state.config)
    return found is not None and any(
        channel == RESUME_CHANNEL for _, channel, _ in found.pending_writes or ()
    )


def is_unfinished(state: Any, *, answered: bool) -> bool:
    """Whether a run thread's state is a run a crash stopped: it has a next step, and it
    waits for no review (or for one already `answered`)."""
    return bool(state.next) and (not state.interrupts or answered)


def unfinished_check(state: Any, *, answered: bool = False) -> None:
    """Raise unless a run thread's state is a run a crash stopped (not one waiting for a
    review, not a finished one); `answered`: its review was answered before the crash."""
    if state.interrupts and not answered:
        raise InvalidRequest(WAITING_FOR_REVIEW)
    if not state.next:
        raise InvalidRequest(NOTHING_TO_RECOVER)


def busy_lock(
    memory: ConversationMemory, session_id: str, conversation_id: str
) -> AbstractContextManager[None]:
    """Taken (never waited for) while a turn runs in the conversation, in any process:
    a second turn is refused (`ConversationBusy`), and a run holding it is not stopped."""
    key = turn_lock_key(memory.memory_thread(session_id, conversation_id))
    return memory.threads.locks.hold(key, timeout=0)


@dataclass(frozen=True)
class Turn:
    """A turn admitted to run: who, which conversation, its request and run config."""

    session_id: str
    conversation_id: str
    request: TurnRequest | None
    """None for a resume or a recovery: the run continues where it stopped."""
    config: RunnableConfig
    context: Context
