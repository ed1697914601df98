"""Collaborators of the graphs, built lazily so that importing a graph builds nothing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """A value built by `factory` on first use, once, thread-safely.

    Factories may block (opening a database, reading a secret): `aget` builds in a
    worker thread so the event loop never blocks.
    """

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._value: T | None = None
        self._built = False

    @classmethod
    def of(cls, value: T | Lazy[T]) -> Lazy[T]:
        """`value` itself if it is a `Lazy`, else a `Lazy` already holding `value`."""
        if isinstance(value, Lazy):
            return value
        lazy: Lazy[T] = cls(lambda: value)
        lazy._value, lazy._built = value, True
        return lazy

    def get(self) -> T:
        """The value, building it on first use."""
        if not self._built:
            with self._lock:
                if not self._built:
                    self._value = self._factory()
                    self._built = True
        return self._value  # type: ignore[return-value]

    async def aget(self) -> T:
        """The value; a first build runs in a worker thread."""
        if self._built:
            return self._value  # type: ignore[return-value]
        return await asyncio.to_thread(self.get)
