"""Keyed locks that serialise writes across threads and across processes.

`KeyedLocks` orders the threads of one process with a `threading.Lock` per key;
subclasses add a cross-process lock taken after it:
- `FileLocks` (SQLite): each key maps to one byte of a shared lock file, locked with
  POSIX record locks (`fcntl.lockf`);
- `AdvisoryLocks` (PostgreSQL): session advisory locks.
Both are released by the operating system or the database when their process dies,
so a crashed writer never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

from memory.errors import LOCK_TIMEOUT, STORAGE_FAILED, LockTimeout, StorageError
from memory.files import make_private_dir

logger = logging.getLogger(__name__)

DEFAULT_LOCK_TIMEOUT = 30.0
_KEY_BYTES = 7  # 56-bit key numbers fit every off_t and a signed bigint


def key_number(key: str) -> int:
    """A stable 56-bit number for `key` (a lock-file offset or an advisory-lock key)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:_KEY_BYTES], "big")


def wait_for(attempt: Callable[[], bool], deadline: float, timeout: float) -> None:
    """Call `attempt()`, backing off, until it returns True (`LockTimeout` past `deadline`)."""
    pause = 0.001
    while not attempt():
        if time.monotonic() >= deadline:
            raise LockTimeout(LOCK_TIMEOUT.format(seconds=timeout))
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


class KeyedLocks:
    """Exclusive locks by key within this process; subclasses extend them across processes."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._guard = threading.Lock()
        # a key's lock lives while someone holds or waits for it, and no longer
        self._locks: weakref.WeakValueDictionary[int, threading.Lock] = (
            weakref.WeakValueDictionary()
        )

    def _shared(self, number: int, deadline: float, timeout: float) -> AbstractContextManager[Any]:
        """The cross-process lock of `number`, held inside the thread lock (none here)."""
        return nullcontext()

    @contextmanager
    def hold(self, key: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the lock of `key` for the block (`LockTimeout` past `timeout` seconds; 0
        fails at once when the lock is taken)."""
        number = key_number(key)
        deadline = time.monotonic() + timeout
        if os.getpid() != self._pid:  # forked: the parent's thread locks mean nothing here
            self._pid, self._guard, self._locks = os.getpid(), threading.Lock(), type(self._locks)()
        with self._guard:
            lock = self._locks.setdefault(number, threading.Lock())
        acquired = lock.acquire(timeout=timeout) if timeout > 0 else lock.acquire(False)
        if not acquired:
            raise LockTimeout(LOCK_TIMEOUT.format(seconds=timeout))
        try:
            with self._shared(number, deadline, timeout):
                yield
        finally:
            lock.release()

    def close(self) -> None:
        """Release resources held by the cross-process lock backend."""


class FileLocks(KeyedLocks):
    """Keyed locks shared by every process that opens the same lock file.

    POSIX record locks belong to the process, not the thread: the per-key thread
    lock of `KeyedLocks` orders a process's own threads before they reach the file.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        make_private_dir(path.parent)
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def _try_lock(self, number: int) -> bool:
        assert self._fd is not None
        try:
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, number)
            return True
        except (BlockingIOError, PermissionError):
            return False

    @contextmanager
    def _shared(self, number: int, deadline: float, timeout: float) -> Iterator[None]:
        wait_for(lambda: self._try_lock(number), deadline, timeout)
        try:
            yield
        finally:
            if self._fd is not None:
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, number)

    def close(self) -> None:
        """Close the lock file (held locks are released with it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


POSTGRES_SETUP_KEY = -(1 << 62) - 7
"""Serialises PostgreSQL's `setup()` (outside the 56-bit range of keyed locks)."""
POSTGRES_SETUP_TIMEOUT_S = 120.0


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
    """Keyed locks shared by every process using the PostgreSQL database: a held lock
    keeps one pooled connection, and the server releases it if that connection dies."""

    def __init__(self, pool: Any) -> None:
        super().__init__()
        self._pool = pool

    def _shared(self, number: int, deadline: float, timeout: float) -> AbstractContextManager[Any]:
        return advisory_lock(self._pool, number, deadline, timeout)

    def close(self) -> None:
        self._pool.close()


def advisory_setup_lock(lock_pool: Any) -> AbstractContextManager[None]:
    """Hold the setup advisory lock for the block: workers starting together must not
    run the migrations twice. It is polled for: a waiting `pg_advisory_lock` would hold a
    snapshot that the migrations' CREATE INDEX CONCURRENTLY waits for, a silent deadlock."""
    timeout = POSTGRES_SETUP_TIMEOUT_S
    return advisory_lock(lock_pool, POSTGRES_SETUP_KEY, time.monotonic() + timeout, timeout)
