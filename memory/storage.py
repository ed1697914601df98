"""Checkpointer-backed storage: one LangGraph thread per memory document.

A small memory graph, compiled with the checkpointer, defines a memory thread: one
`document` channel written by its `store_document` step. Each write leaves exactly
one checkpoint per thread, the one that step would leave (`memory.documents`), so
storage stays flat however long the conversation runs. Reads and writes go straight
to the backend: several documents are read in one query and written in one
transaction; `ThreadStore.graph.get_state` reads the same threads through the graph.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import unquote, urlsplit

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore, IndexConfig, TTLConfig
from typing_extensions import TypedDict

from memory.documents import DocumentSaver
from memory.errors import (
    STORAGE_FAILED,
    UNSUPPORTED_DATABASE_URL,
    ChatMemoryError,
    StorageError,
    UnsupportedDatabaseUrl,
)
from memory.locks import DEFAULT_LOCK_TIMEOUT, KeyedLocks

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")

DEFAULT_DATABASE_URL = "sqlite:///.agent-data/agent.sqlite"
POSTGRES_EXTRA_MISSING = (
    "PostgreSQL storage needs the postgres extra: pip install 'langgraph-memory-agent[postgres]'"
)


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


def describe_failure(exc: BaseException) -> str:
    """What went wrong, without what it was given: the error's type, the database's
    error code when there is one, and where it was raised (file and line)."""
    parts = [type(exc).__name__]
    code = getattr(exc, "sqlstate", None) or getattr(exc, "sqlite_errorname", None)
    if code:
        parts.append(str(code))
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        parts.append(f"at {Path(frames[-1].filename).name}:{frames[-1].lineno}")
    return " ".join(parts)


def storage_errors(method: Callable[P, R]) -> Callable[P, R]:
    """Turn a backend failure into `StorageError` (its kind and place are logged, never
    its message, never shown); the memory package's own errors pass through."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except ChatMemoryError:
            raise
        except Exception as exc:
            logger.warning("storage failed in %s: %s", method.__name__, describe_failure(exc))
            # the cause stays out of any later traceback: a driver's message may quote
            # the values it was given, the user's text among them
            raise StorageError(STORAGE_FAILED) from None

    return wrapper


class ThreadStore:
    """Documents stored as single-checkpoint threads of a LangGraph checkpointer.

    Args:
        checkpointer: where threads live; the agent graph's run threads share it. It
            must also be a `DocumentSaver` (the SQLite and PostgreSQL backends are).
        locks: serialises writers of a thread across threads and processes.
        lock_timeout: seconds a writer waits for a thread's lock.
        on_close: releases the backend's resources.
        open_items: opens the backend's long-term store (`BaseStore`) on the same
            database, given its vector index and TTL settings.
    """

    def __init__(
        self,
        checkpointer: BaseCheckpointSaver[Any],
        locks: KeyedLocks,
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        on_close: Callable[[], None] | None = None,
        open_items: Callable[..., BaseStore] | None = None,
    ) -> None:
        if not isinstance(checkpointer, DocumentSaver):
            raise TypeError(f"{type(checkpointer).__name__} cannot store memory documents")
        self.checkpointer = checkpointer
        self.documents: DocumentSaver = checkpointer
        self.locks = locks
        self.lock_timeout = lock_timeout
        self.graph: CompiledStateGraph[Any, Any, Any, Any] = build_memory_graph().compile(
            checkpointer=checkpointer, name="memory"
        )
        self._on_close = on_close
        self._open_items = open_items

    def open_items(
        self, index: IndexConfig | None = None, ttl: TTLConfig | None = None
    ) -> BaseStore:
        """The long-term store on this store's database (SQLite file or PostgreSQL).

        Raises:
            UnsupportedDatabaseUrl: the backend has no long-term store, or cannot give
                the vector index asked for.
        """
        if self._open_items is None:
            raise UnsupportedDatabaseUrl("this storage backend has no long-term store")
        return self._open_items(index=index, ttl=ttl)

    @staticmethod
    def _config(thread_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id}}

    def lock(self, thread_id: str, timeout: float | None = None) -> AbstractContextManager[None]:
        """Hold the write lock of `thread_id` (raises `LockTimeout` past `timeout`)."""
        return self.locks.hold(thread_id, self.lock_timeout if timeout is None else timeout)

    @storage_errors
    def get_many(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored documents of `thread_ids` (absent ones left out), in one read."""
        return self.documents.get_documents(list(dict.fromkeys(thread_ids)))

    def get(self, thread_id: str) -> dict[str, Any] | None:
        """The stored document of `thread_id`, or None when the thread has none."""
        return self.get_many([thread_id]).get(thread_id)

    @storage_errors
    def put_many(
        self, documents: Mapping[str, Mapping[str, Any]], *, delete: Sequence[str] = ()
    ) -> None:
        """In one transaction: replace each document (its thread keeps one checkpoint)
        and delete the threads in `delete`. Callers hold the locks of what they read
        before writing."""
        self.documents.put_documents(documents, delete)

    def put(self, thread_id: str, document: Mapping[str, Any]) -> None:
        """Replace the document of `thread_id`, keeping only the new checkpoint."""
        self.put_many({thread_id: document})

    def delete_many(self, thread_ids: Sequence[str]) -> None:
        """Delete every checkpoint and write of `thread_ids`, in one transaction."""
        if thread_ids:
            self.put_many({}, delete=thread_ids)

    def delete(self, thread_id: str) -> None:
        """Delete every checkpoint and write of `thread_id` (a no-op when absent)."""
        self.delete_many([thread_id])

    @storage_errors
    def redact_threads(self, thread_ids: Sequence[str], redact: Callable[[str, Any], Any]) -> int:
        """In one transaction: replace every stored value of `thread_ids` (checkpoint
        channel values and pending writes, every namespace) with `redact(thread_id,
        value)` where that returns another object; returns how many changed. Callers
        hold the locks of the threads' writers."""
        return self.documents.redact_threads(list(dict.fromkeys(thread_ids)), redact)

    @storage_errors
    def prune_finished_run(self, thread_id: str) -> None:
        """Shrink a run thread whose turn finished (no pending interrupt) to one checkpoint."""
        self.documents.keep_latest_root(thread_id)

    @storage_errors
    def list_threads(self, prefix: str) -> list[str]:
        """The ids of every thread whose id starts with `prefix`."""
        return self.documents.list_threads(prefix)

    @storage_errors
    def compact_storage(self) -> None:
        """Give deleted rows' space back to the file system (SQLite's VACUUM)."""
        self.documents.compact_storage()

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


def _open_sqlite(url: DatabaseUrl, lock_timeout: float) -> ThreadStore:
    from memory.sqlite import open_sqlite

    checkpointer, locks, close, open_items = open_sqlite(url.sqlite_path)
    return ThreadStore(
        checkpointer, locks, lock_timeout=lock_timeout, on_close=close, open_items=open_items
    )


def _open_postgres(url: DatabaseUrl, lock_timeout: float) -> ThreadStore:
    try:
        from memory.postgres import open_postgres
    except ImportError as exc:
        raise UnsupportedDatabaseUrl(POSTGRES_EXTRA_MISSING) from exc

    checkpointer, locks, close, open_items = open_postgres(url.location)
    return ThreadStore(
        checkpointer, locks, lock_timeout=lock_timeout, on_close=close, open_items=open_items
    )


_OPENERS: dict[str, Callable[[DatabaseUrl, float], ThreadStore]] = {
    "sqlite": _open_sqlite,
    "postgresql": _open_postgres,
    "postgres": _open_postgres,
}


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
