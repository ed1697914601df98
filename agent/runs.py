"""How a turn runs (`TurnRunner`): synchronously (chat and tool turns through `send`)
or on the agent's own event loop (everything streamed, and workflows), always
under the conversation's busy lock, turning the graph's stream into client events and
its output into the turn's result. The lock is released when `finalize` has committed,
before `done`: the memory upkeep the turn left owed runs after it (`agent.upkeep_runner`),
and a stream follows it until it ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AbstractContextManager, aclosing
from typing import Any, cast

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StreamMode

from agent.admission import Turn, busy_lock, durability, review_answered, unfinished_check
from agent.client_events import ClientEvent, DoneEvent, MemoryEvent
from agent.errors import NOTHING_TO_RESUME, TURN_FAILED, ConversationBusy, InvalidRequest
from agent.loop import BackgroundLoop
from agent.settings import RunHistory
from agent.streaming import client_event
from agent.turn_result import OUTPUT_MODES, RESULT_MODES, TurnOutput, TurnResult
from agent.upkeep_runner import UpkeepRunner
from graphs.state import AgentInput
from memory import ConversationNotFound, LockTimeout
from memory.conversations import ConversationMemory

logger = logging.getLogger(__name__)

STREAM_MODES: tuple[StreamMode, ...] = ("messages", "custom", *OUTPUT_MODES)
"""What a streamed turn follows: answer tokens, status and memory events, its output."""


def turn_input(turn: Turn) -> AgentInput:
    """The graph input of a new turn: its request, validated once already."""
    return {"request": turn.request}


class TurnRunner:
    """Runs admitted turns over the agent graph.

    Args:
        graph: the agent graph, compiled with the run threads' checkpointer.
        memory: the chat memory (the busy locks, drafts, run threads).
        upkeep: runs the memory upkeep a turn leaves owed.
        loop: the agent's event loop.
        run_history: `latest` prunes a finished run thread to its last checkpoint.
    """

    def __init__(
        self,
        *,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        memory: ConversationMemory,
        upkeep: UpkeepRunner,
        loop: BackgroundLoop,
        run_history: RunHistory,
    ) -> None:
        self._graph = graph
        self._memory = memory
        self._upkeep = upkeep
        self._loop = loop
        self._run_history = run_history

    def _busy_lock(self, turn: Turn) -> AbstractContextManager[None]:
        return busy_lock(self._memory, turn.session_id, turn.conversation_id)

    def run_here(self, turn: Turn) -> TurnResult:
        """Run a chat or tool turn synchronously (`graph.stream`, sync nodes and model
        calls): no event loop to cross into. Streaming eagerly, LangGraph runs each node
        in a worker thread of the run (one hop per node, as under `astream`)."""
        assert turn.request is not None
        output = TurnOutput()
        try:
            with self._busy_lock(turn):
                if turn.request["create"]:
                    self._memory.accept_draft(turn.session_id, turn.conversation_id)
                try:
                    for mode, chunk in self._graph.stream(
                        turn_input(turn),
                        turn.config,
                        context=turn.context,
                        durability=durability(turn),
                        stream_mode=list(RESULT_MODES),
                    ):
                        output.record(mode, chunk)
                except (InvalidRequest, ConversationNotFound):
                    raise
                except Exception:
                    logger.exception("turn failed in conversation %s", turn.conversation_id)
                    output.crashed = True
                result = output.result(turn.conversation_id)
                self._conclude(turn, result, output)
        except LockTimeout:
            raise ConversationBusy() from None
        if result.upkeep == "pending":
            self._upkeep.request(turn.session_id, turn.conversation_id)
        return result

    async def run(self, turn: Turn, graph_input: Any) -> TurnResult:
        """Run a turn (a new one, a resume or a recovery) on the agent's loop.

        Raises:
            InvalidRequest: the run was refused (bad input; no pending review, no
                unfinished run any more).
            ConversationNotFound, ConversationBusy: as for `ChatAgent.send`.
        """
        output = TurnOutput()
        try:
            with self._busy_lock(turn):
                await self._admit(turn, graph_input)
                async for _ in self._graph_events(
                    turn, graph_input, output, RESULT_MODES, subgraphs=False
                ):
                    pass
                result = output.result(turn.conversation_id)
                await asyncio.to_thread(self._conclude, turn, result, output)
        except LockTimeout:
            raise ConversationBusy() from None
        if result.upkeep == "pending":
            await self._upkeep.start(turn.session_id, turn.conversation_id)
        return result

    async def relay(self, turn: Turn, graph_input: Any) -> AsyncGenerator[ClientEvent, None]:
        """The turn's events, run on the agent's loop and relayed to the caller's; the
        nested stream is closed explicitly when the caller stops reading."""
        async with aclosing(self._loop.astream(self._stream(turn, graph_input))) as events:
            async for event in events:
                yield event

    async def _stream(self, turn: Turn, graph_input: Any) -> AsyncIterator[ClientEvent]:
        """The turn's events, `conversation` first. A turn in an existing conversation
        announces it after its first event, the route, which comes once its memory read
        found the conversation (else `ConversationNotFound` is raised before any event).
        `done` comes once the conversation is free again; the `memory` events of the
        upkeep the turn left owed follow it, until that upkeep ends."""
        done: DoneEvent | None = None
        try:
            with self._busy_lock(turn):
                await self._admit(turn, graph_input)
                events = self._turn_events(turn, graph_input)
                checked = turn.request is not None and not turn.request["create"]
                first = await anext(events, None) if checked else None
                yield {"event": "conversation", "conversationId": turn.conversation_id}
                if first is not None:
                    yield first
                async for event in events:
                    if event["event"] == "done":
                        done = event  # the last event: sent once the lock is released
                    else:
                        yield event
        except LockTimeout:
            raise ConversationBusy() from None
        if done is None:
            return
        if done["result"]["upkeep"] != "pending":
            yield done
            return
        upkeep = await self._upkeep.start(turn.session_id, turn.conversation_id)
        following = self._upkeep.follow(upkeep)  # joined before `done`: no event is missed
        yield done
        async with aclosing(following):
            async for event in following:
                yield event

    async def _admit(self, turn: Turn, graph_input: Any) -> None:
        """Under the busy lock: own the draft, or re-check that a resume still has a
        pending review, or a recovery an unfinished run (another resume or recovery may
        have finished it since it was checked)."""
        if turn.request is not None and turn.request["create"]:
            await asyncio.to_thread(
                self._memory.accept_draft, turn.session_id, turn.conversation_id
            )
        if isinstance(graph_input, Command):
            state = await self._graph.aget_state(turn.config)
            if not state.interrupts:
                raise InvalidRequest(NOTHING_TO_RESUME)
        elif graph_input is None:  # a recovery: another one may have finished the run
            state = await self._graph.aget_state(turn.config)
            saver = self._memory.threads.checkpointer
            answered = await asyncio.to_thread(review_answered, saver, state)
            unfinished_check(state, answered=answered)

    async def _graph_events(
        self,
        turn: Turn,
        graph_input: Any,
        output: TurnOutput,
        stream_mode: Sequence[StreamMode],
        *,
        subgraphs: bool,
    ) -> AsyncIterator[ClientEvent]:
        """Run the graph, yielding its client events while `output` follows its output.
        A failure other than a refused request or conversation is logged and marks the
        output `crashed`."""
        try:
            async for part in self._graph.astream(
                graph_input,
                turn.config,
                context=turn.context,
                durability=durability(turn),
                stream_mode=list(stream_mode),
                subgraphs=subgraphs,
            ):
                # with subgraphs: (namespace, mode, chunk); without: (mode, chunk) at the root
                namespace, mode, chunk = part if subgraphs else ((), *part)
                if not namespace and mode in OUTPUT_MODES:
                    output.record(mode, chunk)
                elif event := client_event(cast(tuple[str, ...], namespace), mode, chunk):
                    yield event
        except (InvalidRequest, ConversationNotFound):
            raise
        except Exception:
            logger.exception("turn failed in conversation %s", turn.conversation_id)
            output.crashed = True

    async def _turn_events(self, turn: Turn, graph_input: Any) -> AsyncIterator[ClientEvent]:
        """Run the graph, yielding client events; the last is `done` (or `error`). If
        storage fails after the answer exists (the memory write or the run thread's
        final checkpoint), the answer is still delivered, marked degraded."""
        output = TurnOutput()
        try:
            async for event in self._graph_events(
                turn, graph_input, output, STREAM_MODES, subgraphs=True
            ):
                yield event
        except InvalidRequest as exc:
            yield {"event": "error", "code": "invalid_request", "message": str(exc)}
            return
        if output.crashed and not output.answered:
            yield {"event": "error", "code": "turn_failed", "message": TURN_FAILED}
            return
        result = output.result(turn.conversation_id)
        review = await asyncio.to_thread(self._conclude, turn, result, output)
        if review is not None:
            yield review
        if result.interrupt is not None:
            yield {"event": "interrupt", "interrupt": result.interrupt}
        yield {"event": "done", "result": result.to_dict()}

    def _conclude(self, turn: Turn, result: TurnResult, output: TurnOutput) -> MemoryEvent | None:
        """After the run: list the review it waits for (the `memory` event saying so), or
        delete the run thread of a deleted conversation, or prune a finished one."""
        if result.interrupt is not None:
            return self._await_review(turn, result.interrupt)
        if result.conversation_deleted:
            self._drop_run_thread(turn)
        elif not output.crashed:
            self._prune_run_thread(turn)
        return None

    def _await_review(self, turn: Turn, payload: dict[str, Any]) -> MemoryEvent | None:
        """List the conversation as waiting for its review (a reload, another tab or a
        restarted CLI finds it); a `memory` event naming what the listing pruned. A
        registry failure leaves the review answerable, only unlisted."""
        goal = payload.get("goal")
        try:
            pruned = self._memory.await_review(
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

    def _drop_run_thread(self, turn: Turn) -> None:
        """Delete the run thread of a conversation deleted while its turn ran (the run's
        last checkpoint came after the deletion)."""
        try:
            self._memory.threads.delete(turn.config["configurable"]["thread_id"])
        except Exception:  # a leftover thread of a deleted conversation holds no memory
            logger.warning("deleting the run thread of a deleted conversation failed")

    def _prune_run_thread(self, turn: Turn) -> None:
        """Keep only the latest checkpoint of a run thread whose turn finished (no review
        pending): nothing resumes from older ones. `AGENT_RUN_HISTORY=all` keeps them,
        for time travel (history, replay, forks)."""
        if self._run_history != "latest":
            return
        try:
            self._memory.threads.prune_finished_runs([turn.config["configurable"]["thread_id"]])
        except Exception:  # the next finished turn prunes again
            logger.warning("pruning the run thread failed", exc_info=True)
