"""`PostgresDocuments`: the memory documents in the checkpointer's database, on its pool."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from psycopg import Connection, Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from memory.storage.documents import DOCUMENTS_TABLE, LEGACY_DOCUMENT_METADATA, DocumentStore
from memory.storage.postgres.checkpointer import redact_runs

DELETE_THREADS_SQL = tuple(
    f"DELETE FROM {table} WHERE thread_id = ANY(%s)"
    for table in ("checkpoint_writes", "checkpoint_blobs", "checkpoints", DOCUMENTS_TABLE)
)


class PostgresDocuments(DocumentStore):
    """Memory documents in the checkpointer's database, over its pool: each write is one
    transaction on its own pooled connection."""

    dialect = "postgresql"
    EXISTS_SQL = "SELECT 1 WHERE to_regclass(%s) IS NOT NULL"
    CREATE_SQL = (
        f"CREATE TABLE {DOCUMENTS_TABLE} (thread_id TEXT PRIMARY KEY, document TEXT NOT NULL)"
    )
    LEGACY_SQL = """
SELECT c.thread_id, b.type, b.blob
FROM checkpoints c
JOIN checkpoint_blobs b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns AND b.channel = 'document'
 AND b.version = c.checkpoint -> 'channel_versions' ->> 'document'
WHERE c.checkpoint_ns = '' AND c.metadata = %s
"""
    LEGACY_PARAMS = (Jsonb(LEGACY_DOCUMENT_METADATA),)
    SELECT_SQL = f"SELECT thread_id, document FROM {DOCUMENTS_TABLE} WHERE thread_id = ANY(%s)"
    VERSIONS_SQL = (
        f"SELECT thread_id, (document::json ->> 'version')::int AS version "
        f"FROM {DOCUMENTS_TABLE} WHERE thread_id = ANY(%s)"
    )
    UPSERT_SQL = (
        f"INSERT INTO {DOCUMENTS_TABLE} (thread_id, document) VALUES (%s, %s) "
        "ON CONFLICT (thread_id) DO UPDATE SET document = EXCLUDED.document"
    )
    PREFIX_SQL = f"SELECT thread_id FROM {DOCUMENTS_TABLE} WHERE left(thread_id, %s) = %s"
    redact_runs = staticmethod(redact_runs)

    def __init__(self, pool: ConnectionPool[Connection[DictRow]]) -> None:
        self.pool = pool
        self.reading = pool.connection

    @contextmanager
    def transaction(self) -> Iterator[Cursor[DictRow]]:
        with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    @staticmethod
    def ids(thread_ids: Sequence[str]) -> tuple[Any, ...]:
        return (list(thread_ids),)

    def delete_threads(self, cur: Cursor[DictRow], thread_ids: Sequence[str]) -> None:
        for sql in DELETE_THREADS_SQL:
            cur.execute(sql, self.ids(thread_ids))

    @staticmethod
    def legacy_document(serde: JsonPlusSerializer, type_: str, blob: bytes) -> Any:
        return serde.loads_typed((type_, blob))
