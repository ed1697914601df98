"""A private event loop in a daemon thread, shared by the sync and async APIs.

Model clients hold connection pools bound to the loop that opened them; running
every turn on one loop lets `send` work from a notebook (whose own loop is busy)
and `asend` from any server loop, with cancellation passed through.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")
UNWIND_TIMEOUT_S = 5.0
_DONE = object()


class BackgroundLoop:
    """Runs coroutines on one event loop in a daemon thread."""

    def __init__(self, name: str = "chat-agent-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule `coro` on the loop."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run `coro` to completion from synchronous code (blocks the caller)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("BackgroundLoop.run called from its own loop")
        return self.submit(coro).result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await `coro` from another loop; cancelling the caller cancels the work."""
        future = self.submit(coro)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise

    async def astream(self, source: AsyncIterator[T]) -> AsyncGenerator[T, None]:
        """Iterate `source` on the loop and yield its items in the caller's loop. Closing or
        cancelling the consumer cancels the producer and waits (briefly) until it has
        unwound, so that what it held (a conversation's lock) is free when this returns."""
        caller = asyncio.get_running_loop()
        queue: asyncio.Queue[Any] = asyncio.Queue()
        finished = asyncio.Event()

        def hand_over(callback: Any, *args: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the consumer's loop has closed
                caller.call_soon_threadsafe(callback, *args)

        async def produce() -> None:
            try:
                async for item in source:
                    hand_over(queue.put_nowait, item)
            except BaseException as exc:  # handed to the consumer, re-raised there
                hand_over(queue.put_nowait, exc)
                if isinstance(exc, asyncio.CancelledError):
                    return
            finally:
                hand_over(queue.put_nowait, _DONE)
                hand_over(finished.set)

        future = self.submit(produce())
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not future.done():
                future.cancel()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(finished.wait(), UNWIND_TIMEOUT_S)

    def close(self) -> None:
        """Stop the loop and wait for its thread."""
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()
