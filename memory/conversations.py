"""`ConversationMemory`: the one object the agent uses for memory and the registry.

Every write of a session's documents (a conversation's memory, the registry, the
deletion of a conversation's threads) happens under that session's lock, reads what
it needs in one query, checks that the conversation is still the session's, and
commits in one transaction. So a conversation deleted or pruned while a turn runs
in it stays deleted (the turn writes nothing), and a crash never leaves the registry
behind its memory. A `version` compare-and-set guards compaction, which calls its
model without any lock held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Any

from langchain_core.runnables import Runnable

from memory.analysis import redact_secrets
from memory.archive.archive import Archive, open_archive
from memory.archive.embedding import local_embeddings
from memory.archive.lines import ArchiveWrite
from memory.compaction import CompactionResult, CompactionStatus, compact
from memory.errors import ConversationNotFound, VersionConflict
from memory.hydration import hydration_dto
from memory.ids import ThreadIds
from memory.limits import COMPACTION_KEEP_MESSAGES, validate_keep
from memory.longterm.items import MemoryItem
from memory.redaction import forget_texts
from memory.registry import (
    RegistryChange,
    accept_draft,
    archives_summaries,
    entry_title,
    record_turn,
    registry_dto,
    remove,
    select,
)
from memory.schema import Clock, ThreadState, utcnow
from memory.session_documents import SessionDocuments, Snapshot
from memory.storage import ThreadStore
from memory.storage.documents import InTransaction
from memory.turn_write import TurnWrite, commit_turn
from memory.turns import FinalTurn, rebase, settled, with_compaction, with_turn

logger = logging.getLogger(__name__)


class ConversationMemory:
    """Per-conversation chat memory and the per-session registry over one `ThreadStore`:
    compaction keeps `keep` messages verbatim (even, below 8); every write appends to the
    `archive` (default: on `threads`' database, its relevance judged by the local model)."""

    def __init__(
        self,
        threads: ThreadStore,
        ids: ThreadIds,
        *,
        keep: int = COMPACTION_KEEP_MESSAGES,
        clock: Clock = utcnow,
        archive: Archive | None = None,
    ) -> None:
        self.threads = threads
        self.ids = ids
        self.keep = validate_keep(keep)
        self.clock = clock
        self.archive = archive or open_archive(threads, ids, judge=local_embeddings())
        self.documents = SessionDocuments(threads, ids, self.archive)
        self._with_turn = partial(with_turn, keep=self.keep, owe_embedding=self.archive.embeds)
        # what is the thread ids', the documents' or the archive's own, as they give it
        self.memory_thread = ids.memory_thread
        self.run_thread = ids.run_thread
        self.registry = self.documents.read_registry
        self.recall = self.archive.recall
        self.search = self.archive.search

    # -- reads ------------------------------------------------------------------------

    def read_memory(self, session_id: str, conversation_id: str) -> ThreadState:
        """The conversation's memory (empty when nothing is stored yet)."""
        return self.documents.read(session_id, conversation_id).memory

    def memory_for_turn(
        self, session_id: str, conversation_id: str, *, admit: bool = False
    ) -> Snapshot:
        """The memory a turn starts from (with the registry: the turn's write goes from
        them), checking in the same read that the session owns the conversation
        (`ConversationNotFound` unless it does, or `admit`: the graph's own input, as
        under `langgraph dev`, starts conversations without a draft)."""
        snapshot = self.documents.read(session_id, conversation_id)
        if not snapshot.registry.owns(conversation_id):
            if not admit:
                raise ConversationNotFound()
            self.accept_draft(session_id, conversation_id)
        return snapshot

    # -- writes -----------------------------------------------------------------------

    def write_turn(
        self,
        session_id: str,
        conversation_id: str,
        turn: FinalTurn,
        *,
        owe_remember: bool = False,
        kept_user_text: str | None = None,
        held: Sequence[MemoryItem] = (),
        context: Sequence[str] = (),
        read: Snapshot | None = None,
    ) -> TurnWrite:
        """Write a finished turn (`memory.turn_write`) with the upkeep it leaves owed
        (`memory.turns.with_turn`; more than eight messages owe a compaction) in one
        transaction, so that no crash loses what is owed.

        The archive and a new title keep the user's text secret-redacted (`kept_user_text`,
        when the caller's reading of it redacted it already); the answer is indexed without
        what it repeats of the turn's `context` (`Archive.turn`). The long-term items the
        turn read (`held`) that were forgotten while it ran are taken out of what it writes
        (`memory.redaction.repeats_forgotten`): a forgetting's tombstone holds over a turn
        that raced it. The documents the turn started from (`read`) are written from when
        nothing changed them since; else they are read again under the lock.
        """
        kept = redact_secrets(turn.user_text) if kept_user_text is None else kept_user_text
        with self.documents.lock(session_id):
            bound = (self.documents, self._with_turn, self.clock, session_id, conversation_id)
            write = partial(commit_turn, *bound, turn, kept)
            if read is not None:
                try:
                    return write(read, owe_remember, held, context, checked=True)
                except VersionConflict:
                    pass  # written meanwhile (an upkeep, a forgetting): read it again
            snapshot = self.documents.read(session_id, conversation_id)
            return write(snapshot, owe_remember, held, context)

    def await_review(self, session_id: str, conversation_id: str, goal: str) -> tuple[str, ...]:
        """A task list in the conversation stopped for its review: list it as waiting
        (titled by `goal` when it is new). Returns the titles of the conversations this
        pruned from the list (their threads are deleted); `ConversationNotFound`: the
        conversation is not the session's any more."""
        now = self.clock()
        key = self.ids.conversation_key(session_id, conversation_id)
        with self.documents.lock(session_id):
            current = self.documents.read_registry(session_id)
            if not current.owns(conversation_id):
                raise ConversationNotFound()
            title = redact_secrets(goal) if goal else "Task list"
            change = record_turn(current, conversation_id, title, now, key, review=True)
            self.documents.commit(session_id, current, change)
        return tuple(e.title for e in current.conversations if e.id in change.pruned)

    def compact(
        self,
        session_id: str,
        conversation_id: str,
        compactor: Runnable[Any, Any],
        *,
        snapshot: ThreadState | None = None,
        settle: tuple[Collection[str], bool, bool] | None = None,
    ) -> CompactionResult:
        """Compact the conversation's memory if it holds more than eight messages: the
        `compactor` (a runnable bound to the schema) runs without any lock held, and the
        result is written with a compare-and-set against the version it was computed from.
        `snapshot`: the memory to start from (as the turn's write stored it), else read;
        `settle`: the upkeep's end (`settle_upkeep`'s `paid`, `failed`, `batching`),
        stored in the compaction's commit when it stores one."""
        if snapshot is None:
            snapshot = self.read_memory(session_id, conversation_id)
        result = compact(snapshot, compactor, keep=self.keep, now=self.clock())
        if result.status not in (CompactionStatus.SUCCEEDED, CompactionStatus.FALLBACK):
            return result
        with self.documents.lock(session_id):
            latest = self.documents.read(session_id, conversation_id)
            if not latest.registry.owns(conversation_id) or latest.state is None:
                logger.info("compaction skipped: the conversation was deleted meanwhile")
                return CompactionResult(CompactionStatus.FAILED, latest.memory, "conversation gone")
            current, state = latest.state, result.state
            if current.version != snapshot.version:
                rebased = rebase(snapshot, current, state, self.keep, self.clock())
                if rebased is None:
                    logger.info("compaction lost a race with another compaction; retried later")
                    return CompactionResult(CompactionStatus.FAILED, current, "version conflict")
                state = rebased
            stored = with_compaction(state, current)
            if settle is not None:
                stored = settled(stored, settle[0], failed=settle[1], batching=settle[2])
            lines = None
            compacted = stored.summary_version != current.summary_version
            if compacted and archives_summaries(latest.registry, conversation_id):
                title = entry_title(latest.registry, conversation_id)
                lines = self.archive.superseded(
                    session_id, conversation_id, title, current, self.clock()
                )
            memory = {conversation_id: stored}
            self.documents.commit(session_id, latest.registry, None, memory, lines)
        return CompactionResult(result.status, stored, result.error, result.refused)

    def settle_upkeep(
        self,
        session_id: str,
        conversation_id: str,
        paid: Collection[str],
        *,
        failed: bool,
        batching: bool = False,
    ) -> ThreadState | None:
        """Record an upkeep run's end (`memory.turns.settled`): the memory stored, None if gone."""
        with self.documents.lock(session_id):
            latest = self.documents.read(session_id, conversation_id)
            if not latest.registry.owns(conversation_id) or latest.state is None:
                return None
            stored = settled(latest.state, paid, failed=failed, batching=batching)
            self.documents.commit(session_id, latest.registry, None, {conversation_id: stored})
        return stored

    def hydrate(self, session_id: str, conversation_id: str) -> dict[str, Any]:
        """The hydration DTO of a conversation (`ConversationNotFound`: not the session's)."""
        snapshot = self.memory_for_turn(session_id, conversation_id)
        return hydration_dto(conversation_id, snapshot.state)

    # -- registry ---------------------------------------------------------------------

    def conversations(self, session_id: str) -> dict[str, Any]:
        """`{selectedConversationId, conversations, limit}`, newest activity first."""
        return registry_dto(self.registry(session_id))

    def require_conversation(self, session_id: str, conversation_id: str) -> None:
        """Raise `ConversationNotFound` unless the session owns the conversation."""
        if not self.registry(session_id).owns(conversation_id):
            raise ConversationNotFound()

    def accept_draft(self, session_id: str, conversation_id: str) -> None:
        """A draft's first message was accepted: the session now owns the conversation."""
        self.documents.update_registry(
            session_id, lambda registry: accept_draft(registry, conversation_id)
        )

    def select(self, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Select an owned conversation without reordering the list."""
        change = self.documents.update_registry(
            session_id, lambda registry: select(registry, conversation_id)
        )
        return registry_dto(change.state)

    def delete_conversation(self, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Remove an owned conversation and delete its memory, run threads and archived
        lines at once: a turn still running in it writes nothing when it ends, and no later
        turn of any conversation recalls it."""
        change = self.documents.update_registry(
            session_id, lambda registry: remove(registry, conversation_id), forget_lines=True
        )
        return registry_dto(change.state)

    # -- the archive --------------------------------------------------------------------

    def forget_history(self, session_id: str) -> int:
        """Delete every archived line of the session, and remember when: a summary that
        may quote what was said before is never archived afterwards (one transaction,
        under the session's lock). Returns how many lines were deleted."""
        with self.documents.lock(session_id):
            lines = self.archive.count(session_id)
            current = self.documents.read_registry(session_id)
            cleared = current.model_copy(update={"history_cleared_at": self.clock()})
            change = RegistryChange(cleared) if current.version else None
            drop = ArchiveWrite(drop_session=self.ids.session_key(session_id))
            self.documents.commit(session_id, current, change, archive=drop)
        return lines

    def forgetter(self, session_id: str) -> Callable[[Sequence[MemoryItem], InTransaction], None]:
        """What a long-term write that forgets items calls (`LongTermMemory`'s `forget=`):
        their texts forgotten in the session's archive and memory, with a tombstone of
        each, in the transaction of the write itself (`memory.redaction.forget_texts`)."""
        return partial(forget_texts, self.threads, self.ids, self.archive, session_id)
