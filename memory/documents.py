"""Memory documents as single-checkpoint threads: the checkpoint format and the backend protocol.

A memory document (a conversation's `ThreadState`, a session's registry) is the
state of a LangGraph thread whose graph has one `document` channel (see
`memory.storage.build_memory_graph`). Each write replaces the thread's only
checkpoint with the one that graph's `store_document` step would leave, so a
thread never holds more than one checkpoint and reading it through the graph
(`get_state`) gives the same document.

The backends write these checkpoints with their own statements instead of one
`checkpointer.put` per document, for two reasons: several documents change in one
transaction (a turn's memory, its session's registry and the threads of pruned
conversations: all or nothing, even under `kill -9`), and several documents are
read in one query (a turn reads its memory and registry in one round trip).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata, empty_checkpoint

DOCUMENT = "document"
"""The one channel of a memory thread."""

DOCUMENT_METADATA: CheckpointMetadata = {"source": "update", "step": 0, "parents": {}}


def document_checkpoint(document: Mapping[str, Any], version: str) -> Checkpoint:
    """The checkpoint a memory thread holds for `document` (its `document` channel at `version`)."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {DOCUMENT: dict(document)}
    checkpoint["channel_versions"] = {DOCUMENT: version}
    return checkpoint


def checkpoint_document(checkpoint: Mapping[str, Any]) -> dict[str, Any] | None:
    """The document a memory-thread checkpoint holds, or None for any other checkpoint."""
    document = checkpoint.get("channel_values", {}).get(DOCUMENT)
    return dict(document) if isinstance(document, dict) else None


@runtime_checkable
class DocumentSaver(Protocol):
    """What a checkpointer backend adds for memory documents (SQLite and PostgreSQL do)."""

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents of `thread_ids` that exist, by thread id, in one query."""
        ...

    def put_documents(
        self, documents: Mapping[str, Mapping[str, Any]], delete: Sequence[str] = ()
    ) -> None:
        """In one transaction: replace each thread's checkpoints with its document's, and
        delete every checkpoint and write of the threads in `delete`."""
        ...

    def redact_threads(self, thread_ids: Sequence[str], redact: Callable[[str, Any], Any]) -> int:
        """In one transaction: every channel value and pending write of `thread_ids`
        (every checkpoint, every namespace) replaced by `redact(thread_id, value)` where
        that returns a different object; returns how many values changed."""
        ...

    def keep_latest_root(self, thread_id: str) -> None:
        """Keep only the newest root checkpoint of a finished thread."""
        ...

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        """The value of `channel` in the newest root checkpoint of each of `thread_ids`
        (where it has one), in one query: a run thread's `status`, for instance."""
        ...

    def list_threads(self, prefix: str) -> list[str]:
        """The ids of every thread whose id starts with `prefix` (maintenance)."""
        ...

    def compact_storage(self) -> None:
        """Give the space of deleted rows back (SQLite's VACUUM; a no-op where the
        database does it by itself)."""
        ...
