"""How a turn runs: in the caller's thread (chat and tool turns through `send`) or on
the agent's own event loop (everything streamed, and workflows), always under the
conversation's busy lock, turning the graph's stream into client events
(`ChatAgent`'s run machinery). The lock is released when `finalize` has committed,
before `done`: the memory upkeep the turn left owed runs after it (`agent.upkeep`),
and a stream follows it until it ends."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import AbstractContextManager, aclosing
from typing import Any, cast

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StreamMode

from agent.errors import NOTHING_TO_RESUME, TURN_FAILED, ConversationBusy, InvalidRequest
from agent.loop import BackgroundLoop
from agent.settings import Settings
from agent.turns import (
    Turn,
    TurnRecorder,
    TurnResult,
    busy_lock,
    durability,
    review_answered,
    unfinished_check,
)
from agent.upkeep import UpkeepRunner
from graphs.state import AgentInput
from memory import ConversationMemory, ConversationNotFound, LockTimeout
from memory.storage import ThreadStore

logger = logging.getLogger(__name__)


class TurnRunner:
    """Runs admitted turns over `ChatAgent`'s graph, stores and loop."""

    settings: Settings
    memory: ConversationMemory
    graph: CompiledStateGraph[Any, Any, Any, Any]
    upkeep: UpkeepRunner
    _threads: ThreadStore
    _loop: BackgroundLoop

    @staticmethod
    def _input(turn: Turn) -> AgentInput:
        return {"request": turn.request}

    def _busy_lock(self, turn: Turn) -> AbstractContextManager[None]:
        return busy_lock(self.memory, turn.session_id, turn.conversation_id)

    def _run_here(self, turn: Turn) -> TurnResult:
        """Run a chat or tool turn in the caller's thread (`graph.stream`, sync nodes and
        model calls): no event loop to cross into, no storage call through a thread."""
        assert turn.request is not None
        recorder = TurnRecorder(turn.conversation_id)
        try:
            with self._busy_lock(turn):
                if turn.request["create"]:
                    self.memory.accept_draft(turn.session_id, turn.conversation_id)
                crashed = False
                try:
                    output = self.graph.invoke(
                        self._input(turn),
                        recorder.config(turn.config),
                        context=turn.context,
                        durability=durability(turn),
                    )
                    recorder.output.update(output)
                except (InvalidRequest, ConversationNotFound):
                    raise
                except Exception:
                    logger.exception("turn failed in conversation %s", turn.conversation_id)
                    crashed = True
                result = recorder.result(crashed=crashed)
                if result.conversation_deleted:
                    self._drop_run_thread(turn)
                elif not crashed and result.interrupt is None:
                    self._prune_run_thread(turn)
        except LockTimeout:
            raise ConversationBusy() from None
        if result.upkeep == "pending":
            self.upkeep.request(turn.session_id, turn.conversation_id)
        return result

    async def _run(self, turn: Turn, graph_input: Any) -> TurnResult:
        results: list[TurnResult] = []
        try:
            with self._busy_lock(turn):
                await self._admit(turn, graph_input)
                async for event in self._turn_events(
                    turn, graph_input, ("values",), subgraphs=False, results=results
                ):
                    if event["event"] == "error" and event["code"] == "invalid_request":
                        raise InvalidRequest(event["message"])
        except LockTimeout:
            raise ConversationBusy() from None
        if results[-1].upkeep == "pending":
            await self.upkeep.start(turn.session_id, turn.conversation_id)
        return results[-1]

    async def _relay(self, turn: Turn, graph_input: Any) -> AsyncGenerator[dict[str, Any], None]:
        """The turn's events, run on the agent's loop and relayed to the caller's; the
        nested stream is closed explicitly when the caller stops reading."""
        async with aclosing(self._loop.astream(self._stream(turn, graph_input))) as events:
            async for event in events:
                yield event

    async def _stream(self, turn: Turn, graph_input: Any) -> AsyncIterator[dict[str, Any]]:
        """The turn's events, `conversation` first. A turn in an existing conversation
        announces it after its first event, the route, which comes once its memory read
        found the conversation (else `ConversationNotFound` is raised before any event).
        `done` comes once the conversation is free again; the `memory` events of the
        upkeep the turn left owed follow it, until that upkeep ends."""
        done: dict[str, Any] | None = None
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
        upkeep = await self.upkeep.start(turn.session_id, turn.conversation_id)
        yield done
        async for event in self.upkeep.follow(upkeep):
            yield event

    async def _admit(self, turn: Turn, graph_input: Any) -> None:
        """Under the busy lock: own the draft, or re-check that a resume still has a
        pending review, or a recovery an unfinished run (another resume or recovery may
        have finished it since it was checked)."""
        if turn.request is not None and turn.request["create"]:
            await asyncio.to_thread(self.memory.accept_draft, turn.session_id, turn.conversation_id)
        if isinstance(graph_input, Command):
            state = await self.graph.aget_state(turn.config)
            if not state.interrupts:
                raise InvalidRequest(NOTHING_TO_RESUME)
        elif graph_input is None:  # a recovery: another one may have finished the run
            state = await self.graph.aget_state(turn.config)
            answered = await asyncio.to_thread(review_answered, self._threads.checkpointer, state)
            unfinished_check(state, answered=answered)

    async def _turn_events(
        self,
        turn: Turn,
        graph_input: Any,
        stream_mode: Sequence[StreamMode] = ("messages", "custom", "values"),
        *,
        subgraphs: bool = True,
        results: list[TurnResult] | None = None,
    ) -> AsyncIterator[dict[str, Any]]:
        """Run the graph, yielding client events; the last is `done` (or `error`).

        The turn's result is appended to `results` as well. If storage fails after the
        answer exists (the memory write or the run thread's final checkpoint), the
        answer is still delivered, marked degraded.
        """
        recorder = TurnRecorder(turn.conversation_id)
        crashed = False
        try:
            async for part in self.graph.astream(
                graph_input,
                recorder.config(turn.config),
                context=turn.context,
                durability=durability(turn),
                stream_mode=list({*stream_mode, "custom"}),
                subgraphs=subgraphs,
            ):
                # with subgraphs: (namespace, mode, chunk); without: (mode, chunk) at the root
                namespace, mode, chunk = part if subgraphs else ((), *part)
                event = recorder.event(cast(tuple[str, ...], namespace), mode, chunk)
                if event is not None:
                    yield event
        except InvalidRequest as exc:
            yield {"event": "error", "code": "invalid_request", "message": str(exc)}
            return
        except ConversationNotFound:
            raise
        except Exception:
            logger.exception("turn failed in conversation %s", turn.conversation_id)
            crashed = True
        result = recorder.result(crashed=crashed)
        if results is not None:
            results.append(result)
        if crashed and not recorder.answered:
            yield {"event": "error", "code": "turn_failed", "message": TURN_FAILED}
            return
        if result.interrupt is not None:
            listed = await asyncio.to_thread(self._await_review, turn, result.interrupt)
            if listed is not None:
                yield listed
            yield {"event": "interrupt", "interrupt": result.interrupt}
        elif result.conversation_deleted:
            await asyncio.to_thread(self._drop_run_thread, turn)
        elif not crashed:
            await asyncio.to_thread(self._prune_run_thread, turn)
        yield {"event": "done", "result": result.to_dict()}

    def _await_review(self, turn: Turn, payload: dict[str, Any]) -> dict[str, Any] | None:
        """List the conversation as waiting for its review (a reload, another tab or a
        restarted CLI finds it); a `memory` event naming what the listing pruned. A
        registry failure leaves the review answerable, only unlisted."""
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
        event: dict[str, Any] = {"event": "memory", "stage": "review", "status": "pending"}
        if pruned:
            event["pruned"] = list(pruned)
        return event

    def _drop_run_thread(self, turn: Turn) -> None:
        """Delete the run thread of a conversation deleted while its turn ran (the run's
        last checkpoint came after the deletion)."""
        try:
            self._threads.delete(turn.config["configurable"]["thread_id"])
        except Exception:  # a leftover thread of a deleted conversation holds no memory
            logger.warning("deleting the run thread of a deleted conversation failed")

    def _prune_run_thread(self, turn: Turn) -> None:
        """Keep only the latest checkpoint of a run thread whose turn finished (no review
        pending): nothing resumes from older ones. `AGENT_RUN_HISTORY=all` keeps them,
        for time travel (history, replay, forks)."""
        if self.settings.run_history != "latest":
            return
        try:
            self._threads.prune_finished_runs([turn.config["configurable"]["thread_id"]])
        except Exception:  # the next finished turn prunes again
            logger.warning("pruning the run thread failed", exc_info=True)
