"""Checkpointer-backed storage: one LangGraph thread per memory document.

A small memory graph, compiled with the checkpointer, defines a memory thread: one
`document` channel written by its `store_document` step. Each write leaves exactly
one checkpoint per thread, the one that step would leave, and the thread is pruned
to it, so storage stays flat however long the conversation runs. Reads and writes
go straight to the checkpointer (a graph run per write costs more than the write);
`ThreadStore.graph.get_state` reads the same threads through the graph.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    empty_checkpoint,
)
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from memory.errors import UNSUPPORTED_DATABASE_URL, UnsupportedDatabaseUrl
from memory.locks import DEFAULT_LOCK_TIMEOUT, KeyedLocks

logger = logging.getLogger(__name__)

DEFAULT_DATABASE_URL = "sqlite:///.agent-data/agent.sqlite"
SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_JOURNAL_SIZE_LIMIT = 1 << 20  # the WAL is truncated back to 1 MiB after checkpoints
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 256  # checkpoint the WAL into the database every ~1 MiB

DOCUMENT = "document"


class MemoryDocument(TypedDict):
    """State of a memory thread."""

    document: dict[str, Any]
    """The whole stored document (replaced on every write, never merged)."""


def store_document(state: MemoryDocument) -> MemoryDocument:
    """Write the given document as the thread's new state."""
    return {"document": state["document"]}


def build_memory_graph() -> StateGraph[MemoryDocument, None, MemoryDocument, MemoryDocument]:
    """The memory graph: `START → store_document → END`."""
    builder = StateGraph(MemoryDocument)
    builder.add_node(store_document)
    builder.add_edge(START, "store_document")
    builder.add_edge("store_document", END)
    return builder


class SqliteCheckpointer(SqliteSaver):
    """`SqliteSaver` with `prune` and the async API, both left unimplemented upstream.

    The async methods run the sync ones in a worker thread (the connection is shared
    under the saver's lock), so one checkpointer serves sync and async graphs on any
    event loop, and never blocks the loop.
    """

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

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune checkpoints of `thread_ids` (`keep_latest` or `delete`), as in the base API."""
        if strategy == "delete":
            for thread_id in thread_ids:
                self.delete_thread(thread_id)
            return
        if strategy != "keep_latest":
            raise ValueError(f"unknown prune strategy {strategy!r}")
        with self.cursor() as cur:
            for thread_id in thread_ids:
                for table in ("checkpoints", "writes"):
                    cur.execute(
                        f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_id < ("
                        "SELECT MAX(checkpoint_id) FROM checkpoints AS latest "
                        f"WHERE latest.thread_id = {table}.thread_id "
                        f"AND latest.checkpoint_ns = {table}.checkpoint_ns)",
                        (thread_id,),
                    )

    def keep_latest_root(self, thread_id: str) -> None:
        """Keep only the newest root checkpoint of `thread_id`; drop subgraph namespaces.

        For a finished run thread: the checkpoints of its subgraphs (one namespace per
        turn) and its pending writes are history nobody resumes from.
        """
        with self.cursor() as cur:
            latest = cur.execute(
                "SELECT MAX(checkpoint_id) FROM checkpoints "
                "WHERE thread_id = ? AND checkpoint_ns = ''",
                (thread_id,),
            ).fetchone()[0]
            if latest is None:
                return
            for table in ("checkpoints", "writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? "
                    "AND NOT (checkpoint_ns = '' AND checkpoint_id = ?)",
                    (thread_id, latest),
                )


class ThreadStore:
    """Documents stored as single-checkpoint threads of a LangGraph checkpointer.

    Args:
        checkpointer: where threads live; the agent graph's run threads may share it.
        locks: serialises writers of a thread across threads and processes.
        lock_timeout: seconds a writer waits for a thread's lock.
        on_close: releases the backend's resources.
    """

    def __init__(
        self,
        checkpointer: BaseCheckpointSaver[Any],
        locks: KeyedLocks,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.checkpointer = checkpointer
        self.locks = locks
        self.lock_timeout = lock_timeout
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = build_memory_graph().compile(
            checkpointer=checkpointer, name="memory"
        )
        self._on_close = on_close

    @staticmethod
    def _config(thread_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id}}

    def lock(self, thread_id: str, timeout: float | None = None) -> AbstractContextManager[None]:
        """Hold the write lock of `thread_id` (raises `LockTimeout` past `timeout`)."""
        return self.locks.hold(thread_id, self.lock_timeout if timeout is None else timeout)

    def get(self, thread_id: str) -> dict[str, Any] | None:
        """The stored document of `thread_id`, or None when the thread has none."""
        saved = self.checkpointer.get_tuple(self._config(thread_id))
        document = saved.checkpoint["channel_values"].get(DOCUMENT) if saved else None
        return dict(document) if isinstance(document, dict) else None

    def put(self, thread_id: str, document: dict[str, Any]) -> None:
        """Replace the document of `thread_id`, keeping only the new checkpoint.

        The checkpoint is the one the memory graph's `store_document` step would
        leave (its `document` channel at a new version), written in one `put`
        without running the graph; the thread is then pruned to it. Callers hold
        `lock(thread_id)` when they read before writing.
        """
        config = self._config(thread_id)
        previous = self.checkpointer.get_tuple(config)
        checkpoint = empty_checkpoint()
        version = self.checkpointer.get_next_version(
            previous.checkpoint["channel_versions"].get(DOCUMENT) if previous else None, None
        )
        checkpoint["channel_values"] = {DOCUMENT: document}
        checkpoint["channel_versions"] = {DOCUMENT: version}
        step = previous.metadata.get("step", -1) + 1 if previous else 0
        parent: RunnableConfig = (
            previous.config
            if previous
            else {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        )
        self.checkpointer.put(
            parent,
            checkpoint,
            {"source": "update", "step": step, "parents": {}},
            {DOCUMENT: version},
        )
        self.checkpointer.prune([thread_id], strategy="keep_latest")

    def prune_finished_run(self, thread_id: str) -> None:
        """Shrink a run thread whose turn finished (no pending interrupt) to one checkpoint."""
        checkpointer = self.checkpointer
        if isinstance(checkpointer, SqliteCheckpointer):
            checkpointer.keep_latest_root(thread_id)
        else:
            checkpointer.prune([thread_id], strategy="keep_latest")

    def delete(self, thread_id: str) -> None:
        """Delete every checkpoint and write of `thread_id` (a no-op when absent)."""
        self.checkpointer.delete_thread(thread_id)

    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints `thread_id` has (1 after any write)."""
        return sum(1 for _ in self.checkpointer.list(self._config(thread_id)))

    def close(self) -> None:
        """Release the backend (connection, lock file)."""
        if self._on_close is not None:
            self._on_close()
            self._on_close = None


@dataclass(frozen=True)
class DatabaseUrl:
    """A parsed `AGENT_DATABASE_URL`."""

    scheme: str
    location: str

    @property
    def sqlite_path(self) -> Path | None:
        """The SQLite file, or None for an in-memory database."""
        return None if self.location == ":memory:" else Path(self.location)


def parse_database_url(url: str) -> DatabaseUrl:
    """Parse `sqlite:///relative.sqlite`, `sqlite:////abs.sqlite`, `sqlite:///:memory:`
    or `postgresql://…`.

    Raises:
        UnsupportedDatabaseUrl: for any other form.
    """
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in _OPENERS:
        raise UnsupportedDatabaseUrl(UNSUPPORTED_DATABASE_URL.format(url=url))
    if parts.scheme == "sqlite":
        location = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
        if parts.netloc or not location:
            raise UnsupportedDatabaseUrl(UNSUPPORTED_DATABASE_URL.format(url=url))
        return DatabaseUrl("sqlite", location)
    return DatabaseUrl(parts.scheme, url)


def _open_sqlite(url: DatabaseUrl, lock_timeout: float) -> ThreadStore:
    path = url.sqlite_path
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(
        str(path) if path else ":memory:",
        check_same_thread=False,
        timeout=SQLITE_BUSY_TIMEOUT_S,
    )
    conn.execute(f"PRAGMA journal_size_limit = {SQLITE_JOURNAL_SIZE_LIMIT}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_WAL_AUTOCHECKPOINT_PAGES}")
    # WAL + NORMAL never corrupts and survives process crashes; a power cut may lose
    # the last transactions, an accepted trade for conversation memory.
    conn.execute("PRAGMA synchronous = NORMAL")
    checkpointer = SqliteCheckpointer(conn)
    checkpointer.setup()
    locks = KeyedLocks(path.with_name(path.name + ".locks") if path else None)

    def close() -> None:
        locks.close()
        conn.close()

    return ThreadStore(checkpointer, locks, lock_timeout=lock_timeout, on_close=close)


def _open_postgres(url: DatabaseUrl, lock_timeout: float) -> ThreadStore:
    # The seam for langgraph-checkpoint-postgres: a PostgresSaver plus advisory locks.
    raise UnsupportedDatabaseUrl(
        "PostgreSQL storage is not available in this build yet; use sqlite:///path"
    )


_OPENERS: dict[str, Callable[[DatabaseUrl, float], ThreadStore]] = {
    "sqlite": _open_sqlite,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}


def open_thread_store(
    database_url: str = DEFAULT_DATABASE_URL, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT
) -> ThreadStore:
    """Open the thread store that `database_url` names (see `parse_database_url`)."""
    url = parse_database_url(database_url)
    return _OPENERS[url.scheme](url, lock_timeout)


def iter_thread_ids(store: ThreadStore) -> Iterator[str]:
    """Every thread id that has a checkpoint (for maintenance and tests)."""
    seen: set[str] = set()
    for item in store.checkpointer.list(None):
        thread_id = str(item.config["configurable"]["thread_id"])
        if thread_id not in seen:
            seen.add(thread_id)
            yield thread_id
