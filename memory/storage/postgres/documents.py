"""`PostgresDocuments`: the memory documents in the checkpointer's database, on its pool."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from psycopg import Connection, Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from memory.storage.documents import (
    DOCUMENTS_TABLE,
    Dialect,
    InTransaction,
    Versions,
    check_versions,
)

DELETE_THREADS_SQL = tuple(
    f"DELETE FROM {table} WHERE thread_id = ANY(%(threads)s)"
    for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints", DOCUMENTS_TABLE)
)
UPSERT_DOCUMENTS_SQL = (
    f"INSERT INTO {DOCUMENTS_TABLE} (thread_id, document) VALUES (%s, %s) "
    "ON CONFLICT (thread_id) DO UPDATE SET document = EXCLUDED.document"
)
SELECT_LEGACY_DOCUMENTS_SQL = """
SELECT c.thread_id, b.type, b.blob
FROM checkpoints c
JOIN checkpoint_blobs b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'document'
 AND b.version = c.checkpoint -> 'channel_versions' ->> 'document'
WHERE c.checkpoint_ns = '' AND c.metadata = %s
"""
LEGACY_DOCUMENT_METADATA = {"source": "update", "step": 0, "parents": {}}
"""The metadata of a memory document stored as a single-checkpoint thread (the
layout before documents had their own table)."""


def _document_rows(documents: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    # JSON text, not JSONB: JSONB refuses a NUL character, which a message may hold.
    return [
        (thread_id, json.dumps(dict(document), ensure_ascii=False))
        for thread_id, document in documents.items()
    ]


class PostgresDocuments:
    """Memory documents (`memory.storage.documents.DocumentStore`) in the checkpointer's
    database, over its pool: one JSON text per thread id. Each write is one
    transaction on its own pooled connection."""

    dialect: Dialect = "postgresql"

    def __init__(self, pool: ConnectionPool[Connection[DictRow]]) -> None:
        self.pool = pool

    @contextmanager
    def transaction(self) -> Iterator[Cursor[DictRow]]:
        """One transaction on a pooled connection, as a cursor."""
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    def setup(self) -> None:
        """Create the documents table; on a database from before it existed, move the
        documents stored as single-checkpoint threads into it."""
        with self.transaction() as cur:
            row = cur.execute("SELECT to_regclass(%s) AS found", (DOCUMENTS_TABLE,)).fetchone()
            if row is not None and row["found"] is not None:
                return
            cur.execute(
                f"CREATE TABLE {DOCUMENTS_TABLE} "
                "(thread_id TEXT PRIMARY KEY, document TEXT NOT NULL)"
            )
            serde = JsonPlusSerializer()
            documents = {}
            for legacy in cur.execute(
                SELECT_LEGACY_DOCUMENTS_SQL, (Jsonb(LEGACY_DOCUMENT_METADATA),)
            ).fetchall():
                document = serde.loads_typed((legacy["type"], legacy["blob"]))
                if isinstance(document, dict):
                    documents[legacy["thread_id"]] = document
            if documents:
                for sql in DELETE_THREADS_SQL:
                    cur.execute(sql, {"threads": list(documents)})
                cur.executemany(UPSERT_DOCUMENTS_SQL, _document_rows(documents))

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not thread_ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT thread_id, document FROM {DOCUMENTS_TABLE} WHERE thread_id = ANY(%s)",
                (list(thread_ids),),
            ).fetchall()
        return {row["thread_id"]: json.loads(row["document"]) for row in rows}

    def put_documents(
        self,
        documents: Mapping[str, Mapping[str, Any]],
        delete: Sequence[str] = (),
        *,
        also: InTransaction | None = None,
        expected: Versions | None = None,
    ) -> None:
        with self.transaction() as cur:
            if expected:
                found = cur.execute(
                    f"SELECT thread_id, (document::json ->> 'version')::int AS version "
                    f"FROM {DOCUMENTS_TABLE} WHERE thread_id = ANY(%s)",
                    (list(expected),),
                ).fetchall()
                check_versions({row["thread_id"]: row["version"] for row in found}, expected)
            if delete:
                for sql in DELETE_THREADS_SQL:
                    cur.execute(sql, {"threads": list(delete)})
            if documents:
                cur.executemany(UPSERT_DOCUMENTS_SQL, _document_rows(documents))
            if also is not None:
                also(cur)

    def list_threads(self, prefix: str) -> list[str]:
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT thread_id FROM {DOCUMENTS_TABLE} WHERE left(thread_id, %s) = %s",
                (len(prefix), prefix),
            ).fetchall()
        return [row["thread_id"] for row in rows]

    def compact_storage(self) -> None:
        """Nothing to do: autovacuum gives deleted rows' space back."""
