"""How a turn runs (`TurnRunner`): one async path on the agent's own event loop, for
every turn, resume and recovery, streamed or not.

`_play` is that path: under the conversation's busy lock it admits the run, streams the
graph (its client events), and concludes (lists a review, prunes the run thread); the
lock is released once `finalize` has committed, before `done`. `stream` relays the
events (`conversation` first, `done` last, then the `memory` events of the upkeep the
turn left owed, until it ends); `run` keeps only the result. The sync API runs either on
the agent's loop (`ChatAgent.send`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Sequence
from contextlib import AbstractContextManager, aclosing
from typing import Any, cast

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StreamMode

from agent.admission import Turn, busy_lock, durability, review_answered, unfinished_check
from agent.client_events import ClientEvent, MemoryEvent
from agent.errors import NOTHING_TO_RESUME, TURN_FAILED, ConversationBusy, InvalidRequest
from agent.settings import RunHistory
from agent.streaming import client_event
from agent.turn_result import OUTPUT_MODES, TurnOutput, TurnResult
from agent.upkeep_runner import UpkeepRunner
from memory import ConversationNotFound, LockTimeout
from memory.conversations import ConversationMemory

logger = logging.getLogger(__name__)

STREAM_MODES: tuple[StreamMode, ...] = ("messages", "custom", *OUTPUT_MODES)
"""What a streamed turn follows: answer tokens, status and memory events, its output."""
RESULT_MODES: tuple[StreamMode, ...] = ("custom", *OUTPUT_MODES)
"""What a turn run for its result follows: no answer tokens."""


class TurnRunner:
    """Runs admitted turns over the agent graph.

    Args:
        graph: the agent graph, compiled with the run threads' checkpointer.
        memory: the chat memory (the busy locks, drafts, run threads).
        upkeep: runs the memory upkeep a turn leaves owed.
        run_history: `latest` prunes a finished run thread to its last checkpoint.
    """

    def __init__(
        self,
        *,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        memory: ConversationMemory,
        upkeep: UpkeepRunner,
        run_history: RunHistory,
    ) -> None:
        self._graph = graph
        self._memory = memory
        self._upkeep = upkeep
        self._run_history = run_history

    def _busy_lock(self, turn: Turn) -> AbstractContextManager[None]:
        return busy_lock(self._memory, turn.session_id, turn.conversation_id)

    async def run(self, turn: Turn, graph_input: Any) -> TurnResult:
        """Run a turn (a new one, a resume or a recovery) for its result; the upkeep it
        leaves owed starts after it.

        Raises:
            InvalidRequest: the run was refused (bad input; no pending review, no
                unfinished run any more).
            ConversationNotFound, ConversationBusy: as for `ChatAgent.send`.
        """
        output = TurnOutput()
        async with aclosing(self._play(turn, graph_input, output, RESULT_MODES)) as events:
            async for _ in events:
                pass
        result = output.result(turn.conversation_id)
        if result.upkeep == "pending":
            await self._upkeep.start(turn.session_id, turn.conversation_id)
        return result

    async def stream(self, turn: Turn, graph_input: Any) -> AsyncGenerator[ClientEvent, None]:
        """The turn's events, `conversation` first. Except for a draft's first message,
        it comes after the run's first event, once the run was admitted and (for a turn)
        its memory read found the conversation: a refusal (`ConversationNotFound`, no
        review to resume, …) is raised before any event. `done` comes once the
        conversation is free again (or `error`); the `memory` events of the upkeep the
        turn left owed follow it, until that upkeep ends."""
        output = TurnOutput()
        events = self._play(turn, graph_input, output, STREAM_MODES)
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
        upkeep = await self._upkeep.start(turn.session_id, turn.conversation_id)
        following = self._upkeep.follow(upkeep)  # joined before `done`: no event is missed
        yield {"event": "done", "result": result.to_dict()}
        async with aclosing(following):
            async for event in following:
                yield event

    async def _play(
        self,
        turn: Turn,
        graph_input: Any,
        output: TurnOutput,
        stream_mode: Sequence[StreamMode],
    ) -> AsyncGenerator[ClientEvent, None]:
        """Under the conversation's busy lock: admit the run, stream the graph (its client
        events, while `output` follows its output) and conclude it. A failure other than
        a refused request or conversation is logged and marks the output `crashed`; if
        it came after the answer existed (the run thread's last checkpoint failed), the
        answer is still delivered, degraded."""
        try:
            with self._busy_lock(turn):
                await self._admit(turn, graph_input)
                try:
                    async for part in self._graph.astream(
                        graph_input,
                        turn.config,
                        context=turn.context,
                        durability=durability(turn),
                        stream_mode=list(stream_mode),
                        subgraphs=True,
                    ):
                        namespace, mode, chunk = part
                        if not namespace and mode in OUTPUT_MODES:
                            output.record(mode, chunk)
                        elif event := client_event(cast(tuple[str, ...], namespace), mode, chunk):
                            yield event
                except (InvalidRequest, ConversationNotFound):
                    raise
                except Exception:
                    logger.exception("turn failed in conversation %s", turn.conversation_id)
                    output.crashed = True
                if output.crashed and not output.answered:
                    return
                result = output.result(turn.conversation_id)
                review = await asyncio.to_thread(self._conclude, turn, result, output)
                if review is not None:
                    yield review
                if result.interrupt is not None:
                    yield {"event": "interrupt", "interrupt": result.interrupt}
        except LockTimeout:
            raise ConversationBusy() from None

    async def _admit(self, turn: Turn, graph_input: Any) -> None:
        """Under the busy lock: own the draft, or re-check that a resume still has a
        pending review, or a recovery an unfinished run (another resume or recovery may
        have finished it since it was checked)."""
        if turn.request is not None and turn.request.create:
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
