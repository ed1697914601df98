"""Advisory locks: keyed locks shared by every process using the PostgreSQL database."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from psycopg import Connection
from psycopg.rows import DictRow

from memory.errors import STORAGE_FAILED, StorageError
from memory.storage.locks import KeyedLocks, wait_for

logger = logging.getLogger(__name__)

SETUP_LOCK_KEY = -(1 << 62) - 7
"""Advisory-lock key that serialises `setup()` (outside the 56-bit range of keyed locks)."""
SETUP_TIMEOUT_S = 120.0


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

    @contextmanager
    def _shared(self, number: int, deadline: float, timeout: float) -> Iterator[None]:
        try:
            conn = self._pool.getconn()  # waits at most the pool timeout for a connection
        except Exception as exc:
            raise StorageError(STORAGE_FAILED) from exc
        try:
            wait_for(lambda: try_advisory_lock(conn, number), deadline, timeout)
            try:
                yield
            finally:
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (number,))
                except Exception:  # a broken connection released its locks with it
                    logger.warning(
                        "advisory unlock failed; the connection is discarded", exc_info=True
                    )
                    conn.close()
        finally:
            self._pool.putconn(conn)

    def close(self) -> None:
        self._pool.close()


@contextmanager
def setup_lock(lock_pool: Any) -> Iterator[None]:
    """Hold the setup advisory lock for the block: workers starting together must not
    run the migrations twice. Polls with short statements: a waiting
    `pg_advisory_lock` would hold a snapshot that the migrations' CREATE INDEX
    CONCURRENTLY waits for, a silent deadlock."""
    with lock_pool.connection() as conn:
        wait_for(
            lambda: try_advisory_lock(conn, SETUP_LOCK_KEY),
            time.monotonic() + SETUP_TIMEOUT_S,
            SETUP_TIMEOUT_S,
        )
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK_KEY,))
