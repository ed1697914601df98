"""`UpkeepRunner`: the upkeep graph (`graphs.upkeep`) run off the reply path, once the
turn's `finalize` committed what it leaves owed (the conversation is free by then).

One upkeep at a time per conversation: in this process a request meets the running one,
which goes round once more; across processes the upkeep lock orders them; a process that
dies leaves the record pending for the next. A model's extraction waiting for its batch
is paid once the conversation is idle `idle_seconds`, when the user turns to another
conversation (which sees those turns through episodic recall meanwhile), on `wait` and
`close`; a user's first turn in a process pays what their other conversations owe. Each
upkeep runs in a worker thread (its model calls and lock in one thread); its `memory`
events reach every follower.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import StreamMode

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
    flush: bool = False
    """Extract what is owed now (no waiting for a batch)."""
    listeners: list[asyncio.Queue[UpkeepEvent | None]] = field(default_factory=list)
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class UpkeepRunner:
    """Runs conversations' memory upkeep on the agent's `loop`: `graph` is the compiled
    upkeep graph (no checkpointer: the record is in memory), `batch_turns` the owed turns
    that make a model extraction due (1: no batching)."""

    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        memory: ConversationMemory,
        loop: BackgroundLoop,
        *,
        batch_turns: int,
        idle_seconds: float,
    ) -> None:
        self._graph = graph
        self._memory = memory
        self._loop = loop
        self._batch_turns = batch_turns
        self._idle_seconds = idle_seconds
        self._started = datetime.now(UTC)
        self._pool = ThreadPoolExecutor(UPKEEP_WORKERS, thread_name_prefix="memory-upkeep")
        self._running: dict[tuple[str, str], Upkeep] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle: dict[tuple[str, str], asyncio.TimerHandle] = {}
        """Conversations whose extraction may be waiting, with their idle timer."""
        self._last: dict[str, str] = {}
        """Each user's conversation of their latest turn in this process."""

    # -- on the agent's loop -------------------------------------------------------------

    async def start(self, session_id: str, conversation_id: str, *, merge: bool = True) -> Upkeep:
        """Start the conversation's upkeep, or (`merge`) have the running one go round
        once more."""
        return self._begin(session_id, conversation_id, merge=merge, flush=False)

    def _begin(self, session_id: str, conversation_id: str, *, merge: bool, flush: bool) -> Upkeep:
        key = (session_id, conversation_id)
        if merge and not flush and self._batch_turns > 1:
            self._after_turn(session_id, conversation_id)
        running = self._running.get(key)
        if running is not None:
            running.again = running.again or merge or flush
            running.flush = running.flush or flush
            return running
        upkeep = self._running[key] = Upkeep(session_id, conversation_id, flush=flush)
        self._spawn(self._drive(upkeep))
        return upkeep

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _arm(self, key: tuple[str, str]) -> None:
        if (timer := self._idle.pop(key, None)) is not None:
            timer.cancel()
        self._idle[key] = asyncio.get_running_loop().call_later(
            self._idle_seconds, self._flush, key
        )

    def _after_turn(self, session_id: str, conversation_id: str) -> None:
        key = (session_id, conversation_id)
        last = self._last.get(session_id)
        self._last[session_id] = conversation_id
        if last is None:  # a stopped process may have left the others owing
            self._spawn(self._flush_others(session_id, conversation_id))
        elif last != conversation_id:
            for other in [k for k in self._idle if k[0] == session_id and k != key]:
                self._flush(other)

    def _flush(self, key: tuple[str, str]) -> None:
        """Pay the conversation's waiting extraction now."""
        if (timer := self._idle.pop(key, None)) is not None:
            timer.cancel()
        self._begin(*key, merge=False, flush=True)

    async def _flush_others(self, session_id: str, conversation_id: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            registry = await loop.run_in_executor(self._pool, self._memory.registry, session_id)
        except Exception:
            logger.exception("reading the conversations to catch up failed")
            return
        for entry in registry.conversations:
            if entry.id != conversation_id and (session_id, entry.id) not in self._idle:
                self._begin(session_id, entry.id, merge=False, flush=True)

    def follow(self, upkeep: Upkeep) -> AsyncGenerator[UpkeepEvent, None]:
        """The `memory` events of `upkeep` from this call on (closing it stops following).
        Joined here, not at the first read: a caller sending `done` first misses none."""
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

    async def idle(self, *, flush: bool = True) -> None:
        """Wait until no upkeep runs; with `flush`, pay every waiting extraction first."""
        while True:
            for key in list(self._idle) if flush else ():
                self._flush(key)
            if not self._tasks:
                return
            await asyncio.wait(list(self._tasks))

    async def _drive(self, upkeep: Upkeep) -> None:
        loop = asyncio.get_running_loop()
        # one step of the loop first: the turn that asked is handed to its caller before
        # a worker starts, else the worker's first stretch of Python holds the GIL while
        # the caller waits to wake (a switch interval, 5 ms, on the reply path)
        try:
            await asyncio.sleep(0)
            while True:
                upkeep.again, flush, upkeep.flush = False, upkeep.flush, False
                waiting = await loop.run_in_executor(self._pool, self._pay, upkeep, loop, flush)
                if not upkeep.again:
                    break
            if waiting:  # paid when the conversation has been idle long enough
                self._arm((upkeep.session_id, upkeep.conversation_id))
        finally:
            del self._running[(upkeep.session_id, upkeep.conversation_id)]
            for queue in upkeep.listeners:
                queue.put_nowait(None)  # the end
            upkeep.finished.set()

    def _publish(self, upkeep: Upkeep, event: UpkeepEvent) -> None:
        for queue in upkeep.listeners:
            queue.put_nowait(event)

    # -- in an upkeep worker thread ------------------------------------------------------

    def _pay(self, upkeep: Upkeep, loop: asyncio.AbstractEventLoop, flush: bool) -> bool:
        """Run the upkeep graph under the conversation's upkeep lock; whether turns wait."""
        session_id, conversation_id = upkeep.session_id, upkeep.conversation_id
        key = "upkeep:" + self._memory.memory_thread(session_id, conversation_id)
        context = Context(session_id=session_id, conversation_id=conversation_id)
        batching = not flush and self._batch_turns > 1
        graph_input = (
            {"batch_from": self._started, "batch_turns": self._batch_turns} if batching else {}
        )
        output: dict[str, Any] = {}
        try:
            with self._memory.threads.locks.hold(key, UPKEEP_LOCK_TIMEOUT):
                modes: list[StreamMode] = ["custom", "values"]
                for mode, chunk in self._graph.stream(
                    graph_input, context=context, stream_mode=modes
                ):
                    if mode == "values" and isinstance(chunk, dict):
                        output = chunk
                    elif (event := custom_event(chunk)) is not None:
                        loop.call_soon_threadsafe(self._publish, upkeep, event)
        except LockTimeout:
            logger.warning("memory upkeep still running elsewhere; left on the record")
        except Exception:
            logger.exception("memory upkeep failed; what it owed stays on the record")
        return bool(output.get("waiting"))

    # -- from any thread -----------------------------------------------------------------

    def request(self, session_id: str, conversation_id: str) -> None:
        """`start`, not merged into a running upkeep, from a thread other than the loop's
        (returns at once)."""
        self._loop.submit(self.start(session_id, conversation_id, merge=False))

    def wait(self, timeout: float | None = None, *, flush: bool = True) -> bool:
        """Block until no upkeep runs (`flush`: waiting extractions first); False on a timeout."""
        try:
            self._loop.run(asyncio.wait_for(self.idle(flush=flush), timeout))
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Pay waiting extractions, wait briefly, stop the workers (the rest stays owed)."""
        if not self.wait(CLOSE_TIMEOUT):
            logger.warning("memory upkeep still running at close; left on the record")
        self._pool.shutdown(wait=False, cancel_futures=True)
