"""What the agent's checkpointers add to LangGraph's savers: the async half.

`SqliteSaver` and `PostgresSaver` are sync savers whose async methods raise. Their
connections are shared under a lock (SQLite) or pooled (PostgreSQL), so the async API
can run the sync methods in worker threads: one checkpointer then serves sync and
async graphs on any event loop, and never blocks the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(
    method: Callable[Concatenate[Any, P], R],
) -> Callable[Concatenate[Any, P], Coroutine[Any, Any, R]]:
    """The async twin of a saver method: the saver's own (by name) in a worker thread,
    with `method`'s signature (LangGraph reads `aput_writes`' for `task_path`)."""
    name = method.__name__

    async def run(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return await asyncio.to_thread(getattr(self, name), *args, **kwargs)

    run.__wrapped__ = method  # type: ignore[attr-defined]
    return run


class RunSaver(BaseCheckpointSaver[Any]):
    """The agent's savers (SQLite, PostgreSQL): the async API, and two reads of their own."""

    aget_tuple = _in_thread(BaseCheckpointSaver.get_tuple)
    aput = _in_thread(BaseCheckpointSaver.put)
    aput_writes = _in_thread(BaseCheckpointSaver.put_writes)
    adelete_thread = _in_thread(BaseCheckpointSaver.delete_thread)
    aprune = _in_thread(BaseCheckpointSaver.prune)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    get_channel_values: Callable[[Sequence[str], str], dict[str, Any]]
    """`(thread_ids, channel)`: `channel` in the newest root checkpoint of each that has it."""
    list_threads: Callable[[str], list[str]]
    """Every thread id with a checkpoint that starts with the prefix given."""
