"""A turn admitted to run (`Turn`): the conversation's busy lock it holds, how often its
run thread is checkpointed, and the checks that admit a resume or a recovery."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver

from agent.errors import NOTHING_TO_RECOVER, WAITING_FOR_REVIEW, InvalidRequest
from graphs.request import WORKFLOW_ROUTES, TurnRequest
from graphs.state import Context
from memory.conversations import ConversationMemory
from memory.errors import LockTimeout
from memory.ids import turn_lock_key


@dataclass(frozen=True)
class Turn:
    """A turn admitted to run: who, which conversation, its request and run config."""

    session_id: str
    conversation_id: str
    request: TurnRequest | None
    """None for a resume or a recovery: the run continues where it stopped."""
    config: RunnableConfig
    context: Context

    @property
    def input(self) -> dict[str, str]:
        """The graph input of a new turn (its request travels validated in `context`)."""
        assert self.request is not None
        return {"message": self.request.text}


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
    if turn.request is None or turn.request.route in WORKFLOW_ROUTES:
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


def unfinished_runs(
    graph: Any, memory: ConversationMemory, session_id: str, conversation_ids: Sequence[str]
) -> set[str]:
    """The conversations whose last run stopped before its end, read in two queries: a
    workflow's status reads `interrupted` (a task list) or `running` (a delivery) until
    it finishes; of those, the ones not waiting for a review (or whose review was
    answered before a crash) and not running right now."""
    threads = {memory.run_thread(session_id, cid): cid for cid in conversation_ids}
    store = memory.threads
    statuses = store.run_channel_values(list(threads), "status")
    open_runs = [t for t, status in statuses.items() if status in ("interrupted", "running")]
    routes = store.run_channel_values(open_runs, "route") if open_runs else {}
    stopped: set[str] = set()
    for thread_id in open_runs:
        if routes.get(thread_id) not in WORKFLOW_ROUTES:
            continue
        cid = threads[thread_id]
        try:
            with busy_lock(memory, session_id, cid):  # held while a run goes on
                state = graph.get_state({"configurable": {"thread_id": thread_id}})
        except LockTimeout:
            continue
        if is_unfinished(state, answered=review_answered(store.checkpointer, state)):
            stopped.add(cid)
    return stopped
