"""Chat memory with no agent logic: bounded, final-text only, isolated per conversation.

The package exports its pure parts, loading no storage (those built on LangChain on first
use, `memory.lazy`); what reads and writes a database is imported from its module.
"""

from typing import TYPE_CHECKING

from memory.errors import (
    ConversationNotFound,
    InvalidInput,
    LockTimeout,
    StorageError,
    UnsupportedDatabaseUrl,
    VersionConflict,
)
from memory.hydration import assert_client_safe
from memory.ids import ThreadIds, resolve_secret
from memory.lazy import lazy_exports
from memory.registry import new_conversation_id
from memory.schema import ThreadState

if TYPE_CHECKING:
    from memory.compaction import CompactionOutput, CompactionStatus
    from memory.turns import SkipReason

__getattr__ = lazy_exports(
    __name__,
    {
        "memory.compaction": ("CompactionOutput", "CompactionStatus"),
        "memory.turns": ("SkipReason",),
    },
)

__all__ = [
    "CompactionOutput",
    "CompactionStatus",
    "ConversationNotFound",
    "InvalidInput",
    "LockTimeout",
    "SkipReason",
    "StorageError",
    "ThreadIds",
    "ThreadState",
    "UnsupportedDatabaseUrl",
    "VersionConflict",
    "assert_client_safe",
    "new_conversation_id",
    "resolve_secret",
]
