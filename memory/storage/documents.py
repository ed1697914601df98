"""Memory documents: what a document store does, beside the checkpointer.

A memory document (a conversation's `ThreadState`, a session's registry) is one JSON
object under a thread id, with no history, channels or pending writes: a table of its
own on the checkpointer's database. Several are read in one query and changed in one
transaction, all or nothing even under `kill -9`; a caller with rows of its own to
change in it passes `also`, run on the transaction's cursor before the commit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, runtime_checkable

from memory.errors import VersionConflict

Dialect = Literal["sqlite", "postgresql"]
DOCUMENTS_TABLE = "memory_documents"

InTransaction = Callable[[Any], None]
"""Extra statements for a document write's transaction, given its DB-API cursor."""


def in_order(*steps: InTransaction | None) -> InTransaction | None:
    """The steps (None ones left out) as one, run in the order given; None when none is
    left. A step that raises stops the rest, and the transaction rolls back."""
    chosen = [step for step in steps if step is not None]
    if not chosen:
        return None

    def run(cursor: Any) -> None:
        for step in chosen:
            step(cursor)

    return run


Versions = Mapping[str, int | None]
"""The stored version each thread's document must have for a write to go ahead (None:
no document)."""


def check_versions(found: Mapping[str, int | None], expected: Versions) -> None:
    """Raise `VersionConflict` unless each thread's stored version is the one expected."""
    for thread_id, version in expected.items():
        if found.get(thread_id) != version:
            raise VersionConflict(version or 0, found.get(thread_id) or 0)


@runtime_checkable
class DocumentStore(Protocol):
    """Memory documents by thread id (the SQLite and PostgreSQL backends have one)."""

    dialect: Dialect
    """The SQL the cursors of `transaction` and `also` speak."""

    def setup(self) -> None:
        """Create the documents table if it does not exist."""
        ...

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents of `thread_ids` that exist, by thread id, in one query."""
        ...

    def put_documents(
        self,
        documents: Mapping[str, Mapping[str, Any]],
        delete: Sequence[str] = (),
        *,
        also: InTransaction | None = None,
        expected: Versions | None = None,
    ) -> None:
        """In one transaction: check the `expected` versions (`VersionConflict`: nothing
        written), replace each thread's document, delete the threads in `delete` (their
        documents and their checkpoints and writes, run threads included), then run
        `also` on the transaction's cursor."""
        ...

    def transaction(self) -> AbstractContextManager[Any]:
        """One transaction on the store's connection, as a cursor: committed when the
        block ends, rolled back when it raises."""
        ...

    def list_threads(self, prefix: str) -> list[str]:
        """The ids of every document whose thread id starts with `prefix`."""
        ...

    def compact_storage(self) -> None:
        """Give the space of deleted rows back (SQLite's VACUUM; a no-op where the
        database does it by itself)."""
        ...
