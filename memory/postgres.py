"""PostgreSQL storage: `PostgresSaver` over a connection pool, and advisory locks.

Requires the `postgres` extra (`pip install '.[postgres]'`). Every worker process
sharing the database serialises writers through session advisory locks, which the
server releases when a worker's connection ends (a killed worker leaves no lock).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.store.base import BaseStore, IndexConfig, TTLConfig
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import _pg_internal
from psycopg import Connection, Cursor
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from memory.checkpointers import ThreadedAsyncSaver
from memory.documents import DOCUMENT, DOCUMENT_METADATA, document_checkpoint
from memory.errors import (
    EMBEDDINGS_UNSUPPORTED,
    STORAGE_FAILED,
    StorageError,
    UnsupportedDatabaseUrl,
)
from memory.locks import KeyedLocks, wait_for

logger = logging.getLogger(__name__)

POOL_MAX_SIZE = 20
POOL_TIMEOUT_S = 3.0
"""How long an operation waits for a connection: past it, storage fails fast and the
turn is delivered degraded instead of hanging while the database is away."""
LOCK_POOL_MAX_SIZE = 64
_SIGNED_64 = 1 << 63
SETUP_LOCK_KEY = -(1 << 62) - 7
SETUP_TIMEOUT_S = 120.0
"""Advisory-lock key that serialises `setup()` (outside the 56-bit range of keyed locks)."""


def _advisory_key(number: int) -> int:
    return number - _SIGNED_64 if number >= _SIGNED_64 else number


KEEP_ONE_SQL = (
    "DELETE FROM checkpoint_writes WHERE thread_id = %(thread)s "
    "AND NOT (checkpoint_ns = '' AND checkpoint_id = %(keep)s)",
    "DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(thread)s AND NOT EXISTS ("
    "SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id "
    "AND c.checkpoint_ns = '' AND b.checkpoint_ns = '' AND c.checkpoint_id = %(keep)s "
    "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
    "DELETE FROM checkpoints WHERE thread_id = %(thread)s "
    "AND NOT (checkpoint_ns = '' AND checkpoint_id = %(keep)s)",
)


SELECT_DOCUMENTS_SQL = """
SELECT DISTINCT ON (c.thread_id) c.thread_id, b.type, b.blob
FROM checkpoints c
JOIN checkpoint_blobs b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
 AND b.channel = %(channel)s AND b.version = c.checkpoint -> 'channel_versions' ->> %(channel)s
WHERE c.thread_id = ANY(%(threads)s) AND c.checkpoint_ns = ''
ORDER BY c.thread_id, c.checkpoint_id DESC
"""
SELECT_CHANNEL_SQL = """
SELECT DISTINCT ON (c.thread_id) c.thread_id,
       c.checkpoint -> 'channel_values' -> %(channel)s AS inline, b.type, b.blob
FROM checkpoints c
LEFT JOIN checkpoint_blobs b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
 AND b.channel = %(channel)s AND b.version = c.checkpoint -> 'channel_versions' ->> %(channel)s
WHERE c.thread_id = ANY(%(threads)s) AND c.checkpoint_ns = ''
ORDER BY c.thread_id, c.checkpoint_id DESC
"""
DROP_OLDER_SQL = (
    "DELETE FROM checkpoint_writes WHERE thread_id = %(thread)s "
    "AND checkpoint_ns = %(ns)s AND checkpoint_id < %(keep)s",
    "DELETE FROM checkpoints WHERE thread_id = %(thread)s "
    "AND checkpoint_ns = %(ns)s AND checkpoint_id < %(keep)s",
    "DELETE FROM checkpoint_blobs b WHERE b.thread_id = %(thread)s "
    "AND b.checkpoint_ns = %(ns)s AND NOT EXISTS ("
    "SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id "
    "AND c.checkpoint_ns = b.checkpoint_ns "
    "AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)",
)
REDACT_SELECT_SQL = {
    "checkpoints": "SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint FROM checkpoints "
    "WHERE thread_id = ANY(%(threads)s)",
    "checkpoint_blobs": "SELECT thread_id, checkpoint_ns, channel, version, type, blob "
    "FROM checkpoint_blobs WHERE thread_id = ANY(%(threads)s)",
    "checkpoint_writes": "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, type, "
    "blob FROM checkpoint_writes WHERE thread_id = ANY(%(threads)s)",
}
REDACT_UPDATE_SQL = {
    "checkpoints": "UPDATE checkpoints SET checkpoint = %(checkpoint)s "
    "WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(checkpoint_ns)s "
    "AND checkpoint_id = %(checkpoint_id)s",
    "checkpoint_blobs": "UPDATE checkpoint_blobs SET type = %(type)s, blob = %(blob)s "
    "WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(checkpoint_ns)s "
    "AND channel = %(channel)s AND version = %(version)s",
    "checkpoint_writes": "UPDATE checkpoint_writes SET type = %(type)s, blob = %(blob)s "
    "WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(checkpoint_ns)s "
    "AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s AND idx = %(idx)s",
}
DELETE_THREADS_SQL = tuple(
    f"DELETE FROM {table} WHERE thread_id = ANY(%(threads)s)"
    for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints")
)


class PostgresCheckpointer(ThreadedAsyncSaver, PostgresSaver):
    """`PostgresSaver` with the async API in worker threads (its pool is thread-safe),
    a cheap prune for threads known to be finished, and memory documents
    (`memory.documents.DocumentSaver`)."""

    def drop_older(self, thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> None:
        """Delete the older checkpoints of this thread and namespace, their writes and the
        blobs no remaining checkpoint of the namespace refers to."""
        keys = {"thread": thread_id, "ns": checkpoint_ns, "keep": checkpoint_id}
        with self._cursor(pipeline=True) as cur:
            for sql in DROP_OLDER_SQL:
                cur.execute(sql, keys)

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The memory documents of `thread_ids`, read in one query."""
        if not thread_ids:
            return {}
        with self._cursor() as cur:
            rows = cur.execute(
                SELECT_DOCUMENTS_SQL, {"channel": DOCUMENT, "threads": list(thread_ids)}
            ).fetchall()
        documents: dict[str, dict[str, Any]] = {}
        for row in rows:
            document = self.serde.loads_typed((row["type"], row["blob"]))
            if isinstance(document, dict):
                documents[row["thread_id"]] = document
        return documents

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """`channel` in the newest root checkpoint of each thread, in one query."""
        if not thread_ids:
            return {}
        with self._cursor() as cur:
            rows = cur.execute(
                SELECT_CHANNEL_SQL, {"channel": channel, "threads": list(thread_ids)}
            ).fetchall()
        values: dict[str, Any] = {}
        for row in rows:
            if row["inline"] is not None:  # PostgresSaver keeps primitives in the checkpoint
                values[row["thread_id"]] = row["inline"]
            elif row["type"] is not None:
                values[row["thread_id"]] = self.serde.loads_typed((row["type"], row["blob"]))
        return values

    def list_threads(self, prefix: str) -> list[str]:
        """Every thread id starting with `prefix`."""
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE left(thread_id, %s) = %s",
                (len(prefix), prefix),
            ).fetchall()
        return [row["thread_id"] for row in rows]

    def compact_storage(self) -> None:
        """Nothing to do: autovacuum gives deleted rows' space back."""

    def put_documents(
        self, documents: Mapping[str, Mapping[str, Any]], delete: Sequence[str] = ()
    ) -> None:
        """Replace the documents and delete the threads in `delete`, in one transaction."""
        blobs, checkpoints = [], []
        for thread_id, document in documents.items():
            version = self.get_next_version(None, None)
            checkpoint = document_checkpoint(document, version)
            blobs.extend(
                self._dump_blobs(thread_id, "", checkpoint["channel_values"], {DOCUMENT: version})
            )
            inline = {**checkpoint, "channel_values": {}}
            checkpoints.append(
                (thread_id, "", checkpoint["id"], None, Jsonb(inline), Jsonb(DOCUMENT_METADATA))
            )
        with self._cursor() as cur, cur.connection.transaction():
            for sql in DELETE_THREADS_SQL:
                cur.execute(sql, {"threads": [*documents, *delete]})
            if blobs:
                cur.executemany(self.UPSERT_CHECKPOINT_BLOBS_SQL, blobs)
                cur.executemany(self.UPSERT_CHECKPOINTS_SQL, checkpoints)

    def redact_threads(self, thread_ids: Sequence[str], redact: Callable[[str, Any], Any]) -> int:
        """Rewrite the values of `thread_ids` that `redact` changes, in one transaction:
        the primitives kept inline in each checkpoint, the channel blobs, the writes."""
        if not thread_ids:
            return 0
        threads = {"threads": list(thread_ids)}
        changed = 0
        with self._cursor() as cur, cur.connection.transaction():
            for row in cur.execute(REDACT_SELECT_SQL["checkpoints"], threads).fetchall():
                checkpoint = row["checkpoint"]
                values = checkpoint.get("channel_values") or {}
                redacted = {key: redact(row["thread_id"], value) for key, value in values.items()}
                touched = sum(redacted[key] is not value for key, value in values.items())
                if touched:
                    updated = Jsonb({**checkpoint, "channel_values": redacted})
                    cur.execute(REDACT_UPDATE_SQL["checkpoints"], {**row, "checkpoint": updated})
                    changed += touched
            for table in ("checkpoint_blobs", "checkpoint_writes"):
                for row in cur.execute(REDACT_SELECT_SQL[table], threads).fetchall():
                    if row["blob"] is None or row["type"] == "empty":
                        continue
                    value = self.serde.loads_typed((row["type"], row["blob"]))
                    redacted_value = redact(row["thread_id"], value)
                    if redacted_value is not value:
                        type_, blob = self.serde.dumps_typed(redacted_value)
                        cur.execute(REDACT_UPDATE_SQL[table], {**row, "type": type_, "blob": blob})
                        changed += 1
        return changed

    def keep_latest_root(self, thread_id: str) -> None:
        """Keep only the newest root checkpoint of a finished thread and its blobs.

        Everything else goes: older checkpoints, subgraph namespaces, pending writes,
        blobs of older versions. The generic `prune("keep_latest")` protects runs in
        progress and costs several statements per thread; a memory thread right after
        its write, or a run thread after its turn ended, has nothing to protect.
        """
        with self._cursor() as cur, cur.connection.transaction():
            row = cur.execute(
                "SELECT MAX(checkpoint_id) AS keep FROM checkpoints "
                "WHERE thread_id = %s AND checkpoint_ns = ''",
                (thread_id,),
            ).fetchone()
            if row is None or row["keep"] is None:
                return
            for sql in KEEP_ONE_SQL:
                cur.execute(sql, {"thread": thread_id, "keep": row["keep"]})


def try_advisory_lock(conn: Connection[DictRow], key: int) -> bool:
    """Take the session advisory lock `key` if it is free (never waits)."""
    row = conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (key,)).fetchone()
    return bool(row and row["ok"])


class AdvisoryLocks(KeyedLocks):
    """Keyed locks shared by every process using the database: session advisory locks.

    A held lock keeps one pooled connection; the server releases the lock if that
    connection, or its process, dies.
    """

    def __init__(self, pool: Any) -> None:
        super().__init__()
        self._pool = pool

    def _acquire_shared(self, number: int, deadline: float, timeout: float) -> Any:
        key = _advisory_key(number)
        try:
            conn = self._pool.getconn()  # waits at most the pool timeout for a connection
        except Exception as exc:
            raise StorageError(STORAGE_FAILED) from exc
        try:
            wait_for(lambda: try_advisory_lock(conn, key), deadline, timeout)
        except BaseException:
            self._pool.putconn(conn)
            raise
        return conn

    def _release_shared(self, number: int, token: Any) -> None:
        try:
            token.execute("SELECT pg_advisory_unlock(%s)", (_advisory_key(number),))
        except Exception:  # a broken connection released its locks with it
            logger.warning("advisory unlock failed; the connection is discarded", exc_info=True)
            token.close()
        finally:
            self._pool.putconn(token)

    def close(self) -> None:
        self._pool.close()


class PooledPostgresStore(PostgresStore):
    """`PostgresStore` over the thread store's pool, each batch in one transaction.

    Upstream runs a batch in pipeline mode on an autocommit connection, under one
    store-wide lock: each statement commits on its own. Here a batch is one transaction
    on its own pooled connection, so a long-term write is all or nothing and writers of
    different sessions do not wait for each other.
    """

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        if not pipeline:  # setup: CREATE INDEX CONCURRENTLY cannot run in a transaction
            with super()._cursor() as cur:
                yield cur
            return
        with (
            _pg_internal.get_connection(self.conn) as conn,
            conn.transaction(),
            conn.cursor(binary=True, row_factory=dict_row) as cur,
        ):
            yield cur


def _run_setup(lock_pool: Any, setup: Callable[[], None]) -> None:
    """Run `setup` while holding the setup advisory lock: workers starting together must
    not run the migrations twice. Polls with short statements: a waiting
    `pg_advisory_lock` would hold a snapshot that the migrations' CREATE INDEX
    CONCURRENTLY waits for, a silent deadlock."""
    with lock_pool.connection() as conn:
        wait_for(
            lambda: try_advisory_lock(conn, SETUP_LOCK_KEY),
            time.monotonic() + SETUP_TIMEOUT_S,
            SETUP_TIMEOUT_S,
        )
        try:
            setup()
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))


def open_postgres_items(
    pool: Any, lock_pool: Any, index: IndexConfig | None = None, ttl: TTLConfig | None = None
) -> BaseStore:
    """The long-term store (`PostgresStore`) on the thread store's database.

    Raises:
        UnsupportedDatabaseUrl: a vector index was asked for without pgvector.
    """
    if index is not None:
        with pool.connection() as conn:
            row = conn.execute(
                "SELECT 1 AS ok FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
        if row is None:
            why = "the PostgreSQL server has no pgvector extension"
            raise UnsupportedDatabaseUrl(EMBEDDINGS_UNSUPPORTED.format(why=why))
    store = PooledPostgresStore(pool, index=index, ttl=ttl)  # type: ignore[arg-type]
    _run_setup(lock_pool, store.setup)
    return store


def _pool(url: str, max_size: int) -> ConnectionPool[Connection[DictRow]]:
    # `check` tests a pooled connection before handing it out: after the server
    # dropped connections (restart, failover), the next operation gets a fresh one.
    return ConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
        check=ConnectionPool.check_connection,
        timeout=POOL_TIMEOUT_S,
    )


def open_postgres(
    url: str,
) -> tuple[Any, KeyedLocks, Callable[[], None], Callable[..., BaseStore]]:
    """The checkpointer, locks, closer and long-term store opener of a PostgreSQL database
    (tables created on first use).

    Raises:
        StorageError: the database cannot be reached.
    """
    pool, lock_pool = (_pool(url, size) for size in (POOL_MAX_SIZE, LOCK_POOL_MAX_SIZE))
    try:
        pool.open(wait=True, timeout=10)
        lock_pool.open(wait=True, timeout=10)
        checkpointer = PostgresCheckpointer(pool)
        _run_setup(lock_pool, checkpointer.setup)
    except Exception as exc:
        pool.close()
        lock_pool.close()
        logger.exception("cannot open the PostgreSQL database")
        raise StorageError("the PostgreSQL database cannot be reached") from exc
    locks = AdvisoryLocks(lock_pool)

    def close() -> None:
        locks.close()
        pool.close()

    def open_items(index: IndexConfig | None = None, ttl: TTLConfig | None = None) -> BaseStore:
        return open_postgres_items(pool, lock_pool, index, ttl)

    return checkpointer, locks, close, open_items
