"""The archive on PostgreSQL: a table of lines with a `tsvector` of their terms under a
GIN index, on the thread store's pool (a turn's lines commit with its memory, in the
transaction of the documents' write).

The `tsvector` and `tsquery` are built from the archive's own terms
(`memory.archive.terms`), with their positions: no text search configuration stems or
drops them. Lines are ranked as SQLite's FTS5 ranks them (`memory.archive.ranking`),
from counts triggers keep per session and role (`archive_counts`, `archive_terms`): so
both backends find and order the same lines, Chinese included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memory.archive import postgres_sql as sql
from memory.archive.forgetting import Forgetting
from memory.archive.lines import (
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


@dataclasses.dataclass(eq=False)
class PostgresArchive:
    """The archive in the thread store's PostgreSQL database (its `pool`: autocommit
    connections, dict rows)."""

    pool: Any

    def setup(self) -> None:
        """Create the tables, indexes and trigger (idempotent), one worker at a time; lines
        indexed by another `INDEX_VERSION` are indexed again, and counted anew."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (sql.SETUP_LOCK_KEY,))
            for statement in sql.SETUP_SQL:
                conn.execute(statement)
            found = conn.execute("SELECT MAX(version) AS v FROM archive_layout").fetchone()
            if found["v"] == sql.INDEX_VERSION:
                return
            rows = conn.execute(
                "SELECT id, COALESCE(indexed, text) AS text FROM archive_lines"
            ).fetchall()
            with conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE archive_lines SET terms = %s::tsvector, size = %s WHERE id = %s",
                    [(*sql.indexed(row["text"]), row["id"]) for row in rows],
                )
            for statement in sql.RECOUNT_SQL:
                conn.execute(statement)
            conn.execute("DELETE FROM archive_layout")
            conn.execute("INSERT INTO archive_layout VALUES (%s)", (sql.INDEX_VERSION,))

    def write(self, cursor: Any, change: ArchiveWrite) -> None:
        """As `SqliteArchive.write`."""
        if change.drop_conversations:
            cursor.execute(
                "DELETE FROM archive_lines WHERE conversation_key = ANY(%s)",
                (list(change.drop_conversations),),
            )
        if change.drop_session is not None:
            cursor.execute(
                "DELETE FROM archive_lines WHERE session_key = %s", (change.drop_session,)
            )
        values = [
            (
                *dataclasses.astuple(row),
                *sql.indexed(row.text if row.indexed is None else row.indexed),
            )
            for row in change.rows
        ]
        if values:
            cursor.executemany(sql.INSERT_LINE_SQL, values)

    def frequencies(
        self, session_key: str, terms: Sequence[str], roles: Sequence[str]
    ) -> Frequencies:
        """As `SqliteArchive.frequencies`, but exact counts (`archive_terms`: one indexed
        read per term), in one query."""
        params = {"session": session_key, "roles": list(roles), "terms": list(dict.fromkeys(terms))}
        with self.pool.connection() as conn:
            rows = conn.execute(sql.FREQUENCIES_SQL, params).fetchall()
        total = next(int(row["lines"]) for row in rows if row["term"] is None)
        held = {row["term"]: int(row["lines"]) for row in rows if row["term"] is not None}
        return Frequencies({term: held.get(term, 0) for term in terms}, total)

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
        """As `SqliteArchive.search`, ranked by BM25 as SQLite ranks them."""
        if not terms or limit <= 0 or not roles:
            return []
        counted = frequencies or self.frequencies(session_key, terms, roles)
        counts = counted.lines_with  # exact: no term needs counting again
        kept = distinctive(terms, counts, counted.total, lambda common: counts)
        params = {
            "terms": kept,
            "held": [counts.get(term, 0) for term in kept],
            "roles": list(roles),
            "query": " | ".join(f"'{term}'" for term in kept),  # (letters, digits: safe)
            "session": session_key,
            "limit": limit,
            "neighbours": neighbours,
            "conversation": conversation_key,
        }
        with self.pool.connection() as conn:
            return [read_line(tuple(row.values())) for row in conn.execute(sql.SEARCH_SQL, params)]

    def page(self, cursor: Any, session_key: str, after: int, limit: int) -> list[ArchivedLine]:
        rows = cursor.execute(
            "SELECT id, conversation_id, title, message_id, role, created_at, text"
            " FROM archive_lines WHERE session_key = %s AND id > %s ORDER BY id LIMIT %s",
            (session_key, after, limit),
        ).fetchall()
        return [ArchivedLine(**row) for row in rows]

    def rewrite(self, cursor: Any, session_key: str, plan: Forgetting) -> None:
        """As `SqliteArchive.rewrite`: a rewritten line loses its vector (the old text's
        would find it again)."""
        for old, new in plan.titles.items():
            cursor.execute(
                "UPDATE archive_lines SET title = %s WHERE session_key = %s AND title = %s",
                (new, session_key, old),
            )
        wanted = dict(plan.changes)
        if plan.answers:
            found = cursor.execute(
                "SELECT id FROM archive_lines WHERE session_key = %s AND message_id = ANY(%s)",
                (session_key, list(plan.answers)),
            ).fetchall()
            # (a line forgotten whole by its message id stays so, whatever else changed)
            wanted.update((row["id"], FORGOTTEN) for row in found)
        cursor.execute("DELETE FROM archive_vectors WHERE id = ANY(%s)", (list(wanted),))
        for line_id, new in wanted.items():
            cursor.execute(
                "UPDATE archive_lines SET text = %s, indexed = NULL, terms = %s::tsvector,"
                " size = %s WHERE session_key = %s AND id = %s",
                (new, *sql.indexed(new), session_key, line_id),
            )

    def sweep(self, cutoff: datetime) -> int:
        with self.pool.connection() as conn:
            done = conn.execute(
                "DELETE FROM archive_lines WHERE conversation_key IN ("
                "SELECT conversation_key FROM archive_lines "
                "GROUP BY conversation_key HAVING MAX(created_at) < %s)",
                (cutoff,),
            )
            return int(done.rowcount)

    def lines(self, session_key: str) -> list[ArchiveRow]:
        with self.pool.connection() as conn:
            rows = conn.execute(lines_sql("%s"), (session_key,)).fetchall()
        return [ArchiveRow(**row) for row in rows]
