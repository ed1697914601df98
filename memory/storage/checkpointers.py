"""What the agent's checkpointers add to LangGraph's savers: the async half.

`SqliteSaver` and `PostgresSaver` are sync savers whose async methods raise. Their
connections are shared under a lock (SQLite) or pooled (PostgreSQL), so the async API
can run the sync methods in worker threads: one checkpointer then serves sync and
async graphs on any event loop, and never blocks the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)


class RunSaver(BaseCheckpointSaver[Any]):
    """The agent's savers (SQLite, PostgreSQL): the async API, and two reads of their own."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

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

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """`channel` in the newest root checkpoint of each of `thread_ids` that has it."""
        raise NotImplementedError

    def list_threads(self, prefix: str) -> list[str]:
        """Every thread id with a checkpoint that starts with `prefix`."""
        raise NotImplementedError
