"""Chat memory with no agent logic: bounded, final-text only, isolated per conversation.

The package exports its pure parts (schema, ids, write rules, compaction, context,
hydration, errors), each imported on first use: importing them loads no storage, and
importing one of them (`memory.errors`) loads no other. What reads and writes a database
is imported from its module: `memory.conversations.ConversationMemory`, and
`memory.storage` (`ThreadStore`, `open_thread_store`).
"""

from typing import TYPE_CHECKING

from memory.lazy import lazy_exports

if TYPE_CHECKING:
    from memory.compaction import CompactionOutput, CompactionResult, CompactionStatus
    from memory.context import build_context
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
    from memory.registry import new_conversation_id
    from memory.schema import ChatThreadMessage, ThreadState
    from memory.turns import FinalTurn, Route, SkipReason, TurnStatus

__getattr__ = lazy_exports(
    __name__,
    {
        "memory.compaction": ("CompactionOutput", "CompactionResult", "CompactionStatus"),
        "memory.context": ("build_context",),
        "memory.errors": (
            "ChatMemoryError",
            "ConversationNotFound",
            "ForbiddenKeyError",
            "InvalidInput",
            "InvalidSecret",
            "LockTimeout",
            "StorageError",
            "UnsupportedDatabaseUrl",
            "VersionConflict",
        ),
        "memory.hydration": ("assert_client_safe", "hydration_dto"),
        "memory.ids": ("ThreadIds", "resolve_secret"),
        "memory.registry": ("new_conversation_id",),
        "memory.schema": ("ChatThreadMessage", "ThreadState"),
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
    "build_context",
    "hydration_dto",
    "new_conversation_id",
    "resolve_secret",
]
