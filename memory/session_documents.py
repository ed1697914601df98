"""A session's documents in storage: its registry and its conversations' memory.

They are read together in one query, and written in one transaction under the
session's lock, with the deletion of pruned conversations' threads and the archive's
change on the same transaction: a crash never leaves the registry behind its memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory.archive.archive import Archive
from memory.archive.lines import ArchiveWrite
from memory.ids import ThreadIds, session_threads
from memory.registry import RegistryChange, RegistryState, RegistryUpdate
from memory.schema import ThreadState
from memory.storage import ThreadStore
from memory.storage.documents import InTransaction, in_order


@dataclass(frozen=True)
class Snapshot:
    """A session's registry (empty when it has none) and one conversation's memory
    (`state` None: nothing stored), read together."""

    registry: RegistryState
    state: ThreadState | None

    @property
    def memory(self) -> ThreadState:
        """The conversation's memory, empty when nothing is stored."""
        return self.state or ThreadState()


@dataclass(eq=False)
class SessionDocuments:
    """The registry and memory documents of every session, over one `ThreadStore`, with
    the session archive whose changes commit with them."""

    threads: ThreadStore
    ids: ThreadIds
    archive: Archive

    def lock(self, session_id: str) -> Any:
        """The lock every writer of the session's documents holds (registry thread key)."""
        return self.threads.lock(self.ids.registry_thread(session_id))

    def read(self, session_id: str, conversation_id: str) -> Snapshot:
        """The session's registry and the conversation's memory, in one query."""
        registry_thread = self.ids.registry_thread(session_id)
        memory_thread = self.ids.memory_thread(session_id, conversation_id)
        documents = self.threads.get_many([registry_thread, memory_thread])
        memory = documents.get(memory_thread)
        return Snapshot(
            RegistryState.model_validate(documents.get(registry_thread) or {}),
            None if memory is None else ThreadState.from_document(memory),
        )

    def read_registry(self, session_id: str) -> RegistryState:
        """The session's registry (empty when the session has none)."""
        return RegistryState.model_validate(
            self.threads.get(self.ids.registry_thread(session_id)) or {}
        )

    def commit(
        self,
        session_id: str,
        registry: RegistryState,
        change: RegistryChange | None,
        memory: dict[str, ThreadState] | None = None,
        archive: ArchiveWrite | None = None,
        also: InTransaction | None = None,
        read: tuple[str, Snapshot] | None = None,
    ) -> None:
        """Store new memory states (by conversation id), the registry change, the pruned
        conversations' deletion, the archive's change and then `also` in one
        transaction (the caller holds the session's lock). With `read` (a conversation
        and its snapshot, read before the lock was taken), the stored documents must be
        those read (`VersionConflict`: nothing written)."""
        documents = {
            self.ids.memory_thread(session_id, conversation_id): state.to_document()
            for conversation_id, state in (memory or {}).items()
        }
        if change is not None and change.state is not registry:
            state = change.state.model_copy(update={"version": registry.version + 1})
            documents[self.ids.registry_thread(session_id)] = state.model_dump(mode="json")
        key = self.ids.session_key(session_id)
        doomed = [
            thread
            for pruned in (change.pruned if change is not None else ())
            for thread in session_threads(key, self.ids.conversation_key(session_id, pruned))
        ]
        lines = None if archive is None else self.archive.writer(archive)
        expected = None
        if read is not None:
            conversation_id, snapshot = read
            expected = {
                self.ids.registry_thread(session_id): snapshot.registry.version,
                self.ids.memory_thread(session_id, conversation_id): (
                    None if snapshot.state is None else snapshot.state.version
                ),
            }
        self.threads.put_many(
            documents,
            delete=doomed,
            also=in_order(lines, also),
            expected=expected,
        )

    def update_registry(
        self, session_id: str, update: RegistryUpdate, *, forget_lines: bool = False
    ) -> RegistryChange:
        """Apply `update` to the registry under the session's lock; with
        `forget_lines`, the archived lines of the conversations it drops go in the same
        transaction (a deletion, not a pruning)."""
        with self.lock(session_id):
            current = self.read_registry(session_id)
            change = update(current)
            if change.state is not current:
                lines = self.archive.dropped(session_id, change.pruned) if forget_lines else None
                self.commit(session_id, current, change, archive=lines)
        return change
