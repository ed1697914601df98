"""SQLite storage: the checkpointer (`SqliteSaver` with `prune` and the async API), the
memory documents beside it on the same connection, and file locks."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.store.base import BaseStore, IndexConfig, Item, Op, Result, TTLConfig
from langgraph.store.sqlite import SqliteStore

from memory.checkpointers import RunSaver, check_prune_arguments
from memory.documents import DOCUMENTS_TABLE, Dialect, InTransaction
from memory.errors import EMBEDDINGS_UNSUPPORTED, UnsupportedDatabaseUrl
from memory.files import PRIVATE_FILE_MODE, make_private_dir
from memory.locks import FileLocks, KeyedLocks

SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_JOURNAL_SIZE_LIMIT = 1 << 20  # the WAL is truncated back to 1 MiB after checkpoints
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 256  # checkpoint the WAL into the database every ~1 MiB


SETUP_LOCK_KEY = "sqlite-setup"
"""Serialises `setup()` (tables, WAL mode) of processes opening a new file together."""
SQLITE_SIDE_FILES = ("-wal", "-shm")
CHECKPOINT_TABLES = ("checkpoints", "writes")
DELTA_MARKERS = ('"counters_since_delta_snapshot"', '"delta_writes_versioned"')
"""Metadata keys of a thread whose graph uses a `DeltaChannel`: its latest value is
rebuilt from older checkpoints, which `keep_latest` would delete."""
LEGACY_DOCUMENT_METADATA = json.dumps({"source": "update", "step": 0, "parents": {}}).encode()
"""The metadata of a memory document stored as a single-checkpoint thread (the
layout before documents had their own table)."""

SELECT_HEADS_SQL = (
    "SELECT checkpoint_ns, checkpoint_id, metadata FROM checkpoints c "
    "WHERE thread_id = ? AND checkpoint_id = ("
    "SELECT MAX(checkpoint_id) FROM checkpoints l "
    "WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = c.checkpoint_ns)"
)


@contextmanager
def sqlite_transaction(conn: sqlite3.Connection, lock: threading.Lock) -> Iterator[sqlite3.Cursor]:
    """One write transaction on the shared connection, under its lock.

    `BEGIN IMMEDIATE` takes the file's write lock first (waiting up to the busy
    timeout): a transaction that reads before it writes then never fails on another
    process's commit in between.
    """
    with lock, closing(conn.cursor()) as cur:
        if conn.in_transaction:  # an upstream statement left its implicit one open
            conn.commit()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def delete_threads(cur: sqlite3.Cursor, thread_ids: Sequence[str]) -> None:
    """Delete every checkpoint and write of `thread_ids` (in the caller's transaction)."""
    for thread_id in thread_ids:
        for table in CHECKPOINT_TABLES:
            cur.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))


def keep_latest(cur: sqlite3.Cursor, thread_id: str) -> None:
    """Keep the latest checkpoint of each namespace of `thread_id`, with its writes.

    A subgraph call's namespace (its task id after a ":") goes with the root
    checkpoint the call started from, once that one is saved and is not the one kept.
    A kept checkpoint whose parent is deleted is left with no parent.

    Raises:
        NotImplementedError: the thread uses a `DeltaChannel`; nothing is pruned.
    """
    marked = " OR ".join("instr(CAST(metadata AS TEXT), ?) > 0" for _ in DELTA_MARKERS)
    delta = cur.execute(
        f"SELECT 1 FROM checkpoints WHERE thread_id = ? AND ({marked}) LIMIT 1",
        (thread_id, *DELTA_MARKERS),
    ).fetchone()
    if delta is not None:
        raise NotImplementedError(f"keep_latest can't prune a DeltaChannel thread: {thread_id}")
    heads = {
        ns: (head, json.loads(metadata).get("parents", {}).get(""))
        for ns, head, metadata in cur.execute(SELECT_HEADS_SQL, (thread_id,)).fetchall()
    }
    kept_root = heads.get("", (None, None))[0]
    # decided before anything is deleted: the root checkpoints a call started from go
    calls = {
        ns
        for ns, (_, root) in heads.items()
        if ":" in ns
        and root is not None
        and root != kept_root
        and cur.execute(
            "SELECT 1 FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
            "AND checkpoint_id = ?",
            (thread_id, root),
        ).fetchone()
    }
    for ns, (head, _) in heads.items():
        if ns in calls:
            for table in CHECKPOINT_TABLES:
                cur.execute(
                    f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ?",
                    (thread_id, ns),
                )
            continue
        for table in CHECKPOINT_TABLES:  # writes of a checkpoint not saved yet stay
            cur.execute(
                f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ? "
                "AND checkpoint_id < ?",
                (thread_id, ns, head),
            )
        cur.execute(
            "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ? "
            "AND checkpoint_ns = ? AND checkpoint_id = ? AND parent_checkpoint_id IS NOT NULL",
            (thread_id, ns, head),
        )


class SqliteCheckpointer(RunSaver, SqliteSaver):
    """`SqliteSaver` with `prune` and the async API (both left unimplemented upstream).

    The connection is shared under the saver's lock, so the async methods can run the
    sync ones in worker threads (`memory.checkpointers.ThreadedAsyncSaver`).
    """

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune the checkpoints of `thread_ids`, all in one transaction.

        `keep_latest` keeps the latest checkpoint of each namespace with its pending
        writes (see `keep_latest`); `delete` removes every checkpoint and write.

        Raises:
            TypeError: `thread_ids` is a single string.
            ValueError: `strategy` is unknown.
            NotImplementedError: `keep_latest` on a thread that uses a `DeltaChannel`.
        """
        threads = check_prune_arguments(thread_ids, strategy)
        if not threads:
            return
        with sqlite_transaction(self.conn, self.lock) as cur:
            if strategy == "delete":
                delete_threads(cur, threads)
                return
            for thread_id in threads:
                keep_latest(cur, thread_id)

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """The value of `channel` in the newest root checkpoint of each of `thread_ids`
        (where it has one), in one query: a run thread's `status`, for instance."""
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
        values = {
            thread: self.serde.loads_typed((type_, blob)).get("channel_values", {})
            for thread, type_, blob in rows
        }
        return {thread: found[channel] for thread, found in values.items() if channel in found}

    def list_threads(self, prefix: str) -> list[str]:
        """Every thread id with a checkpoint that starts with `prefix`."""
        with self.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE substr(thread_id, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        return [row[0] for row in rows]


class SqliteDocuments:
    """Memory documents (`memory.documents.DocumentStore`) in the checkpointer's file,
    on its connection and under its lock: one JSON text per thread id."""

    dialect: Dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock

    def transaction(self) -> Any:
        """One write transaction on the shared connection, as a cursor."""
        return sqlite_transaction(self.conn, self.lock)

    def setup(self) -> None:
        """Create the documents table; on a file from before it existed, move the
        documents stored as single-checkpoint threads into it."""
        with self.transaction() as cur:
            found = cur.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (DOCUMENTS_TABLE,),
            ).fetchone()
            if found:
                return
            cur.execute(
                f"CREATE TABLE {DOCUMENTS_TABLE} "
                "(thread_id TEXT PRIMARY KEY, document TEXT NOT NULL) WITHOUT ROWID"
            )
            self._adopt_legacy(cur)

    def _adopt_legacy(self, cur: sqlite3.Cursor) -> None:
        serde = JsonPlusSerializer()
        rows = cur.execute(
            "SELECT thread_id, type, checkpoint FROM checkpoints "
            "WHERE checkpoint_ns = '' AND CAST(metadata AS BLOB) = ?",
            (LEGACY_DOCUMENT_METADATA,),
        ).fetchall()
        documents: dict[str, Any] = {}
        for thread_id, type_, blob in rows:
            values = serde.loads_typed((type_, blob)).get("channel_values", {})
            if set(values) == {"document"} and isinstance(values["document"], dict):
                documents[thread_id] = values["document"]
        delete_threads(cur, list(documents))
        self._insert(cur, documents)

    @staticmethod
    def _insert(cur: sqlite3.Cursor, documents: Mapping[str, Mapping[str, Any]]) -> None:
        cur.executemany(
            f"INSERT OR REPLACE INTO {DOCUMENTS_TABLE} (thread_id, document) VALUES (?, ?)",
            [
                (thread_id, json.dumps(dict(document), ensure_ascii=False))
                for thread_id, document in documents.items()
            ],
        )

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents of `thread_ids`, read in one query."""
        if not thread_ids:
            return {}
        marks = ", ".join("?" * len(thread_ids))
        with self.lock, closing(self.conn.cursor()) as cur:
            rows = cur.execute(
                f"SELECT thread_id, document FROM {DOCUMENTS_TABLE} WHERE thread_id IN ({marks})",
                tuple(thread_ids),
            ).fetchall()
        return {thread_id: json.loads(document) for thread_id, document in rows}

    def put_documents(
        self,
        documents: Mapping[str, Mapping[str, Any]],
        delete: Sequence[str] = (),
        *,
        also: InTransaction | None = None,
    ) -> None:
        """Replace the documents, delete the threads in `delete` (documents,
        checkpoints and writes) and run `also`, in one transaction."""
        with self.transaction() as cur:
            if delete:
                cur.executemany(
                    f"DELETE FROM {DOCUMENTS_TABLE} WHERE thread_id = ?",
                    [(thread_id,) for thread_id in delete],
                )
                delete_threads(cur, delete)
            self._insert(cur, documents)
            if also is not None:
                also(cur)

    def list_threads(self, prefix: str) -> list[str]:
        """Every document's thread id starting with `prefix`."""
        with self.lock, closing(self.conn.cursor()) as cur:
            rows = cur.execute(
                f"SELECT thread_id FROM {DOCUMENTS_TABLE} WHERE substr(thread_id, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        return [row[0] for row in rows]

    def compact_storage(self) -> None:
        """VACUUM the file (outside any transaction), then truncate the WAL."""
        with self.lock:
            self.conn.commit()
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


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


def redact_runs(
    cur: sqlite3.Cursor,
    thread_ids: Sequence[str],
    redact: Callable[[str, Any], Any],
    serde: SerializerProtocol,
) -> int:
    """In the caller's transaction: rewrite the checkpoints and pending writes of
    `thread_ids` whose values `redact(thread_id, value)` changes; returns how many."""
    if not thread_ids:
        return 0
    marks = ", ".join("?" * len(thread_ids))
    changed = 0
    rows = cur.execute(
        f"SELECT rowid, thread_id, type, checkpoint FROM checkpoints WHERE thread_id IN ({marks})",
        tuple(thread_ids),
    ).fetchall()
    for rowid, thread_id, type_, blob in rows:
        checkpoint = serde.loads_typed((type_, blob))
        values = checkpoint.get("channel_values") or {}
        redacted = {key: redact(thread_id, value) for key, value in values.items()}
        touched = sum(redacted[key] is not value for key, value in values.items())
        if touched:
            dumped = serde.dumps_typed({**checkpoint, "channel_values": redacted})
            cur.execute(
                "UPDATE checkpoints SET type = ?, checkpoint = ? WHERE rowid = ?", (*dumped, rowid)
            )
            changed += touched
    writes = cur.execute(
        f"SELECT rowid, thread_id, type, value FROM writes WHERE thread_id IN ({marks})",
        tuple(thread_ids),
    ).fetchall()
    for rowid, thread_id, type_, blob in writes:
        value = serde.loads_typed((type_, blob))
        redacted_value = redact(thread_id, value)
        if redacted_value is not value:
            dumped = serde.dumps_typed(redacted_value)
            cur.execute("UPDATE writes SET type = ?, value = ? WHERE rowid = ?", (*dumped, rowid))
            changed += 1
    return changed


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
) -> tuple[
    SqliteCheckpointer, SqliteDocuments, KeyedLocks, Callable[[], None], Callable[..., BaseStore]
]:
    """The checkpointer, document store, locks, closer and long-term store opener of a
    SQLite file (None: in memory, this process only), all on one connection.

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
    documents = SqliteDocuments(conn, checkpointer.lock)
    locks = FileLocks(path.with_name(path.name + ".locks")) if path else KeyedLocks()
    with locks.hold(SETUP_LOCK_KEY, SQLITE_BUSY_TIMEOUT_S):
        checkpointer.setup()
        documents.setup()

    def close() -> None:
        locks.close()
        conn.close()

    def open_items(index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> BaseStore:
        return open_sqlite_items(checkpointer, locks, index, ttl)

    return checkpointer, documents, locks, close, open_items
