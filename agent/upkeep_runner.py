"""Memory upkeep after a turn is done: `UpkeepRunner` runs the upkeep graph
(`graphs.upkeep`: `read_owed → embed → remember → compact → settle`) on its own, off
the reply path.

The turn's run ends at `finalize`, whose transaction records what upkeep it leaves
owed; the conversation is free for its next turn as soon as that commits. The runner
then pays the record, one upkeep at a time per conversation:
- in this process, a request for a conversation whose upkeep is running is merged into
  it (the running one goes round once more, reading the record afresh);
- across processes, each upkeep holds the conversation's upkeep lock, and a later one
  waits for it;
- a process that dies first leaves the record pending: the next turn's upkeep (or a
  read of the conversation) pays it.
Each upkeep runs in a worker thread of its own pool (the model calls and the lock
stay in one thread); its `memory` events reach every stream following it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from agent.client_events import MemoryEvent, StatusEvent, custom_event
from agent.loop import BackgroundLoop
from graphs.state import Context
from memory import LockTimeout
from memory.conversations import ConversationMemory

logger = logging.getLogger(__name__)

UPKEEP_WORKERS = 4
"""Conversations whose upkeep runs at once in one process."""
UPKEEP_LOCK_TIMEOUT = 120.0
"""Seconds an upkeep waits for another process's upkeep of the same conversation; past
it the record stays pending for the next one."""
CLOSE_TIMEOUT = 30.0
"""Seconds `close` waits for running upkeep (what is left stays on the record)."""
UpkeepEvent = StatusEvent | MemoryEvent
"""What an upkeep's run streams to the clients following it (its `memory` events)."""


@dataclass(eq=False)
class Upkeep:
    """One conversation's upkeep in this process, with the streams following it."""

    session_id: str
    conversation_id: str
    again: bool = False
    """A turn left more owed while this one ran: go round once more."""
    listeners: list[asyncio.Queue[UpkeepEvent | None]] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class UpkeepRunner:
    """Runs conversations' memory upkeep on the agent's loop, one at a time per
    conversation.

    Args:
        graph: the compiled upkeep graph (without a checkpointer: its record is in the
            conversation's memory).
        memory: the chat memory (its locks order upkeep across processes).
        loop: the agent's event loop, where the upkeep is scheduled and followed.
    """

    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        memory: ConversationMemory,
        loop: BackgroundLoop,
    ) -> None:
        self._graph = graph
        self._memory = memory
        self._loop = loop
        self._pool = ThreadPoolExecutor(UPKEEP_WORKERS, thread_name_prefix="memory-upkeep")
        self._running: dict[tuple[str, str], Upkeep] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    # -- on the agent's loop -------------------------------------------------------------

    async def start(self, session_id: str, conversation_id: str, *, merge: bool = True) -> Upkeep:
        """Start the conversation's upkeep, or (`merge`) have the running one go round
        once more for what was added to the record since it read it."""
        key = (session_id, conversation_id)
        running = self._running.get(key)
        if running is not None:
            running.again = running.again or merge
            return running
        upkeep = self._running[key] = Upkeep(session_id, conversation_id)
        task = asyncio.create_task(self._drive(upkeep))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return upkeep

    def follow(self, upkeep: Upkeep) -> AsyncGenerator[UpkeepEvent, None]:
        """The `memory` events of `upkeep` from this call until it ends (closing the
        iterator only stops following it). The stream is joined here, not when the
        iterator is first read: a caller that sends something else first (the turn's
        `done`) misses none of the events the upkeep publishes meanwhile."""
        queue: asyncio.Queue[UpkeepEvent | None] = asyncio.Queue()
        if upkeep.finished.is_set():
            queue.put_nowait(None)
        else:
            upkeep.listeners.append(queue)
        return self._drain(upkeep, queue)

    @staticmethod
    async def _drain(
        upkeep: Upkeep, queue: asyncio.Queue[UpkeepEvent | None]
    ) -> AsyncGenerator[UpkeepEvent, None]:
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            with contextlib.suppress(ValueError):
                upkeep.listeners.remove(queue)

    async def idle(self) -> None:
        """Wait until no upkeep runs."""
        while self._running:
            await asyncio.gather(*(u.finished.wait() for u in list(self._running.values())))

    async def _drive(self, upkeep: Upkeep) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                upkeep.again = False
                await loop.run_in_executor(self._pool, self._pay, upkeep, loop)
                if not upkeep.again:
                    break
        finally:
            del self._running[(upkeep.session_id, upkeep.conversation_id)]
            for queue in upkeep.listeners:
                queue.put_nowait(None)  # the end
            upkeep.finished.set()

    def _publish(self, upkeep: Upkeep, event: UpkeepEvent) -> None:
        for queue in upkeep.listeners:
            queue.put_nowait(event)

    # -- in an upkeep worker thread ------------------------------------------------------

    def _pay(self, upkeep: Upkeep, loop: asyncio.AbstractEventLoop) -> None:
        """Run the upkeep graph for the conversation, under its upkeep lock."""
        session_id, conversation_id = upkeep.session_id, upkeep.conversation_id
        key = "upkeep:" + self._memory.memory_thread(session_id, conversation_id)
        context = Context(session_id=session_id, conversation_id=conversation_id)
        try:
            with self._memory.threads.locks.hold(key, UPKEEP_LOCK_TIMEOUT):
                for chunk in self._graph.stream({}, context=context, stream_mode="custom"):
                    event = custom_event(chunk)
                    if event is not None:
                        loop.call_soon_threadsafe(self._publish, upkeep, event)
        except LockTimeout:
            logger.warning("memory upkeep still running elsewhere; left on the record")
        except Exception:
            logger.exception("memory upkeep failed; what it owed stays on the record")

    # -- from any thread -----------------------------------------------------------------

    def request(self, session_id: str, conversation_id: str, *, merge: bool = True) -> None:
        """`start` from a thread other than the loop's (returns at once)."""
        self._loop.submit(self.start(session_id, conversation_id, merge=merge))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no upkeep runs; False when `timeout` seconds passed first."""
        try:
            self._loop.run(asyncio.wait_for(self.idle(), timeout))
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Wait (briefly) for running upkeep, then stop the worker threads."""
        if not self.wait(CLOSE_TIMEOUT):
            logger.warning("memory upkeep still running at close; left on the record")
        self._pool.shutdown(wait=False, cancel_futures=True)
