"""Opening a PostgreSQL database: checkpointer, documents, advisory locks and long-term
items on one pool (and a second pool for the locks)."""

from __future__ import annotations

import functools
import logging

from psycopg import Connection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from memory.errors import StorageError
from memory.storage.locks import AdvisoryLocks, advisory_setup_lock
from memory.storage.postgres.checkpointer import PostgresCheckpointer
from memory.storage.postgres.documents import PostgresDocuments
from memory.storage.postgres.items import open_postgres_items
from memory.storage.threads import ThreadStore

logger = logging.getLogger(__name__)

POOL_MAX_SIZE = 20
POOL_TIMEOUT_S = 3.0
"""How long an operation waits for a connection: past it, storage fails fast and the
turn is delivered degraded instead of hanging while the database is away."""
LOCK_POOL_MAX_SIZE = 64


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


def open_postgres(url: str, *, lock_timeout: float) -> ThreadStore:
    """The thread store of a PostgreSQL database (tables created on first use);
    `StorageError` when it cannot be reached."""
    pool, lock_pool = (_pool(url, size) for size in (POOL_MAX_SIZE, LOCK_POOL_MAX_SIZE))
    try:
        pool.open(wait=True, timeout=10)
        lock_pool.open(wait=True, timeout=10)
        checkpointer = PostgresCheckpointer(pool)
        documents = PostgresDocuments(pool)
        with advisory_setup_lock(lock_pool):
            checkpointer.setup()
            documents.setup()
    except Exception as exc:
        pool.close()
        lock_pool.close()
        logger.exception("cannot open the PostgreSQL database")
        raise StorageError("the PostgreSQL database cannot be reached") from exc
    return ThreadStore(
        checkpointer,
        documents,
        AdvisoryLocks(lock_pool),
        lock_timeout=lock_timeout,
        on_close=pool.close,
        open_items=functools.partial(open_postgres_items, pool, lock_pool),
    )
