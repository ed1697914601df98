"""Memory documents: what a document store does, beside the checkpointer.

A memory document (a conversation's `ThreadState`, a session's registry) is one JSON
object under a thread id, with no history, channels or pending writes: a table of its
own on the checkpointer's database. Several are read in one query and changed in one
transaction, all or nothing even under `kill -9`; a caller with rows of its own to
change in it passes `also`, run on the transaction's cursor before the commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.store.base import BaseStore, PutOp

from memory.errors import VersionConflict

Dialect = Literal["sqlite", "postgresql"]
DOCUMENTS_TABLE = "memory_documents"
LEGACY_DOCUMENT_METADATA = {"source": "update", "step": 0, "parents": {}}
"""The metadata of a memory document stored as a single-checkpoint thread (the
layout before documents had their own table)."""

InTransaction = Callable[[Any], None]
"""Extra statements for a document write's transaction, given its DB-API cursor."""


def in_order(*steps: InTransaction | None) -> InTransaction | None:
    """The steps (None ones left out) as one, run in the order given; None when none is
    left. A step that raises stops the rest, and the transaction rolls back."""
    chosen = [step for step in steps if step is not None]

    def run(cursor: Any) -> None:
        for step in chosen:
            step(cursor)

    return run if chosen else None


Versions = Mapping[str, int | None]
"""The stored version each thread's document must have for a write to go ahead (None:
no document)."""


CANNOT_JOIN = "{store} cannot write inside a documents' transaction"


def items_step(store: BaseStore, ops: Sequence[PutOp]) -> InTransaction:
    """`ops` as a step of a documents' transaction: forgetting an item commits with the
    redaction of what it was learnt from. Both backends' long-term stores join it with
    `put_in(cursor, ops)` (puts, and deletes as puts of None); `TypeError` for a store
    that cannot (an in-memory one, say)."""
    put_in = getattr(store, "put_in", None)
    if put_in is None:
        raise TypeError(CANNOT_JOIN.format(store=type(store).__name__))
    return lambda cursor: put_in(cursor, ops)


def _pairs(rows: Sequence[Any]) -> list[tuple[Any, ...]]:  # SQLite's tuples, PostgreSQL's dicts
    return [tuple(row.values()) if isinstance(row, dict) else tuple(row) for row in rows]


class DocumentStore:
    """Memory documents by thread id, one JSON text each (not JSONB: it refuses a NUL
    character, which a message may hold); a backend's subclass gives its SQL, whose
    thread ids are the parameters `ids` makes of them, and how to reach its table."""

    dialect: Dialect
    """The SQL the cursors of `transaction` and `also` speak."""
    EXISTS_SQL: str
    CREATE_SQL: str
    LEGACY_SQL: str
    LEGACY_PARAMS: tuple[Any, ...]
    SELECT_SQL: str
    VERSIONS_SQL: str
    UPSERT_SQL: str
    PREFIX_SQL: str

    transaction: Callable[[], AbstractContextManager[Any]]
    """One transaction on the store's connection, as a cursor: committed when the block
    ends, rolled back when it raises."""
    reading: Callable[[], AbstractContextManager[Any]]
    """A cursor (or connection) for one read outside any write transaction."""
    ids: Callable[[Sequence[str]], tuple[Any, ...]]
    delete_threads: Callable[[Any, Sequence[str]], None]
    """`(cur, thread_ids)`: delete the documents, checkpoints and writes of `thread_ids`."""
    legacy_document: Callable[[JsonPlusSerializer, str, bytes], Any]
    """The document in a `LEGACY_SQL` row (anything but a dict is none)."""
    redact_runs: Callable[..., None]
    """`(cur, thread_ids, redact, serde)`: rewrite the run threads' values `redact` changes."""

    def setup(self) -> None:
        """Create the documents table; on a database from before it existed, move the
        documents stored as single-checkpoint threads into it."""
        with self.transaction() as cur:
            if cur.execute(self.EXISTS_SQL, (DOCUMENTS_TABLE,)).fetchone():
                return
            cur.execute(self.CREATE_SQL)
            rows = _pairs(cur.execute(self.LEGACY_SQL, self.LEGACY_PARAMS).fetchall())
            serde = JsonPlusSerializer()
            found = {thread: self.legacy_document(serde, kind, blob) for thread, kind, blob in rows}
            documents = {thread: doc for thread, doc in found.items() if isinstance(doc, dict)}
            if documents:
                self.delete_threads(cur, list(documents))
                self._upsert(cur, documents)

    def _upsert(self, cur: Any, documents: Mapping[str, Mapping[str, Any]]) -> None:
        rows = [(t, json.dumps(dict(doc), ensure_ascii=False)) for t, doc in documents.items()]
        cur.executemany(self.UPSERT_SQL, rows)

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The documents of `thread_ids` that exist, by thread id, in one query."""
        if not thread_ids:
            return {}
        with self.reading() as cur:
            rows = cur.execute(self.SELECT_SQL, self.ids(thread_ids)).fetchall()
        return {thread_id: json.loads(document) for thread_id, document in _pairs(rows)}

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
        with self.transaction() as cur:
            if expected:
                rows = cur.execute(self.VERSIONS_SQL, self.ids(list(expected))).fetchall()
                found = dict(_pairs(rows))
                for thread_id, version in expected.items():
                    if found.get(thread_id) != version:
                        raise VersionConflict(version or 0, found.get(thread_id) or 0)
            if delete:
                self.delete_threads(cur, delete)
            if documents:
                self._upsert(cur, documents)
            if also is not None:
                also(cur)

    def list_threads(self, prefix: str) -> list[str]:
        """The ids of every document whose thread id starts with `prefix`."""
        with self.reading() as cur:
            rows = cur.execute(self.PREFIX_SQL, (len(prefix), prefix)).fetchall()
        return [row[0] for row in _pairs(rows)]

    def compact_storage(self) -> None:
        """Give the space of deleted rows back (a no-op where the database does it by
        itself: PostgreSQL's autovacuum)."""
