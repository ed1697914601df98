"""Thread ids: HMAC-SHA256 of session and conversation ids under a server secret.

A thread id never contains a raw session or conversation id, and the same
conversation id in two sessions maps to two unrelated threads.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
import os
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memory.errors import SHORT_SECRET, InvalidInput
from memory.files import PRIVATE_FILE_MODE, make_private_dir
from memory.limits import MIN_SECRET_CHARS

logger = logging.getLogger(__name__)

SECRET_FILE_NAME = "session-secret"

MEMORY_THREAD_PREFIX = "chat-conversation"
RUN_THREAD_PREFIX = "agent-run"
REGISTRY_THREAD_PREFIX = "chat-registry"


def check_secret(secret: object) -> str:
    """`secret` if a string of `MIN_SECRET_CHARS` characters or more, else `InvalidInput`."""
    if not isinstance(secret, str) or len(secret) < MIN_SECRET_CHARS:
        length = len(secret) if isinstance(secret, str) else 0
        raise InvalidInput(SHORT_SECRET.format(limit=MIN_SECRET_CHARS, length=length))
    return secret


def load_or_create_secret(data_dir: Path) -> str:
    """Read the development secret from `data_dir`, creating it (mode 0600) on first use:
    safe when several processes start at once (the file is created exclusively and the
    losers of the race read the winner's secret)."""
    make_private_dir(data_dir)
    path = data_dir / SECRET_FILE_NAME
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return _read_secret_file(path)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(secrets.token_hex(32))
        handle.flush()
        os.fsync(handle.fileno())
    logger.info("generated a development session secret in %s", path)
    return _read_secret_file(path)


def _read_secret_file(path: Path) -> str:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        logger.warning("tightening permissions of %s from %o to 600", path, mode)
        path.chmod(0o600)
    # A racing creator may not have written yet: the secret is complete once non-empty.
    for _ in range(200):
        if text := path.read_text(encoding="ascii").strip():
            return check_secret(text)
        time.sleep(0.005)
    return check_secret(path.read_text(encoding="ascii").strip())


def resolve_secret(secret: str | None, data_dir: Path) -> str:
    """The configured secret if given (validated), else the generated development one."""
    return load_or_create_secret(data_dir) if secret is None else check_secret(secret)


@dataclass(frozen=True)
class ThreadIds:
    """Derives the memory, run and registry thread ids of sessions and conversations."""

    secret: str = field(repr=False)
    _h: Callable[[str], str] = field(init=False, repr=False, compare=False)
    """`_hmac`, cached: a turn derives the same few ids several times."""

    def __post_init__(self) -> None:
        check_secret(self.secret)
        object.__setattr__(self, "_h", functools.lru_cache(maxsize=4096)(self._hmac))

    def _hmac(self, value: str) -> str:
        return hmac.new(self.secret.encode(), value.encode(), hashlib.sha256).hexdigest()

    def _pair(self, session_id: str, conversation_id: str) -> str:
        return f"{self._h(session_id)}:{self.conversation_key(session_id, conversation_id)}"

    def conversation_key(self, session_id: str, conversation_id: str) -> str:
        """`H(session:conversation)`: the part of a conversation's thread ids that the
        registry keeps, so that retention can find the threads without the session id."""
        return self._h(session_id + ":" + conversation_id)

    def memory_thread(self, session_id: str, conversation_id: str) -> str:
        """`chat-conversation:{H(session)}:{H(session:conversation)}`."""
        return f"{MEMORY_THREAD_PREFIX}:{self._pair(session_id, conversation_id)}"

    def run_thread(self, session_id: str, conversation_id: str) -> str:
        """`agent-run:{H(session)}:{H(session:conversation)}`."""
        return f"{RUN_THREAD_PREFIX}:{self._pair(session_id, conversation_id)}"

    def session_key(self, session_id: str) -> str:
        """`H(session)`: names a session's long-term namespace (no raw id in storage)."""
        return self._h(session_id)

    def mark(self, value: str) -> str:
        """A keyed hash of `value` (a tombstone's mark of forgotten words), short: it
        recognises words again, never proves anything."""
        return self._hmac("mark:" + value)[:16]

    def registry_thread(self, session_id: str) -> str:
        """`chat-registry:{H(session)}`."""
        return f"{REGISTRY_THREAD_PREFIX}:{self._h(session_id)}"


def turn_lock_key(memory_thread: str) -> str:
    """The key of the lock a running turn holds on its conversation (by its memory
    thread): whoever may not touch a conversation mid-turn tries it without waiting."""
    return "turn:" + memory_thread


def session_threads(session_key: str, conversation_key: str | None = None) -> tuple[str, ...]:
    """The memory and run thread ids of one conversation (by its key), or their common
    prefixes for every conversation of the session (no key), from the keys alone."""
    tail = f"{session_key}:{conversation_key}" if conversation_key else f"{session_key}:"
    return (f"{MEMORY_THREAD_PREFIX}:{tail}", f"{RUN_THREAD_PREFIX}:{tail}")
