"""Keyed locks that serialise writes across threads and across processes.

Each key maps to one byte of a shared lock file, locked with POSIX record locks
(`fcntl.lockf`). The kernel releases such locks when their process dies, so a
crashed writer never leaves a stale lock behind. POSIX record locks belong to the
process, not the thread, so a per-key `threading.Lock` orders the threads of one
process before they reach the file lock.
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

from memory.errors import LOCK_TIMEOUT, LockTimeout

DEFAULT_LOCK_TIMEOUT = 30.0
_OFFSET_BYTES = 7  # offsets below 2**56 fit every off_t


def _offset(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:_OFFSET_BYTES], "big")


@dataclass
class _Slot:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class KeyedLocks:
    """Exclusive locks by key: within the process, and across processes when given a file.

    Args:
        path: the shared lock file (created 0600); None for in-process locks only.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._fd: int | None = None
        self._pid = os.getpid()
        self._guard = threading.Lock()
        self._slots: dict[int, _Slot] = {}
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def _slot(self, offset: int) -> _Slot:
        if os.getpid() != self._pid:  # forked: the parent's thread locks mean nothing here
            self._pid, self._guard, self._slots = os.getpid(), threading.Lock(), {}
        with self._guard:
            slot = self._slots.setdefault(offset, _Slot())
            slot.users += 1
            return slot

    def _release_slot(self, offset: int, slot: _Slot) -> None:
        with self._guard:
            slot.users -= 1
            if slot.users == 0:
                self._slots.pop(offset, None)

    @contextmanager
    def hold(self, key: str, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the lock of `key` for the duration of the block.

        Args:
            key: any string; distinct keys do not block each other.
            timeout: seconds to wait; 0 means fail at once when the lock is taken.

        Raises:
            LockTimeout: when the lock could not be taken within `timeout`.
        """
        offset = _offset(key)
        deadline = time.monotonic() + timeout
        slot = self._slot(offset)
        try:
            acquired = (
                slot.lock.acquire(timeout=timeout) if timeout > 0 else slot.lock.acquire(False)
            )
            if not acquired:
                raise LockTimeout(LOCK_TIMEOUT.format(seconds=timeout))
            try:
                self._lock_file(offset, deadline, timeout)
                try:
                    yield
                finally:
                    if self._fd is not None:
                        fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, offset)
            finally:
                slot.lock.release()
        finally:
            self._release_slot(offset, slot)

    def _lock_file(self, offset: int, deadline: float, timeout: float) -> None:
        if self._fd is None:
            return
        pause = 0.001
        while True:
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                return
            except (BlockingIOError, PermissionError):
                if time.monotonic() >= deadline:
                    raise LockTimeout(LOCK_TIMEOUT.format(seconds=timeout)) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.02)

    def close(self) -> None:
        """Close the lock file (held locks are released with it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
