"""`SqliteDocuments`: the memory documents in the checkpointer's file, on its connection."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from memory.storage.documents import (
    DOCUMENTS_TABLE,
    Dialect,
    InTransaction,
    Versions,
    check_versions,
)
from memory.storage.sqlite.checkpointer import delete_threads
from memory.storage.sqlite.connection import sqlite_transaction, truncate_wal

FTS5_TABLES_SQL = (
    "SELECT name FROM sqlite_master"
    " WHERE type = 'table' AND replace(sql, ' ', '') LIKE 'CREATEVIRTUALTABLE%USINGfts5(%'"
)
LEGACY_DOCUMENT_METADATA = json.dumps({"source": "update", "step": 0, "parents": {}}).encode()
"""The metadata of a memory document stored as a single-checkpoint thread (the
layout before documents had their own table)."""


class SqliteDocuments:
    """Memory documents (`memory.storage.documents.DocumentStore`) in the checkpointer's file,
    on its connection and under its lock: one JSON text per thread id."""

    dialect: Dialect = "sqlite"

    def __init__(self, conn: sqlite3.Connection, lock: threading.Lock) -> None:
        self.conn = conn
        self.lock = lock

    def transaction(self) -> Any:
        """One write transaction on the shared connection, as a cursor."""
        return sqlite_transaction(self.conn, self.lock)

    def setup(self) -> None:
        """Create the documents table; on a file from before it existed, move the
        documents stored as single-checkpoint threads into it."""
        with self.transaction() as cur:
            found = cur.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                (DOCUMENTS_TABLE,),
            ).fetchone()
            if found:
                return
            cur.execute(
                f"CREATE TABLE {DOCUMENTS_TABLE} "
                "(thread_id TEXT PRIMARY KEY, document TEXT NOT NULL) WITHOUT ROWID"
            )
            self._adopt_legacy(cur)

    def _adopt_legacy(self, cur: sqlite3.Cursor) -> None:
        serde = JsonPlusSerializer()
        rows = cur.execute(
            "SELECT thread_id, type, checkpoint FROM checkpoints "
            "WHERE checkpoint_ns = '' AND CAST(metadata AS BLOB) = ?",
            (LEGACY_DOCUMENT_METADATA,),
        ).fetchall()
        documents: dict[str, Any] = {}
        for thread_id, type_, blob in rows:
            values = serde.loads_typed((type_, blob)).get("channel_values", {})
            if set(values) == {"document"} and isinstance(values["document"], dict):
                documents[thread_id] = values["document"]
        delete_threads(cur, list(documents))
        self._insert(cur, documents)

    @staticmethod
    def _insert(cur: sqlite3.Cursor, documents: Mapping[str, Mapping[str, Any]]) -> None:
        cur.executemany(
            f"INSERT OR REPLACE INTO {DOCUMENTS_TABLE} (thread_id, document) VALUES (?, ?)",
            [
                (thread_id, json.dumps(dict(document), ensure_ascii=False))
                for thread_id, document in documents.items()
            ],
        )

    def get_documents(self, thread_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not thread_ids:
            return {}
        marks = ", ".join("?" * len(thread_ids))
        with self.lock, closing(self.conn.cursor()) as cur:
            rows = cur.execute(
                f"SELECT thread_id, document FROM {DOCUMENTS_TABLE} WHERE thread_id IN ({marks})",
                tuple(thread_ids),
            ).fetchall()
        return {thread_id: json.loads(document) for thread_id, document in rows}

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
                marks = ", ".join("?" * len(expected))
                found = cur.execute(
                    f"SELECT thread_id, json_extract(document, '$.version') "
                    f"FROM {DOCUMENTS_TABLE} WHERE thread_id IN ({marks})",
                    tuple(expected),
                ).fetchall()
                check_versions(dict(found), expected)
            if delete:
                cur.executemany(
                    f"DELETE FROM {DOCUMENTS_TABLE} WHERE thread_id = ?",
                    [(thread_id,) for thread_id in delete],
                )
                delete_threads(cur, delete)
            self._insert(cur, documents)
            if also is not None:
                also(cur)

    def list_threads(self, prefix: str) -> list[str]:
        with self.lock, closing(self.conn.cursor()) as cur:
            rows = cur.execute(
                f"SELECT thread_id FROM {DOCUMENTS_TABLE} WHERE substr(thread_id, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        return [row[0] for row in rows]

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
