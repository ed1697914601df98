"""What the agent's checkpointers add to LangGraph's savers: the async half, and one
checkpoint per thread and namespace.

`SqliteSaver` and `PostgresSaver` are sync savers whose async methods raise. Their
connections are shared under a lock, so the async API can run the sync methods in
worker threads: one checkpointer then serves sync and async graphs on any event
loop, and never blocks the loop.

A run thread is only ever resumed from its latest checkpoint (a pending review, a
crashed workflow), so each `put` drops the older checkpoints of its namespace, with
their writes: storage stays flat without a prune after every turn.
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


class ThreadedAsyncSaver(BaseCheckpointSaver[Any]):
    """Mixin: the async checkpointer API over the sync one, in worker threads, and a
    `put` that keeps only the newest checkpoint of its thread and namespace."""

    def drop_older(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> None:
        """Delete the checkpoints (and their writes) of `thread_id`/`checkpoint_ns`
        older than `checkpoint_id`."""
        raise NotImplementedError

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        stored = super().put(config, checkpoint, metadata, new_versions)
        configurable = stored["configurable"]
        self.drop_older(
            configurable["thread_id"], configurable["checkpoint_ns"], configurable["checkpoint_id"]
        )
        return stored

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
