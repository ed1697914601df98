"""Chat memory with no agent logic: bounded, final-text only, isolated per conversation."""

from memory.compaction import CompactionOutput, CompactionResult, CompactionStatus
from memory.context import build_context
from memory.conversations import ConversationMemory, TurnWrite
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
from memory.storage import DEFAULT_DATABASE_URL, ThreadStore, open_thread_store
from memory.turns import FinalTurn, Route, SkipReason, TurnStatus

__all__ = [
    "DEFAULT_DATABASE_URL",
    "ChatMemoryError",
    "ChatThreadMessage",
    "CompactionOutput",
    "CompactionResult",
    "CompactionStatus",
    "ConversationMemory",
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
    "ThreadStore",
    "TurnStatus",
    "TurnWrite",
    "UnsupportedDatabaseUrl",
    "VersionConflict",
    "assert_client_safe",
    "build_context",
    "hydration_dto",
    "new_conversation_id",
    "open_thread_store",
    "resolve_secret",
]
