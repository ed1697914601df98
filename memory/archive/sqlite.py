"""The archive on SQLite: a table of lines and an FTS5 index of their terms, ranked by
`bm25()`, on the checkpointer's connection (so a turn's lines commit with its memory)."""

from __future__ import annotations

import dataclasses
import functools
import logging
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memory.archive import sqlite_index as sql
from memory.archive.forgetting import Forgetting
from memory.archive.lines import (
    COLUMNS,
    EMBEDDED_ROLES,
    FORGOTTEN,
    ROLES,
    ArchivedLine,
    ArchiveRow,
    ArchiveWrite,
    Frequencies,
    lines_sql,
    read_line,
)
from memory.archive.ranking import distinctive
from memory.storage.sqlite.connection import scrub_on_commit, sqlite_transaction

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memory.archive.sqlite_vectors import SqliteVectors

SEARCH_SQL = sql.search_sql(
    "SELECT rowid AS id, -bm25(archive_index) AS score, NULL AS distance, NULL AS mark"
    " FROM archive_index WHERE archive_index MATCH ?"
    " AND (? IS NULL OR rowid IN (SELECT id FROM archive_lines WHERE conversation_key = ?))"
    " ORDER BY bm25(archive_index), rowid DESC LIMIT ?"
)


VECTORS_LEFT_BEHIND = (
    "the archive holds embeddings of its lines, and this process runs without "
    "AGENT_EMBEDDINGS_MODEL: lines it deletes or rewrites keep their vectors in the file "
    "until the agent runs with embeddings again (which deletes them)"
)


@dataclasses.dataclass(eq=False)
class SqliteArchive:
    """The archive on the checkpointer's `conn` (a file or an in-memory database) and the
    `lock` that shares it between threads, with the lines' `vectors`, which every deletion
    and rewrite of a line deletes in its own transaction."""

    conn: sqlite3.Connection
    lock: threading.Lock
    vectors: SqliteVectors | None = None

    def setup(self) -> None:
        """Create the tables (idempotent), and rebuild an index of an earlier layout
        (`earlier_index`); callers serialise processes around it."""
        with sqlite_transaction(self.conn, self.lock) as cur:
            earlier = sql.earlier_index(cur)
            uncounted = not cur.execute("PRAGMA table_info(archive_sessions)").fetchall()
            if earlier:
                cur.execute("DROP TABLE IF EXISTS archive_vocab")
                cur.execute("DROP TABLE archive_index")
            for statement in sql.SETUP_SQL:
                cur.execute(statement)
            if "indexed" not in {row[1] for row in cur.execute("PRAGMA table_info(archive_lines)")}:
                cur.execute("ALTER TABLE archive_lines ADD COLUMN indexed TEXT")
            if uncounted:  # an archive from before the counts (none: an empty table)
                cur.execute(sql.COUNT_SESSIONS_SQL)
            if earlier:
                rows = cur.execute(sql.INDEXED).fetchall()
                cur.executemany(sql.INSERT_INDEX_SQL, [sql.index_row(*row) for row in rows])
            cur.execute("DELETE FROM archive_index_layout")
            cur.execute("INSERT INTO archive_index_layout VALUES (?)", (sql.INDEX_VERSION,))
            vectors = "SELECT 1 FROM sqlite_master WHERE name = 'archive_vectors'"
            if self.vectors is None and cur.execute(vectors).fetchone() is not None:
                logger.warning(VECTORS_LEFT_BEHIND)

    def write(self, cursor: Any, change: ArchiveWrite) -> None:
        """With `cursor`, in the transaction the caller commits: delete the dropped
        conversations' lines and append the new ones."""
        for key in change.drop_conversations:
            self._drop(cursor, "conversation_key = ?", (key,))
        if change.drop_session is not None:
            self._drop(cursor, "session_key = ?", (change.drop_session,))
        for row in change.rows:
            values = {**dataclasses.asdict(row), "created_at": sql.stamp(row.created_at)}
            cursor.execute(sql.INSERT_LINE_SQL, values)
            if cursor.rowcount == 1:
                indexed = row.text if row.indexed is None else row.indexed
                index = sql.index_row(cursor.lastrowid, row.session_key, row.role, indexed)
                cursor.execute(sql.INSERT_INDEX_SQL, index)

    def frequencies(
        self, session_key: str, terms: Sequence[str], roles: Sequence[str]
    ) -> Frequencies:
        """`session_frequencies`: counted up to just past the commonness cut."""
        with self.lock:
            return sql.session_frequencies(self.conn, session_key, terms, roles)

    def search(
        self,
        session_key: str,
        terms: Sequence[str],
        limit: int,
        *,
        neighbours: bool = False,
        roles: Sequence[str] = ROLES,
        conversation_key: str | None = None,
        frequencies: Frequencies | None = None,
    ) -> list[ArchivedLine]:
        """The session's lines of `roles` sharing any of `terms`, best `bm25()` first, in one
        query: with `neighbours`, each with the lines said around it; of `conversation_key`'s
        conversation only when given (`frequencies`: the terms' among those lines, when the
        caller has them)."""
        if not terms or limit <= 0 or not roles:
            return []
        with self.lock:
            counted = frequencies or sql.session_frequencies(self.conn, session_key, terms, roles)
            exact = functools.partial(sql.held_counts, self.conn, session_key, roles=roles)
            terms = distinctive(terms, counted.lines_with, counted.total, exact)
            expression = sql.match_expression(session_key, terms, roles)
            conversation = (conversation_key, conversation_key)
            rows = self.conn.execute(
                SEARCH_SQL, (expression, *conversation, limit, session_key, neighbours, neighbours)
            ).fetchall()
        return [read_line(row) for row in rows]

    def page(
        self, cursor: sqlite3.Cursor, session_key: str, after: int, limit: int
    ) -> list[ArchivedLine]:
        rows = cursor.execute(sql.PAGE_SQL, (session_key, after, limit)).fetchall()
        return [
            ArchivedLine(line_id, cid, title, mid, role, datetime.fromisoformat(at), text)
            for line_id, cid, title, mid, role, at, text in rows
        ]

    def rewrite(self, cursor: sqlite3.Cursor, session_key: str, plan: Forgetting) -> None:
        """With `cursor`, in the transaction the caller commits: give the session's lines
        the plan's `changes`, its lines of the plan's `answers` `[forgotten]`, and its lines
        titled by a key of its `titles` that title's value, index included, vectors deleted."""
        if not plan.changes and not plan.answers and not plan.titles:
            return
        for old, new in plan.titles.items():
            cursor.execute(
                "UPDATE archive_lines SET title = ? WHERE session_key = ? AND title = ?",
                (new, session_key, old),
            )
        marks = ", ".join("?" * len(plan.answers)) or "NULL"
        found = cursor.execute(
            f"SELECT id FROM archive_lines WHERE session_key = ? AND message_id IN ({marks})",
            (session_key, *plan.answers),
        ).fetchall()
        wanted = {**plan.changes, **{row[0]: FORGOTTEN for row in found}}
        ids = ", ".join("?" * len(wanted)) or "NULL"
        owned = cursor.execute(
            f"{sql.INDEXED} WHERE session_key = ? AND id IN ({ids})", (session_key, *wanted)
        ).fetchall()
        for line_id, _, role, old in owned:
            new = wanted[line_id]
            cursor.execute(sql.DELETE_INDEX_SQL, sql.index_row(line_id, session_key, role, old))
            cursor.execute(
                "UPDATE archive_lines SET text = ?, indexed = NULL WHERE id = ?", (new, line_id)
            )
            cursor.execute(sql.INSERT_INDEX_SQL, sql.index_row(line_id, session_key, role, new))
        if self.vectors is not None:  # an embedding of the old text would find it again
            self.vectors.forget(cursor, [line_id for line_id, *_ in owned])
        if owned or plan.titles:  # the old texts are in the WAL, the old terms in the index
            scrub_on_commit(cursor, *([sql.MERGE_INDEX_SQL] if owned else []))

    def _drop(self, cursor: sqlite3.Cursor, where: str, params: tuple[Any, ...]) -> int:
        """With `cursor`: delete the lines `where` selects, their terms and embeddings."""
        rows = cursor.execute(f"{sql.INDEXED} WHERE {where}", params).fetchall()
        cursor.executemany(sql.DELETE_INDEX_SQL, [sql.index_row(*row) for row in rows])
        if self.vectors is not None:
            embedded = [line_id for line_id, _, role, _ in rows if role in EMBEDDED_ROLES]
            self.vectors.forget(cursor, embedded)
        if rows:
            scrub_on_commit(cursor, sql.MERGE_INDEX_SQL)
        return int(cursor.execute(f"DELETE FROM archive_lines WHERE {where}", params).rowcount)

    def sweep(self, cutoff: datetime) -> int:
        """Delete the lines of every conversation whose newest line predates `cutoff`."""
        with sqlite_transaction(self.conn, self.lock) as cur:
            return self._drop(
                cur,
                "conversation_key IN (SELECT conversation_key FROM archive_lines "
                "GROUP BY conversation_key HAVING MAX(created_at) < ?)",
                (sql.stamp(cutoff),),
            )

    def lines(self, session_key: str) -> list[ArchiveRow]:
        """Every line of the session, in the order they were archived (which breaks a
        search's ties)."""
        with self.lock:
            found = self.conn.execute(lines_sql("?"), (session_key,)).fetchall()
        rows = [dict(zip(COLUMNS, row, strict=True)) for row in found]
        return [
            ArchiveRow(**{**row, "created_at": datetime.fromisoformat(row["created_at"])})
            for row in rows
        ]
