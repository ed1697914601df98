"""`ConversationMemory`: the one object the agent uses for memory and the registry.

It ties thread ids, storage, the write rules, compaction and the registry together.
Writes to one memory thread, and to one session's registry, are serialised by a
keyed lock and guarded by a `version` compare-and-set. Locks are never nested:
memory first, then the registry, then the deletion of pruned threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable

from memory.compaction import (
    CompactionResult,
    CompactionStatus,
    acompact,
    compact,
    local_fallback,
)
from memory.errors import ConversationNotFound, VersionConflict
from memory.hydration import hydration_dto
from memory.ids import ThreadIds
from memory.limits import COMPACTION_KEEP_MESSAGES, HARD_MESSAGE_CAP, validate_keep
from memory.registry import (
    RegistryChange,
    RegistryState,
    RegistryUpdate,
    accept_draft,
    record_turn,
    registry_dto,
    remove,
    select,
)
from memory.schema import ThreadState, utcnow, validate_id
from memory.storage import ThreadStore
from memory.turns import FinalTurn, SkipReason, plan_turn_write

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]


@dataclass(frozen=True)
class TurnWrite:
    """The outcome of writing a finished turn.

    Attributes:
        written: whether the two messages were appended.
        skipped: why nothing was written, when nothing was.
        state: the memory after the write (as stored).
        pruned: conversations pruned from the registry (their threads are deleted).
    """

    written: bool
    skipped: SkipReason | None
    state: ThreadState
    pruned: tuple[str, ...] = ()


class ConversationMemory:
    """Per-conversation chat memory and the per-session registry over one `ThreadStore`.

    Args:
        threads: the checkpointer-backed store.
        ids: derives thread ids from session and conversation ids.
        keep: messages kept verbatim by compaction (even, below 8).
        clock: the time source (UTC, timezone-aware).
    """

    def __init__(
        self,
        threads: ThreadStore,
        ids: ThreadIds,
        *,
        keep: int = COMPACTION_KEEP_MESSAGES,
        clock: Clock = utcnow,
    ) -> None:
        self.threads = threads
        self.ids = ids
        self.keep = validate_keep(keep)
        self.clock = clock

    # -- thread ids -------------------------------------------------------------------

    def memory_thread(self, session_id: str, conversation_id: str) -> str:
        return self.ids.memory_thread(session_id, conversation_id)

    def run_thread(self, session_id: str, conversation_id: str) -> str:
        return self.ids.run_thread(session_id, conversation_id)

    # -- chat memory ------------------------------------------------------------------

    def _read(self, thread_id: str) -> ThreadState | None:
        document = self.threads.get(thread_id)
        return None if document is None else ThreadState.from_document(document)

    def _put(self, thread_id: str, state: ThreadState, version: int) -> ThreadState:
        stored = ThreadState.model_validate({**state.to_document(), "version": version})
        self.threads.put(thread_id, stored.to_document())
        return stored

    def load(self, session_id: str, conversation_id: str) -> ThreadState:
        """The conversation's memory (empty when nothing is stored yet)."""
        return self._read(self.memory_thread(session_id, conversation_id)) or ThreadState()

    def stored(self, session_id: str, conversation_id: str) -> ThreadState | None:
        """The conversation's memory, or None when nothing is stored."""
        return self._read(self.memory_thread(session_id, conversation_id))

    def write_turn(self, session_id: str, conversation_id: str, turn: FinalTurn) -> TurnWrite:
        """Append a finished turn (once), list or touch the conversation, prune past ten.

        Past `HARD_MESSAGE_CAP` messages the local fallback folds the oldest ones, so the
        bound holds even when no compaction ever succeeds.
        """
        thread_id = self.memory_thread(session_id, conversation_id)
        now = self.clock()
        with self.threads.lock(thread_id):
            current = self._read(thread_id) or ThreadState()
            plan = plan_turn_write(current, turn, now)
            if plan.skipped is not None:
                return TurnWrite(False, plan.skipped, current)
            grown = current.model_copy(update={"messages": [*current.messages, *plan.messages]})
            if len(grown.messages) > HARD_MESSAGE_CAP:
                grown = local_fallback(grown, self.keep, now)
            state = self._put(thread_id, grown, current.version + 1)
        change = self._update_registry(
            session_id, lambda registry: record_turn(registry, conversation_id, turn.user_text, now)
        )
        self._delete_threads(session_id, change.pruned)
        return TurnWrite(True, None, state, change.pruned)

    def replace(
        self, session_id: str, conversation_id: str, state: ThreadState, *, expected_version: int
    ) -> ThreadState:
        """Compare-and-set: store `state` only if the stored version is `expected_version`.

        Raises:
            VersionConflict: another writer got there first; nothing was written.
        """
        thread_id = self.memory_thread(session_id, conversation_id)
        with self.threads.lock(thread_id):
            current = self._read(thread_id) or ThreadState()
            if current.version != expected_version:
                raise VersionConflict(expected_version, current.version)
            return self._put(thread_id, state, expected_version + 1)

    def compact(
        self,
        session_id: str,
        conversation_id: str,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        method: str | None = None,
    ) -> CompactionResult:
        """Compact the conversation's memory if it holds more than eight messages.

        The model runs without any lock held; the result is written with a
        compare-and-set against the version it was computed from.
        """
        snapshot = self.load(session_id, conversation_id)
        result = compact(snapshot, model, keep=self.keep, method=method, now=self.clock())
        return self._commit(self.memory_thread(session_id, conversation_id), snapshot, result)

    async def acompact(
        self,
        session_id: str,
        conversation_id: str,
        model: BaseChatModel | Runnable[Any, Any],
        *,
        method: str | None = None,
    ) -> CompactionResult:
        """Async `compact`: the model call is awaited, storage runs in a worker thread."""
        snapshot = await asyncio.to_thread(self.load, session_id, conversation_id)
        result = await acompact(snapshot, model, keep=self.keep, method=method, now=self.clock())
        thread_id = self.memory_thread(session_id, conversation_id)
        return await asyncio.to_thread(self._commit, thread_id, snapshot, result)

    def _commit(
        self, thread_id: str, snapshot: ThreadState, result: CompactionResult
    ) -> CompactionResult:
        if result.status not in (CompactionStatus.SUCCEEDED, CompactionStatus.FALLBACK):
            return result
        with self.threads.lock(thread_id):
            current = self._read(thread_id) or ThreadState()
            state = result.state
            if current.version != snapshot.version:
                rebased = _rebase(snapshot, current, state, self.keep, self.clock())
                if rebased is None:
                    logger.info("compaction lost a race with another compaction; retried later")
                    return CompactionResult(CompactionStatus.FAILED, current, "version conflict")
                state = rebased
            stored = self._put(thread_id, state, current.version + 1)
        return CompactionResult(result.status, stored, result.error)

    def hydrate(self, session_id: str, conversation_id: str) -> dict[str, Any]:
        """The hydration DTO of an owned conversation.

        Raises:
            ConversationNotFound: unknown, pruned, or another session's conversation.
        """
        self.require_conversation(session_id, conversation_id)
        return hydration_dto(conversation_id, self.stored(session_id, conversation_id))

    # -- registry ---------------------------------------------------------------------

    def registry(self, session_id: str) -> RegistryState:
        """The session's registry (empty when the session has none)."""
        document = self.threads.get(self.ids.registry_thread(session_id))
        return RegistryState() if document is None else RegistryState.model_validate(document)

    def _update_registry(self, session_id: str, update: RegistryUpdate) -> RegistryChange:
        thread_id = self.ids.registry_thread(session_id)
        with self.threads.lock(thread_id):
            current = self.registry(session_id)
            change = update(current)
            if change.state is not current:
                stored = RegistryState.model_validate(
                    {**change.state.model_dump(mode="json"), "version": current.version + 1}
                )
                self.threads.put(thread_id, stored.model_dump(mode="json"))
                change = RegistryChange(stored, change.pruned)
        return change

    def _delete_threads(self, session_id: str, conversation_ids: Iterable[str]) -> None:
        for conversation_id in conversation_ids:
            memory_thread = self.memory_thread(session_id, conversation_id)
            with self.threads.lock(memory_thread):
                self.threads.delete(memory_thread)
            self.threads.delete(self.run_thread(session_id, conversation_id))

    def conversations(self, session_id: str) -> dict[str, Any]:
        """`{selectedConversationId, conversations, limit}`, newest activity first."""
        return registry_dto(self.registry(session_id))

    def require_conversation(self, session_id: str, conversation_id: str) -> None:
        """Raise `ConversationNotFound` unless the session owns the conversation."""
        validate_id(conversation_id, "conversation id")
        if not self.registry(session_id).owns(conversation_id):
            raise ConversationNotFound()

    def accept_draft(self, session_id: str, conversation_id: str) -> None:
        """A draft's first message was accepted: the session now owns the conversation."""
        validate_id(conversation_id, "conversation id")
        change = self._update_registry(
            session_id, lambda registry: accept_draft(registry, conversation_id)
        )
        self._delete_threads(session_id, change.pruned)

    def select(self, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Select an owned conversation without reordering the list."""
        validate_id(conversation_id, "conversation id")
        change = self._update_registry(
            session_id, lambda registry: select(registry, conversation_id)
        )
        return registry_dto(change.state)

    def delete_conversation(self, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Remove an owned conversation and delete its memory and run threads."""
        validate_id(conversation_id, "conversation id")
        change = self._update_registry(
            session_id, lambda registry: remove(registry, conversation_id)
        )
        self._delete_threads(session_id, change.pruned)
        return registry_dto(change.state)

    # -- async wrappers (storage calls block; keep them off the event loop) ------------

    async def aload(self, session_id: str, conversation_id: str) -> ThreadState:
        return await asyncio.to_thread(self.load, session_id, conversation_id)

    async def awrite_turn(
        self, session_id: str, conversation_id: str, turn: FinalTurn
    ) -> TurnWrite:
        return await asyncio.to_thread(self.write_turn, session_id, conversation_id, turn)


def _rebase(
    snapshot: ThreadState, current: ThreadState, compacted: ThreadState, keep: int, now: datetime
) -> ThreadState | None:
    """Replay turns appended after `snapshot` on top of `compacted`, if only appends happened."""
    seen = len(snapshot.messages)
    unchanged = (
        current.summary == snapshot.summary
        and current.pinned_decisions == snapshot.pinned_decisions
        and current.messages[:seen] == snapshot.messages
    )
    if not unchanged:
        return None
    rebased = compacted.model_copy(
        update={"messages": [*compacted.messages, *current.messages[seen:]]}
    )
    if len(rebased.messages) > HARD_MESSAGE_CAP:
        rebased = local_fallback(rebased, keep, now)
    return rebased
