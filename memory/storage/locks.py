"""Keyed locks that serialise writes across threads and across processes.

`KeyedLocks` orders the threads of one process with a `threading.Lock` per key;
subclasses add a cross-process lock taken after it:
- `FileLocks` (SQLite): each key maps to one byte of a shared lock file, locked with
  POSIX record locks (`fcntl.lockf`);
- `memory.storage.postgres.locks.AdvisoryLocks` (PostgreSQL): session advisory locks.
Both are released by the operating system or the database when their process dies,
so a crashed writer never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory.errors import LOCK_TIMEOUT, LockTimeout
from memory.files import make_private_dir

DEFAULT_LOCK_TIMEOUT = 30.0
_KEY_BYTES = 7  # 56-bit key numbers fit every off_t and a signed bigint


def key_number(key: str) -> int:
    """A stable 56-bit number for `key` (a lock-file offset or an advisory-lock key)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:_KEY_BYTES], "big")


def wait_for(attempt: Any, deadline: float, timeout: float) -> Any:
    """Call `attempt()`, backing off, until it returns a truthy value (`LockTimeout`
    when `deadline` passes first)."""
    pause = 0.001
    while True:
        result = attempt()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise LockTimeout(LOCK_TIMEOUT.format(seconds=timeout))
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class KeyedLocks:
    """Exclusive locks by key within this process; subclasses extend them across processes."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._guard = threading.Lock()
        self._slots: dict[int, _Slot] = {}

    def _slot(self, number: int) -> _Slot:
        if os.getpid() != self._pid:  # forked: the parent's thread locks mean nothing here
            self._pid, self._guard, self._slots = os.getpid(), threading.Lock(), {}
        with self._guard:
            slot = self._slots.setdefault(number, _Slot())
            slot.users += 1
            return slot

    def _release_slot(self, number: int, slot: _Slot) -> None:
        with self._guard:
            slot.users -= 1
            if slot.users == 0:
                self._slots.pop(number, None)

    def _acquire_shared(self, number: int, deadline: float, timeout: float) -> Any:
        """Take the cross-process lock of `number`; returns a token for `_release_shared`."""
        return None

    def _release_shared(self, number: int, token: Any) -> None:
        """Release what `_acquire_shared` took."""

    @contextmanager
    def hold(self, key: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the lock of `key` for the block (`LockTimeout` past `timeout` seconds; 0
        fails at once when the lock is taken)."""
        number = key_number(key)
        deadline = time.monotonic() + timeout
        slot = self._slot(number)
        try:
            acquired = (
                slot.lock.acquire(timeout=timeout) if timeout > 0 else slot.lock.acquire(False)
            )
            if not acquired:
                raise LockTimeout(LOCK_TIMEOUT.format(seconds=timeout))
            try:
                token = self._acquire_shared(number, deadline, timeout)
                try:
                    yield
                finally:
                    self._release_shared(number, token)
            finally:
                slot.lock.release()
        finally:
            self._release_slot(number, slot)

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

    def _acquire_shared(self, number: int, deadline: float, timeout: float) -> Any:
        return wait_for(lambda: self._try_lock(number), deadline, timeout)

    def _release_shared(self, number: int, token: Any) -> None:
        if self._fd is not None:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, number)

    def close(self) -> None:
        """Close the lock file (held locks are released with it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
