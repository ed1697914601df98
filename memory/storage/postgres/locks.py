"""Advisory locks: keyed locks shared by every process using the PostgreSQL database."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from memory.errors import STORAGE_FAILED, StorageError
from memory.storage.locks import KeyedLocks, wait_for

logger = logging.getLogger(__name__)

SETUP_LOCK_KEY = -(1 << 62) - 7
"""Advisory-lock key that serialises `setup()` (outside the 56-bit range of keyed locks)."""
SETUP_TIMEOUT_S = 120.0


@contextmanager
def advisory_lock(pool: Any, key: int, deadline: float, timeout: float) -> Iterator[None]:
    """Hold the session advisory lock `key` on a connection of `pool` for the block,
    polling for it with short statements until `deadline` (`LockTimeout`)."""
    try:
        conn = pool.getconn()  # waits at most the pool timeout for a connection
    except Exception as exc:
        raise StorageError(STORAGE_FAILED) from exc

    def attempt() -> bool:
        row = conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (key,)).fetchone()
        return bool(row and row["ok"])

    try:
        wait_for(attempt, deadline, timeout)
        try:
            yield
        finally:
            try:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            except Exception:  # a broken connection released its locks with it
                logger.warning("advisory unlock failed; the connection is discarded", exc_info=True)
                conn.close()
    finally:
        pool.putconn(conn)


class AdvisoryLocks(KeyedLocks):
    """Keyed locks shared by every process using the database: session advisory locks.

    A held lock keeps one pooled connection; the server releases the lock if that
    connection, or its process, dies.
    """

    def __init__(self, pool: Any) -> None:
        super().__init__()
        self._pool = pool

    def _shared(self, number: int, deadline: float, timeout: float) -> AbstractContextManager[Any]:
        return advisory_lock(self._pool, number, deadline, timeout)

    def close(self) -> None:
        self._pool.close()


def setup_lock(lock_pool: Any) -> AbstractContextManager[None]:
    """Hold the setup advisory lock for the block: workers starting together must not
    run the migrations twice. It is polled for: a waiting `pg_advisory_lock` would hold a
    snapshot that the migrations' CREATE INDEX CONCURRENTLY waits for, a silent deadlock."""
    return advisory_lock(
        lock_pool, SETUP_LOCK_KEY, time.monotonic() + SETUP_TIMEOUT_S, SETUP_TIMEOUT_S
    )
