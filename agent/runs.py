"""How a turn runs (`TurnRunner`): one async path on the agent's own event loop for every
turn, resume and recovery, streamed or not, and what admits one (`Turn`, the busy lock,
its checkpoint durability, the checks of a resume or a recovery).

`_play` is that path: under the conversation's busy lock it admits the run, streams the
graph and concludes; the lock is released once `finalize` has committed, before `done`.
`stream` relays the events, `run` keeps only the result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import AbstractContextManager, aclosing
from dataclasses import dataclass
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StreamMode

from agent.client_events import AnswerTokens, ClientEvent, MemoryEvent
from agent.errors import (
    NOTHING_TO_RECOVER,
    NOTHING_TO_RESUME,
    TURN_FAILED,
    WAITING_FOR_REVIEW,
    ConversationBusy,
    InvalidRequest,
)
from agent.settings import RunHistory
from agent.turn_result import OUTPUT_MODES, TurnOutput, TurnResult
from agent.upkeep_runner import UpkeepRunner
from graphs.decisions import Validator, validate_decision
from graphs.request import WORKFLOW_ROUTES, TurnRequest
from graphs.state import Context
from memory import ConversationNotFound, LockTimeout
from memory.conversations import ConversationMemory
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
    graph_input: Any
    """A new turn's message, a resume's `Command` (checked under the busy lock), or None."""


Durability = Literal["exit", "sync"]
CHAT_DURABILITY: Durability = "exit"
"""A chat or tool turn's run thread is checkpointed when the turn ends: that is the only
state anyone reads, and it costs one checkpoint write per turn."""
WORKFLOW_DURABILITY: Durability = "sync"
"""A task list or delivery is checkpointed after every step (each task, each reviewer),
before the next starts: a run stopped by a crash resumes where it stopped
(`ChatAgent.recover`), and finished work is never done again."""


def durability(turn: Turn) -> Durability:
    """Every step for a workflow (a resume or a recovery continues one), else at the end."""
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
    """Whether a crash stopped the run: a next step, and no review waiting (unless `answered`)."""
    return bool(state.next) and (not state.interrupts or answered)


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
    """The conversations whose last workflow a crash stopped, read in two queries: its
    status reads `interrupted` (a task list) or `running` (a delivery) until it ends;
    of those, the ones not waiting for a review and not running right now."""
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


logger = logging.getLogger(__name__)

STREAM_MODES: tuple[StreamMode, ...] = ("messages", "custom", *OUTPUT_MODES)
"""What a streamed turn follows: answer tokens, status and memory events, its output."""
RESULT_MODES: tuple[StreamMode, ...] = OUTPUT_MODES
"""What a turn run for its result follows: its output alone. Without `custom`, a node's
status events cost nothing (LangGraph's writer is then a no-op), where each would
otherwise wake the loop from the node's worker thread for an event nobody reads."""


@dataclass(frozen=True, eq=False, kw_only=True)
class TurnRunner:
    """Runs admitted turns over the agent graph (compiled with the run threads'
    checkpointer); `run_history="latest"` prunes a finished run to its last checkpoint,
    `reviews` validate the decisions a resume carries."""

    graph: CompiledStateGraph[Any, Any, Any, Any]
    memory: ConversationMemory
    upkeep: UpkeepRunner
    run_history: RunHistory
    reviews: Mapping[str, Validator]

    def open(
        self,
        session_id: str,
        conversation_id: str,
        request: TurnRequest | None,
        resume: Command | None = None,
    ) -> Turn:
        """The turn to run in the conversation's run thread: a new one's `request`, else a
        resume's `Command` or a recovery (None); its upkeep is this runner's to run after it."""
        run_thread = self.memory.run_thread(session_id, conversation_id)
        context = Context(
            session_id=session_id,
            conversation_id=conversation_id,
            upkeep="deferred",
            request=request,
        )
        config: RunnableConfig = {"configurable": {"thread_id": run_thread}}
        graph_input = resume if request is None else {"message": request.text}
        return Turn(session_id, conversation_id, request, config, context, graph_input)

    async def run(self, turn: Turn) -> TurnResult:
        """Run a turn (a new one, a resume or a recovery) for its result; the upkeep it
        leaves owed starts after it. Raises as `ChatAgent.send` does."""
        output = TurnOutput()
        async with aclosing(self._play(turn, output, RESULT_MODES)) as events:
            async for _ in events:
                pass
        result = output.result(turn.conversation_id)
        if result.upkeep == "pending":
            await self.upkeep.start(turn.session_id, turn.conversation_id)
        return result

    async def stream(self, turn: Turn) -> AsyncGenerator[ClientEvent, None]:
        """The turn's events, `conversation` first: except for a draft's first message, after the
        run's first event, so that a refusal is raised before any event. `done` (or `error`) comes
        once the conversation is free, the upkeep's `memory` events after it."""
        output = TurnOutput()
        events = self._play(turn, output, STREAM_MODES)
        async with aclosing(events):
            new = turn.request is not None and turn.request.create
            first = None if new else await anext(events, None)
            yield {"event": "conversation", "conversationId": turn.conversation_id}
            if first is not None:
                yield first
            try:
                async for event in events:
                    yield event
            except InvalidRequest as exc:
                yield {"event": "error", "code": "invalid_request", "message": str(exc)}
                return
        if output.crashed and not output.answered:
            yield {"event": "error", "code": "turn_failed", "message": TURN_FAILED}
            return
        result = output.result(turn.conversation_id)
        if result.upkeep != "pending":
            yield {"event": "done", "result": result.to_dict()}
            return
        upkeep = await self.upkeep.start(turn.session_id, turn.conversation_id)
        following = self.upkeep.follow(upkeep)  # joined before `done`: no event is missed
        yield {"event": "done", "result": result.to_dict()}
        async with aclosing(following):
            async for event in following:
                yield event

    async def _play(
        self,
        turn: Turn,
        output: TurnOutput,
        stream_mode: Sequence[StreamMode],
    ) -> AsyncGenerator[ClientEvent, None]:
        """Under the busy lock: admit the run, stream the graph (`output` follows its
        output) and conclude it. Another failure than a refusal is logged and marks the
        output `crashed`; after the answer existed, the answer is delivered degraded."""
        try:
            with busy_lock(self.memory, turn.session_id, turn.conversation_id):
                graph_input = await self._admit(turn)
                tokens = AnswerTokens()  # a tool call written as text is never shown
                try:
                    async for part in self.graph.astream(
                        graph_input,
                        turn.config,
                        context=turn.context,
                        durability=durability(turn),
                        stream_mode=list(stream_mode),
                        # also makes LangGraph stream eagerly: `finalize`'s update arrives
                        # before the last checkpoint is stored (and survives its failure)
                        subgraphs=True,
                    ):
                        namespace, mode, chunk = part
                        if not namespace and mode in OUTPUT_MODES:
                            output.record(mode, chunk)
                        elif event := tokens.event(cast(tuple[str, ...], namespace), mode, chunk):
                            yield event
                except (InvalidRequest, ConversationNotFound):
                    raise
                except Exception:
                    # the memory thread's id (an HMAC), never the conversation id in clear
                    logger.exception(
                        "turn failed in memory thread %s",
                        self.memory.memory_thread(turn.session_id, turn.conversation_id),
                    )
                    output.crashed = True
                if output.crashed and not output.answered:
                    return
                result = output.result(turn.conversation_id)
                for held in tokens.release(result.text):
                    yield held
                review = await asyncio.to_thread(self._conclude, turn, result, output)
                if review is not None:
                    yield review
                if result.interrupt is not None:
                    yield {"event": "interrupt", "interrupt": result.interrupt}
        except LockTimeout:
            raise ConversationBusy() from None

    async def _admit(self, turn: Turn) -> Any:
        """Under the busy lock (so that no other run can have finished it since): own a
        new conversation's draft, or check a resume or a recovery; the graph input."""
        if turn.request is None:  # the hop: the checks read the registry and run thread
            return await asyncio.to_thread(self._paused_input, turn)
        if turn.request.create:  # the hop: the registry's write is sync
            await asyncio.to_thread(self.memory.accept_draft, turn.session_id, turn.conversation_id)
        return turn.graph_input

    def _paused_input(self, turn: Turn) -> Any:
        """A resume's `Command`, its decision validated against the pending review, or
        None for a recovery (`InvalidRequest` when there is nothing to resume or recover)."""
        self.memory.require_conversation(turn.session_id, turn.conversation_id)
        state = self.graph.get_state(turn.config)
        if isinstance(turn.graph_input, Command):
            if not state.interrupts:
                raise InvalidRequest(NOTHING_TO_RESUME)
            payload, decision = state.interrupts[0].value, turn.graph_input.resume
            return Command(resume=validate_decision(payload, decision, self.reviews))
        if state.interrupts and not review_answered(self.memory.threads.checkpointer, state):
            raise InvalidRequest(WAITING_FOR_REVIEW)
        if not state.next:  # a recovery needs a run a crash stopped (`is_unfinished`)
            raise InvalidRequest(NOTHING_TO_RECOVER)
        return None

    def _conclude(self, turn: Turn, result: TurnResult, output: TurnOutput) -> MemoryEvent | None:
        """After the run: list the review it waits for, or delete the run thread of a
        conversation deleted meanwhile (its last checkpoint came after the deletion), or
        keep only a finished run's latest checkpoint (`AGENT_RUN_HISTORY=all` keeps all)."""
        if result.interrupt is not None:
            return self._await_review(turn, result.interrupt)
        thread = turn.config["configurable"]["thread_id"]
        try:
            if result.conversation_deleted:
                self.memory.threads.delete(thread)
            elif not output.crashed and self.run_history == "latest":
                self.memory.threads.prune_finished_runs([thread])
        except Exception:  # a leftover holds no memory; the next finished turn prunes again
            logger.warning("tidying the run thread failed", exc_info=True)
        return None

    def _await_review(self, turn: Turn, payload: dict[str, Any]) -> MemoryEvent | None:
        """List the conversation as waiting for its review (a reload or another client
        finds it): the `memory` event saying so. A failure leaves it answerable, unlisted."""
        goal = payload.get("goal")
        try:
            pruned = self.memory.await_review(
                turn.session_id, turn.conversation_id, goal if isinstance(goal, str) else ""
            )
        except ConversationNotFound:  # deleted while the run went on: nothing to list
            return None
        except Exception:
            logger.exception(
                "listing the conversation %s for its review failed", turn.conversation_id
            )
            return None
        event: MemoryEvent = {"event": "memory", "stage": "review", "status": "pending"}
        if pruned:
            event["pruned"] = list(pruned)
        return event
