"""SQLite storage: the checkpointer (with `prune` and memory documents) and file locks."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore, IndexConfig, Item, Op, Result, TTLConfig
from langgraph.store.sqlite import SqliteStore

from memory.checkpointers import ThreadedAsyncSaver
from memory.documents import DOCUMENT_METADATA, checkpoint_document, document_checkpoint
from memory.errors import EMBEDDINGS_UNSUPPORTED, UnsupportedDatabaseUrl
from memory.files import PRIVATE_FILE_MODE, make_private_dir
from memory.locks import FileLocks, KeyedLocks

SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_JOURNAL_SIZE_LIMIT = 1 << 20  # the WAL is truncated back to 1 MiB after checkpoints
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 256  # checkpoint the WAL into the database every ~1 MiB


SETUP_LOCK_KEY = "sqlite-setup"
"""Serialises `setup()` (tables, WAL mode) of processes opening a new file together."""
SQLITE_SIDE_FILES = ("-wal", "-shm")

INSERT_DOCUMENT_SQL = (
    "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, "
    "type, checkpoint, metadata) VALUES (?, '', ?, NULL, ?, ?, ?)"
)


class SqliteCheckpointer(ThreadedAsyncSaver, SqliteSaver):
    """`SqliteSaver` with `prune`, the async API (both left unimplemented upstream) and
    memory documents (`memory.documents.DocumentSaver`).

    The connection is shared under the saver's lock, so the async methods can run the
    sync ones in worker threads (`ThreadedAsyncSaver`).
    """

    def drop_older(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> None:
        """Delete the older checkpoints of this thread and namespace, and their writes."""
        with self.cursor() as cur:
            for table in ("checkpoints", "writes"):
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                    "AND checkpoint_id < ?",
                    (thread_id, checkpoint_ns, checkpoint_id),
                )

    def _newest_roots(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The newest root checkpoint of each of `thread_ids` that has one, in one query."""
        if not thread_ids:
            return {}
        marks = ", ".join("?" * len(thread_ids))
        with self.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT thread_id, type, checkpoint FROM checkpoints c "
                f"WHERE checkpoint_ns = '' AND thread_id IN ({marks}) AND checkpoint_id = ("
                "SELECT MAX(checkpoint_id) FROM checkpoints l "
                "WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = '')",
                tuple(thread_ids),
            ).fetchall()
        return {thread: self.serde.loads_typed((type_, blob)) for thread, type_, blob in rows}

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The memory documents of `thread_ids`, read in one query."""
        documents = {
            thread: checkpoint_document(checkpoint)
            for thread, checkpoint in self._newest_roots(thread_ids).items()
        }
        return {thread: doc for thread, doc in documents.items() if doc is not None}

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """`channel` in the newest root checkpoint of each thread, in one query."""
        values = {
            thread: checkpoint.get("channel_values", {})
            for thread, checkpoint in self._newest_roots(thread_ids).items()
        }
        return {thread: found[channel] for thread, found in values.items() if channel in found}

    def list_threads(self, prefix: str) -> list[str]:
        """Every thread id starting with `prefix`."""
        with self.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE substr(thread_id, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        return [row[0] for row in rows]

    def compact_storage(self) -> None:
        """VACUUM the file (outside any transaction), then truncate the WAL."""
        with self.lock:
            self.conn.commit()
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def put_documents(
        self, documents: Mapping[str, Mapping[str, Any]], delete: Sequence[str] = ()
    ) -> None:
        """Replace the documents and delete the threads in `delete`, in one transaction."""
        metadata = json.dumps(DOCUMENT_METADATA).encode()
        rows = []
        for thread_id, document in documents.items():
            checkpoint = document_checkpoint(document, self.get_next_version(None, None))
            type_, blob = self.serde.dumps_typed(checkpoint)
            rows.append((thread_id, checkpoint["id"], type_, blob, metadata))
        with self.lock, closing(self.conn.cursor()) as cur:
            try:
                for thread_id in (*documents, *delete):
                    cur.execute("DELETE FROM checkpoints WHERE thread_id = ?", (thread_id,))
                    cur.execute("DELETE FROM writes WHERE thread_id = ?", (thread_id,))
                cur.executemany(INSERT_DOCUMENT_SQL, rows)
                self.conn.commit()
            except BaseException:
                self.conn.rollback()
                raise

    def redact_threads(self, thread_ids: Sequence[str], redact: Callable[[str, Any], Any]) -> int:
        """Rewrite the checkpoints and pending writes of `thread_ids` whose values
        `redact` changes, in one transaction."""
        if not thread_ids:
            return 0
        marks = ", ".join("?" * len(thread_ids))
        changed = 0
        with self.lock, closing(self.conn.cursor()) as cur:
            try:
                rows = cur.execute(
                    "SELECT rowid, thread_id, type, checkpoint FROM checkpoints "
                    f"WHERE thread_id IN ({marks})",
                    tuple(thread_ids),
                ).fetchall()
                for rowid, thread_id, type_, blob in rows:
                    checkpoint = self.serde.loads_typed((type_, blob))
                    values = checkpoint.get("channel_values") or {}
                    redacted = {key: redact(thread_id, value) for key, value in values.items()}
                    touched = sum(redacted[key] is not value for key, value in values.items())
                    if touched:
                        dumped = self.serde.dumps_typed({**checkpoint, "channel_values": redacted})
                        cur.execute(
                            "UPDATE checkpoints SET type = ?, checkpoint = ? WHERE rowid = ?",
                            (*dumped, rowid),
                        )
                        changed += touched
                writes = cur.execute(
                    "SELECT rowid, thread_id, type, value FROM writes "
                    f"WHERE thread_id IN ({marks})",
                    tuple(thread_ids),
                ).fetchall()
                for rowid, thread_id, type_, blob in writes:
                    value = self.serde.loads_typed((type_, blob))
                    redacted_value = redact(thread_id, value)
                    if redacted_value is not value:
                        cur.execute(
                            "UPDATE writes SET type = ?, value = ? WHERE rowid = ?",
                            (*self.serde.dumps_typed(redacted_value), rowid),
                        )
                        changed += 1
                self.conn.commit()
            except BaseException:
                self.conn.rollback()
                raise
        return changed

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


class SharedSqliteStore(SqliteStore):
    """`SqliteStore` on the checkpointer's connection, under the checkpointer's lock, so
    both share one file (or one in-memory database) without interleaving transactions.

    Upstream commits a batch even when it fails half-way; here a failed batch rolls
    back, so a long-term write is all or nothing. Upstream also serves expired items
    until the sweep deletes them; here, with `omit_expired` in the TTL config (as
    `PostgresStore` reads it), reads leave them out.
    """

    def __init__(
        self,
        checkpointer: SqliteCheckpointer,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        super().__init__(checkpointer.conn, index=index, ttl=ttl)
        self.lock = checkpointer.lock

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the batch; with `omit_expired`, leave out of what it read the items whose
        TTL ran out (the sweep's own test, through its index on `expires_at`)."""
        results = super().batch(ops)
        if not (self.ttl_config and self.ttl_config.get("omit_expired")):
            return results
        with self._cursor(transaction=False) as cur:
            expired = {
                (prefix, key)
                for prefix, key in cur.execute(
                    "SELECT prefix, key FROM store "
                    "WHERE expires_at IS NOT NULL AND expires_at < CURRENT_TIMESTAMP"
                )
            }
        return [_without(result, expired) for result in results] if expired else results

    @contextmanager
    def _cursor(self, *, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        if not self.is_setup:
            self.setup()
        with self.lock:
            if transaction:
                self.conn.execute("BEGIN")
            cur = self.conn.cursor()
            try:
                yield cur
            except BaseException:
                if transaction:
                    self.conn.execute("ROLLBACK")
                raise
            else:
                if transaction:
                    self.conn.execute("COMMIT")
            finally:
                cur.close()


def _without(result: Result, expired: set[tuple[str, str]]) -> Result:
    """A store result without the items in `expired` (by joined namespace and key)."""

    def gone(item: Item) -> bool:
        return (".".join(item.namespace), item.key) in expired

    if isinstance(result, Item):
        return None if gone(result) else result
    if isinstance(result, list) and result and isinstance(result[0], Item):
        return [item for item in result if not gone(item)]
    return result


def open_sqlite_items(
    checkpointer: SqliteCheckpointer,
    locks: KeyedLocks,
    index: IndexConfig | None = None,
    ttl: TTLConfig | None = None,
) -> BaseStore:
    """The long-term store (`SqliteStore`) on the checkpointer's database.

    Raises:
        UnsupportedDatabaseUrl: a vector index was asked for, and this Python's sqlite3
            cannot load the sqlite-vec extension.
    """
    if index is not None and not hasattr(sqlite3.Connection, "enable_load_extension"):
        why = "this Python's sqlite3 was built without loadable extensions (sqlite-vec)"
        raise UnsupportedDatabaseUrl(EMBEDDINGS_UNSUPPORTED.format(why=why))
    store = SharedSqliteStore(checkpointer, index=index, ttl=ttl)
    with locks.hold(SETUP_LOCK_KEY, SQLITE_BUSY_TIMEOUT_S):
        store.setup()
        with checkpointer.lock:  # its migrations leave the implicit transaction of the
            checkpointer.conn.commit()  # shared connection (not in autocommit) open
    return store


def create_private(path: Path) -> None:
    """Create `path` (and missing parents) readable by this user only: conversations are
    private data. Existing files keep their mode, except that a database file and its
    WAL and shared-memory files are narrowed to 0600."""
    make_private_dir(path.parent)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE))
    for candidate in (path, *(path.with_name(path.name + s) for s in SQLITE_SIDE_FILES)):
        if candidate.exists() and candidate.stat().st_mode & 0o077:
            candidate.chmod(PRIVATE_FILE_MODE)


def open_sqlite(
    path: Path | None,
) -> tuple[SqliteCheckpointer, KeyedLocks, Callable[[], None], Callable[..., BaseStore]]:
    """The checkpointer, locks, closer and long-term store opener of a SQLite file (None:
    in memory, this process only).

    SQLite creates the WAL and shared-memory files with the database file's mode, so
    creating that file 0600 first keeps all of them private.
    """
    if path is not None:
        create_private(path)
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
    locks = FileLocks(path.with_name(path.name + ".locks")) if path else KeyedLocks()
    with locks.hold(SETUP_LOCK_KEY, SQLITE_BUSY_TIMEOUT_S):
        checkpointer.setup()

    def close() -> None:
        locks.close()
        conn.close()

    def open_items(index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> BaseStore:
        return open_sqlite_items(checkpointer, locks, index, ttl)

    return checkpointer, locks, close, open_items
