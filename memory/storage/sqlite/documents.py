"""`SqliteDocuments`: the memory documents in the checkpointer's file, on its connection."""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from memory.storage.documents import DOCUMENTS_TABLE, LEGACY_DOCUMENT_METADATA, DocumentStore
from memory.storage.sqlite.checkpointer import SqliteCheckpointer, redact_runs
from memory.storage.sqlite.checkpointer import delete_threads as delete_run_threads
from memory.storage.sqlite.connection import sqlite_transaction, truncate_wal

FTS5_TABLES_SQL = (
    "SELECT name FROM sqlite_master"
    " WHERE type = 'table' AND replace(sql, ' ', '') LIKE 'CREATEVIRTUALTABLE%USINGfts5(%'"
)
_IDS = "thread_id IN (SELECT value FROM json_each(?))"


class SqliteDocuments(DocumentStore):
    """Memory documents in the checkpointer's file, on its connection and under its lock."""

    dialect = "sqlite"
    EXISTS_SQL = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
    CREATE_SQL = (
        f"CREATE TABLE {DOCUMENTS_TABLE} "
        "(thread_id TEXT PRIMARY KEY, document TEXT NOT NULL) WITHOUT ROWID"
    )
    LEGACY_SQL = (
        "SELECT thread_id, type, checkpoint FROM checkpoints "
        "WHERE checkpoint_ns = '' AND CAST(metadata AS BLOB) = ?"
    )
    LEGACY_PARAMS = (json.dumps(LEGACY_DOCUMENT_METADATA).encode(),)
    SELECT_SQL = f"SELECT thread_id, document FROM {DOCUMENTS_TABLE} WHERE {_IDS}"
    VERSIONS_SQL = (
        f"SELECT thread_id, json_extract(document, '$.version') FROM {DOCUMENTS_TABLE} WHERE {_IDS}"
    )
    UPSERT_SQL = f"INSERT OR REPLACE INTO {DOCUMENTS_TABLE} (thread_id, document) VALUES (?, ?)"
    PREFIX_SQL = f"SELECT thread_id FROM {DOCUMENTS_TABLE} WHERE substr(thread_id, 1, ?) = ?"
    redact_runs = staticmethod(redact_runs)

    def __init__(self, checkpointer: SqliteCheckpointer) -> None:
        self.conn, self.lock = checkpointer.conn, checkpointer.lock
        self.transaction = functools.partial(sqlite_transaction, self.conn, self.lock)
        self.reading = functools.partial(checkpointer.cursor, transaction=False)

    @staticmethod
    def ids(thread_ids: Sequence[str]) -> tuple[Any, ...]:
        return (json.dumps(list(thread_ids)),)

    def delete_threads(self, cur: sqlite3.Cursor, thread_ids: Sequence[str]) -> None:
        cur.execute(f"DELETE FROM {DOCUMENTS_TABLE} WHERE {_IDS}", self.ids(thread_ids))
        delete_run_threads(cur, thread_ids)

    @staticmethod
    def legacy_document(serde: JsonPlusSerializer, type_: str, blob: bytes) -> Any:
        values = serde.loads_typed((type_, blob)).get("channel_values", {})
        return values["document"] if set(values) == {"document"} else None

    def compact_storage(self) -> None:
        """Merge every FTS5 index, VACUUM the file (outside any transaction), then
        truncate the WAL: the file then holds only what its rows hold."""
        with self.lock:
            self.conn.commit()
            # VACUUM copies an index's segments as they are, the terms of deleted rows in
            # the segments not merged since included
            for (name,) in self.conn.execute(FTS5_TABLES_SQL).fetchall():
                self.conn.execute(f'INSERT INTO "{name}" ("{name}") VALUES (\'optimize\')')
            self.conn.commit()
            self.conn.execute("VACUUM")
            truncate_wal(self.conn)
