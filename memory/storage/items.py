"""The long-term item store's part in a documents' transaction.

Forgetting an item commits with the redaction of what it was learnt from (the archive,
the session's memory): the item store's puts and deletes then run with the cursor of
the documents' transaction (`memory.storage.documents`) instead of a transaction of
their own. Both backends' stores can (`SharedSqliteStore`, `PooledPostgresStore`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from langgraph.store.base import BaseStore, PutOp

from memory.storage.documents import InTransaction

CANNOT_JOIN = "{store} cannot write inside a documents' transaction"


@runtime_checkable
class ItemsInTransaction(Protocol):
    """A long-term store whose writes can join a documents' transaction."""

    def put_in(self, cursor: Any, ops: Sequence[PutOp]) -> None:
        """Run `ops` (puts, and deletes as puts of None) with `cursor`, inside the
        transaction its caller holds and commits."""
        ...


def items_step(store: BaseStore, ops: Sequence[PutOp]) -> InTransaction:
    """`ops` as a step of a documents' transaction (`ThreadStore.put_many(..., also=)`);
    `TypeError` for a store that cannot join it (an in-memory one, say)."""
    if not isinstance(store, ItemsInTransaction):
        raise TypeError(CANNOT_JOIN.format(store=type(store).__name__))
    joined = store
    return lambda cursor: joined.put_in(cursor, ops)
