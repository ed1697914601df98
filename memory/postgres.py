"""PostgreSQL storage: `PostgresSaver` over a connection pool, the memory documents
beside it on the same pool, and advisory locks.

Requires the `postgres` extra (`pip install '.[postgres]'`). Every worker process
sharing the database serialises writers through session advisory locks, which the
server releases when a worker's connection ends (a killed worker leaves no lock).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.store.base import BaseStore, IndexConfig, TTLConfig
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import _pg_internal
from psycopg import Connection, Cursor
from psycopg.rows import DictRow, dict_row
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from memory.checkpointers import RunSaver
from memory.documents import DOCUMENTS_TABLE, Dialect, InTransaction
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
DELETE_THREADS_SQL = tuple(
    f"DELETE FROM {table} WHERE thread_id = ANY(%(threads)s)"
    for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints", DOCUMENTS_TABLE)
)
UPSERT_DOCUMENTS_SQL = (
    f"INSERT INTO {DOCUMENTS_TABLE} (thread_id, document) VALUES (%s, %s) "
    "ON CONFLICT (thread_id) DO UPDATE SET document = EXCLUDED.document"
)
SELECT_LEGACY_DOCUMENTS_SQL = """
SELECT c.thread_id, b.type, b.blob
FROM checkpoints c
JOIN checkpoint_blobs b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'document'
 AND b.version = c.checkpoint -> 'channel_versions' ->> 'document'
WHERE c.checkpoint_ns = '' AND c.metadata = %s
"""
LEGACY_DOCUMENT_METADATA = {"source": "update", "step": 0, "parents": {}}
"""The metadata of a memory document stored as a single-checkpoint thread (the
layout before documents had their own table)."""


class PostgresCheckpointer(RunSaver, PostgresSaver):
    """`PostgresSaver` (its own `prune` included) with the async API in worker threads:
    its pool is thread-safe."""

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """The value of `channel` in the newest root checkpoint of each of `thread_ids`
        (where it has one), in one query: a run thread's `status`, for instance."""
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
        """Every thread id with a checkpoint that starts with `prefix`."""
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE left(thread_id, %s) = %s",
                (len(prefix), prefix),
            ).fetchall()
        return [row["thread_id"] for row in rows]


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


def redact_runs(
    cur: Cursor[DictRow],
    thread_ids: Sequence[str],
    redact: Callable[[str, Any], Any],
    serde: SerializerProtocol,
) -> int:
    """In the caller's transaction: rewrite the values of `thread_ids` that
    `redact(thread_id, value)` changes (the primitives kept inline in each checkpoint,
    the channel blobs, the pending writes); returns how many."""
    if not thread_ids:
        return 0
    threads = {"threads": list(thread_ids)}
    changed = 0
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
            value = serde.loads_typed((row["type"], row["blob"]))
            redacted_value = redact(row["thread_id"], value)
            if redacted_value is not value:
                type_, blob = serde.dumps_typed(redacted_value)
                cur.execute(REDACT_UPDATE_SQL[table], {**row, "type": type_, "blob": blob})
                changed += 1
    return changed


def _document_rows(documents: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    # JSON text, not JSONB: JSONB refuses a NUL character, which a message may hold.
    return [
        (thread_id, json.dumps(dict(document), ensure_ascii=False))
        for thread_id, document in documents.items()
    ]


class PostgresDocuments:
    """Memory documents (`memory.documents.DocumentStore`) in the checkpointer's
    database, over its pool: one JSON text per thread id. Each write is one
    transaction on its own pooled connection."""

    dialect: Dialect = "postgresql"

    def __init__(self, pool: ConnectionPool[Connection[DictRow]]) -> None:
        self.pool = pool

    @contextmanager
    def transaction(self) -> Iterator[Cursor[DictRow]]:
        """One transaction on a pooled connection, as a cursor."""
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    def setup(self) -> None:
        """Create the documents table; on a database from before it existed, move the
        documents stored as single-checkpoint threads into it."""
        with self.transaction() as cur:
            row = cur.execute("SELECT to_regclass(%s) AS found", (DOCUMENTS_TABLE,)).fetchone()
            if row is not None and row["found"] is not None:
                return
            cur.execute(
                f"CREATE TABLE {DOCUMENTS_TABLE} "
                "(thread_id TEXT PRIMARY KEY, document TEXT NOT NULL)"
            )
            serde = JsonPlusSerializer()
            documents = {}
            for legacy in cur.execute(
                SELECT_LEGACY_DOCUMENTS_SQL, (Jsonb(LEGACY_DOCUMENT_METADATA),)
            ).fetchall():
                document = serde.loads_typed((legacy["type"], legacy["blob"]))
                if isinstance(document, dict):
                    documents[legacy["thread_id"]] = document
            if documents:
                for sql in DELETE_THREADS_SQL:
                    cur.execute(sql, {"threads": list(documents)})
                cur.executemany(UPSERT_DOCUMENTS_SQL, _document_rows(documents))

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents of `thread_ids`, read in one query."""
        if not thread_ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT thread_id, document FROM {DOCUMENTS_TABLE} WHERE thread_id = ANY(%s)",
                (list(thread_ids),),
            ).fetchall()
        return {row["thread_id"]: json.loads(row["document"]) for row in rows}

    def put_documents(
        self,
        documents: Mapping[str, Mapping[str, Any]],
        delete: Sequence[str] = (),
        *,
        also: InTransaction | None = None,
    ) -> None:
        """Replace the documents, delete the threads in `delete` (documents,
        checkpoints, blobs and writes) and run `also`, in one transaction."""
        with self.transaction() as cur:
            if delete:
                for sql in DELETE_THREADS_SQL:
                    cur.execute(sql, {"threads": list(delete)})
            if documents:
                cur.executemany(UPSERT_DOCUMENTS_SQL, _document_rows(documents))
            if also is not None:
                also(cur)

    def list_threads(self, prefix: str) -> list[str]:
        """Every document's thread id starting with `prefix`."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT thread_id FROM {DOCUMENTS_TABLE} WHERE left(thread_id, %s) = %s",
                (len(prefix), prefix),
            ).fetchall()
        return [row["thread_id"] for row in rows]

    def compact_storage(self) -> None:
        """Nothing to do: autovacuum gives deleted rows' space back."""


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
) -> tuple[Any, PostgresDocuments, KeyedLocks, Callable[[], None], Callable[..., BaseStore]]:
    """The checkpointer, document store, locks, closer and long-term store opener of a
    PostgreSQL database (tables created on first use), all on one pool.

    Raises:
        StorageError: the database cannot be reached.
    """
    pool, lock_pool = (_pool(url, size) for size in (POOL_MAX_SIZE, LOCK_POOL_MAX_SIZE))
    try:
        pool.open(wait=True, timeout=10)
        lock_pool.open(wait=True, timeout=10)
        checkpointer = PostgresCheckpointer(pool)
        documents = PostgresDocuments(pool)

        def setup() -> None:
            checkpointer.setup()
            documents.setup()

        _run_setup(lock_pool, setup)
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

    return checkpointer, documents, locks, close, open_items
