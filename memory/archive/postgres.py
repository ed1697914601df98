"""The archive on PostgreSQL: a table of lines with a `tsvector` of their terms under a
GIN index, ranked by `ts_rank_cd`, on the thread store's pool (a turn's lines commit
with its memory, in the transaction of the documents' write).

The `tsvector` and `tsquery` are built from the archive's own terms
(`memory.archive.terms`), with positions for cover density: no text search
configuration stems or drops them, so both backends find the same lines, Chinese
included.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memory.archive.lines import (
    FORGOTTEN,
    ROLES,
    ArchivedLine,
    ArchiveRow,
    ArchiveWrite,
    lines_sql,
)
from memory.archive.terms import index_terms

SETUP_LOCK_KEY = -(1 << 62) - 23
"""Transaction advisory lock that serialises the archive's setup across workers."""
MAX_POSITION = 16_383
SETUP_SQL = (
    "CREATE TABLE IF NOT EXISTS archive_lines ("
    " id BIGSERIAL PRIMARY KEY,"
    " session_key TEXT NOT NULL, conversation_key TEXT NOT NULL,"
    " conversation_id TEXT NOT NULL, title TEXT NOT NULL, message_id TEXT NOT NULL,"
    " role TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, text TEXT NOT NULL, covers TEXT,"
    " terms TSVECTOR NOT NULL,"
    " UNIQUE (session_key, conversation_key, message_id))",
    "CREATE INDEX IF NOT EXISTS archive_lines_terms ON archive_lines USING GIN (terms)",
    "CREATE INDEX IF NOT EXISTS archive_lines_conversation ON archive_lines (conversation_key, id)",
    "CREATE INDEX IF NOT EXISTS archive_lines_session ON archive_lines (session_key, id)",
)
INSERT_LINE_SQL = (
    "INSERT INTO archive_lines (session_key, conversation_key, conversation_id, title,"
    " message_id, role, created_at, text, covers, terms)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector) ON CONFLICT DO NOTHING"
)
LINES_SQL = lines_sql("%s")
SEARCH_SQL = """
WITH hits AS (
  SELECT l.id, l.conversation_id, l.title, l.message_id, l.role, l.created_at, l.text,
         l.conversation_key, ts_rank_cd(l.terms, q.query, 1) AS score
  FROM archive_lines l, (SELECT %(query)s::tsquery AS query) q
  WHERE l.session_key = %(session)s AND l.role = ANY(%(roles)s) AND l.terms @@ q.query
    AND (%(conversation)s::text IS NULL OR l.conversation_key = %(conversation)s)
  ORDER BY score DESC, l.id DESC LIMIT %(limit)s
)
SELECT h.id, h.conversation_id, h.title, h.message_id, h.role, h.created_at, h.text,
       h.score, p.id AS p_id, p.message_id AS p_message_id, p.role AS p_role,
       p.created_at AS p_created_at, p.text AS p_text,
       n.id AS n_id, n.message_id AS n_message_id, n.role AS n_role,
       n.created_at AS n_created_at, n.text AS n_text,
       pu.id AS pu_id, pu.message_id AS pu_message_id, pu.role AS pu_role,
       pu.created_at AS pu_created_at, pu.text AS pu_text,
       nu.id AS nu_id, nu.message_id AS nu_message_id, nu.role AS nu_role,
       nu.created_at AS nu_created_at, nu.text AS nu_text,
       nl.id AS nl_id, nl.message_id AS nl_message_id, nl.role AS nl_role,
       nl.created_at AS nl_created_at, nl.text AS nl_text
FROM hits h LEFT JOIN LATERAL (
  SELECT q.id, q.message_id, q.role, q.created_at, q.text FROM archive_lines q
  WHERE %(neighbours)s AND q.conversation_key = h.conversation_key AND q.id < h.id
    AND q.role <> 'summary'
  ORDER BY q.id DESC LIMIT 1
) p ON true
LEFT JOIN LATERAL (
  SELECT q.id, q.message_id, q.role, q.created_at, q.text FROM archive_lines q
  WHERE %(neighbours)s AND q.conversation_key = h.conversation_key AND q.id > h.id
    AND q.role <> 'summary'
  ORDER BY q.id LIMIT 1
) n ON true
LEFT JOIN LATERAL (
  SELECT q.id, q.message_id, q.role, q.created_at, q.text FROM archive_lines q
  WHERE %(neighbours)s AND q.conversation_key = h.conversation_key AND q.id < h.id
    AND q.role = 'user'
  ORDER BY q.id DESC LIMIT 1
) pu ON true
LEFT JOIN LATERAL (
  SELECT q.id, q.message_id, q.role, q.created_at, q.text FROM archive_lines q
  WHERE %(neighbours)s AND q.conversation_key = h.conversation_key AND q.id > h.id
    AND q.role = 'user'
  ORDER BY q.id LIMIT 1
) nu ON true
LEFT JOIN LATERAL (
  SELECT q.id, q.message_id, q.role, q.created_at, q.text FROM archive_lines q
  WHERE %(neighbours)s AND q.conversation_key = h.conversation_key AND q.id > h.id
    AND q.role = 'user'
  ORDER BY q.id LIMIT 1 OFFSET 1
) nl ON true
ORDER BY h.score DESC, h.id DESC
"""


def tsvector_literal(text: str) -> str:
    """`'term':1,4 'other':2`: the line's terms with their positions."""
    positions: dict[str, list[int]] = defaultdict(list)
    for position, term in enumerate(index_terms(text)[:MAX_POSITION], start=1):
        positions[term].append(position)
    return " ".join(f"'{term}':{','.join(map(str, found))}" for term, found in positions.items())


def tsquery_literal(terms: Sequence[str]) -> str:
    """`'a' | 'b'`: any of the terms (letters and digits only, so quoting is safe)."""
    return " | ".join(f"'{term}'" for term in terms)


def _neighbour(row: dict[str, Any], prefix: str) -> ArchivedLine | None:
    if row[f"{prefix}_id"] is None:
        return None
    return ArchivedLine(
        id=row[f"{prefix}_id"],
        conversation_id=row["conversation_id"],
        title=row["title"],
        message_id=row[f"{prefix}_message_id"],
        role=row[f"{prefix}_role"],
        created_at=row[f"{prefix}_created_at"],
        text=row[f"{prefix}_text"],
    )


def _line(row: dict[str, Any]) -> ArchivedLine:
    return ArchivedLine(
        id=row["id"],
        conversation_id=row["conversation_id"],
        title=row["title"],
        message_id=row["message_id"],
        role=row["role"],
        created_at=row["created_at"],
        text=row["text"],
        score=float(row["score"]),
        previous=_neighbour(row, "p"),
        following=_neighbour(row, "n"),
        said_before=_neighbour(row, "pu"),
        said_after=_neighbour(row, "nu"),
        said_later=_neighbour(row, "nl"),
    )


class PostgresArchive:
    """The archive in the thread store's PostgreSQL database.

    Args:
        pool: the thread store's connection pool (autocommit connections, dict rows).
    """

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def setup(self) -> None:
        """Create the table and indexes (idempotent), one worker at a time."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SETUP_LOCK_KEY,))
            for sql in SETUP_SQL:
                conn.execute(sql)

    def write(self, cursor: Any, change: ArchiveWrite) -> None:
        """Delete the dropped conversations' lines and append the new ones with `cursor`,
        inside the transaction the caller commits."""
        if change.drop_conversations:
            cursor.execute(
                "DELETE FROM archive_lines WHERE conversation_key = ANY(%s)",
                (list(change.drop_conversations),),
            )
        if change.drop_session is not None:
            cursor.execute(
                "DELETE FROM archive_lines WHERE session_key = %s", (change.drop_session,)
            )
        if change.rows:
            cursor.executemany(
                INSERT_LINE_SQL,
                [
                    (
                        row.session_key,
                        row.conversation_key,
                        row.conversation_id,
                        row.title,
                        row.message_id,
                        row.role,
                        row.created_at,
                        row.text,
                        row.covers,
                        tsvector_literal(row.text),
                    )
                    for row in change.rows
                ],
            )

    def search(
        self,
        session_key: str,
        terms: Sequence[str],
        limit: int,
        *,
        neighbours: bool = False,
        roles: Sequence[str] = ROLES,
        conversation_key: str | None = None,
        cursor: Any = None,
    ) -> list[ArchivedLine]:
        """The session's lines of `roles` sharing any of `terms`, best `ts_rank_cd` first,
        each with the lines said just before and after it when `neighbours`, of the
        conversation of `conversation_key` only when given, in one query (with `cursor`,
        in the transaction that holds it: its own changes are seen)."""
        if not terms or limit <= 0 or not roles:
            return []
        params = {
            "roles": list(roles),
            "query": tsquery_literal(terms),
            "session": session_key,
            "limit": limit,
            "neighbours": neighbours,
            "conversation": conversation_key,
        }
        if cursor is not None:
            return [_line(row) for row in cursor.execute(SEARCH_SQL, params).fetchall()]
        with self.pool.connection() as conn:
            rows = conn.execute(SEARCH_SQL, params).fetchall()
        return [_line(row) for row in rows]

    def rewrite(
        self,
        cursor: Any,
        session_key: str,
        changes: Mapping[int, str],
        message_ids: Sequence[str] = (),
        text: str = FORGOTTEN,
        *,
        titles: Mapping[str, str] | None = None,
    ) -> int:
        """With `cursor`, inside the transaction the caller commits: give the session's
        lines `changes` their new texts, its lines of `message_ids` the text `text`, and
        its lines titled by a key of `titles` that title's value, index included."""
        done = 0
        for old, new in (titles or {}).items():
            cursor.execute(
                "UPDATE archive_lines SET title = %s WHERE session_key = %s AND title = %s",
                (new, session_key, old),
            )
        if message_ids:
            cursor.execute(
                "UPDATE archive_lines SET text = %s, terms = %s::tsvector "
                "WHERE session_key = %s AND message_id = ANY(%s)",
                (text, tsvector_literal(text), session_key, list(message_ids)),
            )
            done += cursor.rowcount
        for line_id, new in changes.items():
            cursor.execute(
                "UPDATE archive_lines SET text = %s, terms = %s::tsvector "
                "WHERE session_key = %s AND id = %s",
                (new, tsvector_literal(new), session_key, line_id),
            )
            done += cursor.rowcount
        return done

    def forget_session(self, session_key: str) -> int:
        """Delete every line of the session."""
        with self.pool.connection() as conn:
            done = conn.execute("DELETE FROM archive_lines WHERE session_key = %s", (session_key,))
            return int(done.rowcount)

    def sweep(self, cutoff: datetime) -> int:
        """Delete the lines of every conversation whose newest line predates `cutoff`."""
        with self.pool.connection() as conn:
            done = conn.execute(
                "DELETE FROM archive_lines WHERE conversation_key IN ("
                "SELECT conversation_key FROM archive_lines "
                "GROUP BY conversation_key HAVING MAX(created_at) < %s)",
                (cutoff,),
            )
            return int(done.rowcount)

    def count(self, session_key: str) -> int:
        """How many lines the session has."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT COUNT(*) AS n FROM archive_lines WHERE session_key = %s", (session_key,)
            ).fetchone()
        return int(row["n"])

    def lines(self, session_key: str) -> list[ArchiveRow]:
        """Every line of the session, in the order they were archived."""
        with self.pool.connection() as conn:
            rows = conn.execute(LINES_SQL, (session_key,)).fetchall()
        return [ArchiveRow(**row) for row in rows]
