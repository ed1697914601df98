"""The long-term item store's part in a documents' transaction.

Forgetting an item commits with the redaction of what it was learnt from (the archive,
the session's memory): the item store's puts and deletes then run with the cursor of
the documents' transaction (`memory.storage.documents`) instead of a transaction of
their own. Both backends' stores can: their `put_in(cursor, ops)` runs the puts (and
deletes, as puts of None) inside the transaction its caller holds and commits.
"""

from __future__ import annotations

from collections.abc import Sequence

from langgraph.store.base import BaseStore, PutOp

from memory.storage.documents import InTransaction

CANNOT_JOIN = "{store} cannot write inside a documents' transaction"


def items_step(store: BaseStore, ops: Sequence[PutOp]) -> InTransaction:
    """`ops` as a step of a documents' transaction (`ThreadStore.put_many(..., also=)`);
    `TypeError` for a store that cannot join it (an in-memory one, say)."""
    put_in = getattr(store, "put_in", None)
    if put_in is None:
        raise TypeError(CANNOT_JOIN.format(store=type(store).__name__))
    return lambda cursor: put_in(cursor, ops)
