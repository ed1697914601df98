"""Typed errors of the memory package and their message templates."""

from __future__ import annotations

INVALID_ID = "{what} must be 1-{limit} characters of A-Z, a-z, 0-9, '_' or '-'"
UNSTORABLE_TEXT = (
    "{what} contains a character that cannot be stored (a NUL, or an unpaired "
    "surrogate); send UTF-8 text"
)
INVALID_TEXT_TYPE = "{what} must be a string, got {type_name}"
SHORT_SECRET = "the session secret must be at least {limit} characters long (got {length})"
CONVERSATION_NOT_FOUND = "conversation not found"
VERSION_CONFLICT = "memory thread changed concurrently (expected version {expected}, found {found})"
LOCK_TIMEOUT = "timed out after {seconds:.1f}s waiting for a memory lock"
UNSUPPORTED_DATABASE_URL = (
    "unsupported database URL {url!r}: use sqlite:///path/to/file.sqlite or postgresql://…"
)
STORAGE_FAILED = "conversation storage is unavailable; please try again shortly"
MEMORY_NOT_FOUND = "memory not found"
EMBEDDINGS_UNSUPPORTED = (
    "AGENT_EMBEDDINGS_MODEL needs a vector index the database cannot provide: {why}; "
    "unset it to rank long-term memory and the archive lexically"
)
VECTOR_DRIVER_MISSING = EMBEDDINGS_UNSUPPORTED.format(
    why="SQLite's vector index (sqlite-vec, loaded through the sqlean.py driver) needs "
    "{package}, which is not installed (pip install {package})"
)
FORBIDDEN_KEY = "forbidden key {key!r} at {path} in a client-facing payload"


class ChatMemoryError(Exception):
    """Base class of every error raised by the memory package."""


class InvalidInput(ChatMemoryError, ValueError):
    """Input rejected at the memory boundary; nothing was written."""


class ConversationNotFound(ChatMemoryError, LookupError):
    """Unknown conversation, or one that belongs to another session."""

    def __init__(self, message: str = CONVERSATION_NOT_FOUND) -> None:
        super().__init__(message)


class MemoryNotFound(ChatMemoryError, LookupError):
    """Unknown long-term item, or one that belongs to another session."""

    def __init__(self, message: str = MEMORY_NOT_FOUND) -> None:
        super().__init__(message)


class MemoryRefused(InvalidInput):
    """The write gate turned a text down (the message says why; nothing was written)."""


class VersionConflict(ChatMemoryError):
    """A compare-and-set write found a newer version than the one it read."""

    def __init__(self, expected: int, found: int) -> None:
        super().__init__(VERSION_CONFLICT.format(expected=expected, found=found))
        self.expected = expected
        self.found = found


class StorageError(ChatMemoryError):
    """The storage backend failed; the message never carries backend details."""


class LockTimeout(StorageError):
    """A serialised write could not take its lock in time."""


class UnsupportedDatabaseUrl(InvalidInput):
    """`AGENT_DATABASE_URL` names a backend this build does not provide."""


class ForbiddenKeyError(ChatMemoryError):
    """A client-facing payload carries a key that must never leave the server."""
