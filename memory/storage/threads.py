"""`ThreadStore`: the run threads' checkpointer and the memory documents, on one database.

The saver keeps LangGraph's contract (every checkpoint stays until pruned), so Studio's
time travel works on run threads; storage stays flat by policy instead: a finished run
thread is pruned to its latest checkpoint.
"""

from __future__ import annotations

import functools
import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from langgraph.store.base import BaseStore

from memory.errors import STORAGE_FAILED, ChatMemoryError, StorageError
from memory.storage.checkpointers import RunSaver
from memory.storage.documents import DocumentStore, InTransaction, Versions
from memory.storage.locks import DEFAULT_LOCK_TIMEOUT, KeyedLocks

logger = logging.getLogger(__name__)
P = ParamSpec("P")
R = TypeVar("R")


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


@dataclass(eq=False)
class ThreadStore:
    """The run threads' checkpointer and the memory documents' store, side by side;
    `locks` serialise a thread's writers across threads and processes."""

    checkpointer: RunSaver
    documents: DocumentStore
    locks: KeyedLocks
    _: KW_ONLY
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    on_close: Callable[[], None] | None
    """Closes the database, once the locks are released."""
    open_items: Callable[..., BaseStore]
    """`(index=None, ttl=None)`: the long-term store on this database
    (`UnsupportedDatabaseUrl`: not with the vector index asked for)."""

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """Hold the write lock of `thread_id` (raises `LockTimeout` past `lock_timeout`)."""
        return self.locks.hold(thread_id, self.lock_timeout)

    # -- memory documents ---------------------------------------------------------------

    @storage_errors
    def get_many(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored documents of `thread_ids` (absent ones left out), in one read."""
        return self.documents.get_documents(list(dict.fromkeys(thread_ids)))

    def get(self, thread_id: str) -> dict[str, Any] | None:
        """The stored document of `thread_id`, or None when the thread has none."""
        return self.get_many([thread_id]).get(thread_id)

    @storage_errors
    def put_many(
        self,
        documents: Mapping[str, Mapping[str, Any]],
        *,
        delete: Sequence[str] = (),
        also: InTransaction | None = None,
        expected: Versions | None = None,
    ) -> None:
        """`DocumentStore.put_documents`, whose `also` speaks `self.documents.dialect`.
        Callers hold the locks of what they read before writing, or say in `expected`
        what they read."""
        self.documents.put_documents(documents, delete, also=also, expected=expected)

    def put(self, thread_id: str, document: Mapping[str, Any]) -> None:
        """Replace the document of `thread_id`."""
        self.put_many({thread_id: document})

    def delete(self, thread_id: str) -> None:
        """Delete the document, checkpoints and writes of `thread_id` (a no-op when absent)."""
        self.put_many({}, delete=[thread_id])

    # -- run threads --------------------------------------------------------------------

    @storage_errors
    def prune_finished_runs(self, thread_ids: Sequence[str]) -> None:
        """Shrink finished run threads (no pending interrupt) to their latest checkpoint."""
        self.checkpointer.prune(thread_ids, strategy="keep_latest")

    @storage_errors
    def run_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """`channel` in the newest root checkpoint of each of `thread_ids`, in one query."""
        return self.checkpointer.get_channel_values(list(thread_ids), channel)

    def checkpoint_count(self, thread_id: str) -> int:
        """How many checkpoints `thread_id` has, in every namespace."""
        return sum(1 for _ in self.checkpointer.list({"configurable": {"thread_id": thread_id}}))

    # -- maintenance --------------------------------------------------------------------

    @storage_errors
    def list_threads(self, prefix: str) -> list[str]:
        """The ids of every thread (document or run thread) that starts with `prefix`."""
        listed = self.documents.list_threads(prefix)
        listed += self.checkpointer.list_threads(prefix)
        return list(dict.fromkeys(listed))

    @storage_errors
    def compact_storage(self) -> None:
        """Give deleted rows' space back to the file system (SQLite's VACUUM)."""
        self.documents.compact_storage()

    def close(self) -> None:
        """Release the locks, then the database."""
        if self.on_close is not None:
            self.locks.close()
            self.on_close()
            self.on_close = None
