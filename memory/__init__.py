"""Chat memory with no agent logic: bounded, final-text only, isolated per conversation.

The package exports its pure parts, loading no storage; those built on LangChain are
imported on first use, so that importing one module (`memory.errors`) loads none of it.
What reads and writes a database is imported from its module (`ConversationMemory`,
`memory.storage`).
"""

from typing import TYPE_CHECKING

from memory.errors import (
    ChatMemoryError,
    ConversationNotFound,
    ForbiddenKeyError,
    InvalidInput,
    InvalidSecret,
    LockTimeout,
    StorageError,
    UnsupportedDatabaseUrl,
    VersionConflict,
)
from memory.hydration import assert_client_safe, hydration_dto
from memory.ids import ThreadIds, resolve_secret
from memory.lazy import lazy_exports
from memory.registry import new_conversation_id
from memory.schema import ChatThreadMessage, ThreadState

if TYPE_CHECKING:
    from memory.compaction import CompactionOutput, CompactionResult, CompactionStatus
    from memory.turns import FinalTurn, Route, SkipReason, TurnStatus

__getattr__ = lazy_exports(
    __name__,
    {
        "memory.compaction": ("CompactionOutput", "CompactionResult", "CompactionStatus"),
        "memory.turns": ("FinalTurn", "Route", "SkipReason", "TurnStatus"),
    },
)

__all__ = [
    "ChatMemoryError",
    "ChatThreadMessage",
    "CompactionOutput",
    "CompactionResult",
    "CompactionStatus",
    "ConversationNotFound",
    "FinalTurn",
    "ForbiddenKeyError",
    "InvalidInput",
    "InvalidSecret",
    "LockTimeout",
    "Route",
    "SkipReason",
    "StorageError",
    "ThreadIds",
    "ThreadState",
    "TurnStatus",
    "UnsupportedDatabaseUrl",
    "VersionConflict",
    "assert_client_safe",
    "hydration_dto",
    "new_conversation_id",
    "resolve_secret",
]
