"""SQLite storage: the checkpointer (with `prune`) and file locks beside the database."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from memory.checkpointers import ThreadedAsyncSaver
from memory.locks import FileLocks, KeyedLocks

SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_JOURNAL_SIZE_LIMIT = 1 << 20  # the WAL is truncated back to 1 MiB after checkpoints
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 256  # checkpoint the WAL into the database every ~1 MiB


class SqliteCheckpointer(ThreadedAsyncSaver, SqliteSaver):
    """`SqliteSaver` with `prune` and the async API, both left unimplemented upstream.

    The connection is shared under the saver's lock, so the async methods can run the
    sync ones in worker threads (`ThreadedAsyncSaver`).
    """

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


def open_sqlite(path: Path | None) -> tuple[SqliteCheckpointer, KeyedLocks, Callable[[], None]]:
    """The checkpointer and locks of a SQLite file (None: in memory, this process only)."""
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
    locks = FileLocks(path.with_name(path.name + ".locks")) if path else KeyedLocks()

    def close() -> None:
        locks.close()
        conn.close()

    return checkpointer, locks, close
