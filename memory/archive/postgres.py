"""The archive on PostgreSQL: a table of lines with a `tsvector` of their terms under a
GIN index, on the thread store's pool (a turn's lines commit with its memory, in the
transaction of the documents' write).

The `tsvector` and `tsquery` are built from the archive's own terms
(`memory.archive.terms`), with their positions: no text search configuration stems or
drops them. Lines are ranked as SQLite's FTS5 ranks them (`memory.archive.ranking`):
BM25 over the session's lines, each query term weighed by how many of them hold it,
each line's length (`size`, in terms) against the session's average, both kept per
session and role by a trigger (`archive_counts`). So both backends find and order the
same lines, Chinese included.
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
    Frequencies,
    lines_sql,
)
from memory.archive.ranking import IDF_FLOOR, K1, B, distinctive
from memory.archive.terms import index_terms

SETUP_LOCK_KEY = -(1 << 62) - 23
"""Transaction advisory lock that serialises the archive's setup across workers."""
MAX_POSITION = 16_383
INDEX_VERSION = 2
"""The version of the lines' `terms` and `size` (`memory.archive.terms`): lines of another
version are indexed again on setup (as SQLite's index is rebuilt)."""
SETUP_SQL = (
    "CREATE TABLE IF NOT EXISTS archive_lines ("
    " id BIGSERIAL PRIMARY KEY,"
    " session_key TEXT NOT NULL, conversation_key TEXT NOT NULL,"
    " conversation_id TEXT NOT NULL, title TEXT NOT NULL, message_id TEXT NOT NULL,"
    " role TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL, text TEXT NOT NULL, covers TEXT,"
    " terms TSVECTOR NOT NULL,"
    " UNIQUE (session_key, conversation_key, message_id))",
    "ALTER TABLE archive_lines ADD COLUMN IF NOT EXISTS size INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE archive_lines ADD COLUMN IF NOT EXISTS indexed TEXT",
    # without a pending list: a search reads the index, never a list of recent entries
    # that only a vacuum merges (with it, a fresh archive's searches scanned the table)
    "CREATE INDEX IF NOT EXISTS archive_lines_terms ON archive_lines USING GIN (terms)"
    " WITH (fastupdate = off)",
    "ALTER INDEX archive_lines_terms SET (fastupdate = off)",
    "CREATE INDEX IF NOT EXISTS archive_lines_conversation ON archive_lines (conversation_key, id)",
    "CREATE INDEX IF NOT EXISTS archive_lines_session ON archive_lines (session_key, id)",
    "CREATE TABLE IF NOT EXISTS archive_layout (version INTEGER NOT NULL)",
    # how many lines of each role a session has and how many terms they hold (BM25's N
    # and average length), and how many hold each term (its document frequency, as
    # FTS5's vocabulary has it): kept by triggers in the transaction of every write
    "CREATE TABLE IF NOT EXISTS archive_counts (session_key TEXT NOT NULL, role TEXT NOT NULL,"
    " lines BIGINT NOT NULL, size BIGINT NOT NULL, PRIMARY KEY (session_key, role))",
    "CREATE TABLE IF NOT EXISTS archive_terms (session_key TEXT NOT NULL, term TEXT NOT NULL,"
    " role TEXT NOT NULL, lines BIGINT NOT NULL, PRIMARY KEY (session_key, term, role))",
    "DROP TRIGGER IF EXISTS archive_lines_counted ON archive_lines",
    """CREATE OR REPLACE FUNCTION archive_counted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' THEN
    UPDATE archive_counts c SET lines = c.lines - g.lines, size = c.size - g.size
    FROM (SELECT session_key, role, COUNT(*) AS lines, SUM(size) AS size FROM old_lines
          GROUP BY session_key, role) g
    WHERE c.session_key = g.session_key AND c.role = g.role;
    UPDATE archive_terms t SET lines = t.lines - g.lines
    FROM (SELECT session_key, term, role, COUNT(*) AS lines
          FROM old_lines, unnest(tsvector_to_array(terms)) AS term
          GROUP BY session_key, term, role) g
    WHERE t.session_key = g.session_key AND t.term = g.term AND t.role = g.role;
    DELETE FROM archive_counts
    WHERE session_key IN (SELECT session_key FROM old_lines) AND lines <= 0;
    DELETE FROM archive_terms
    WHERE session_key IN (SELECT session_key FROM old_lines) AND lines <= 0;
  END IF;
  IF TG_OP <> 'DELETE' THEN
    INSERT INTO archive_counts
    SELECT session_key, role, COUNT(*), SUM(size) FROM new_lines GROUP BY session_key, role
    ON CONFLICT (session_key, role) DO UPDATE
    SET lines = archive_counts.lines + EXCLUDED.lines, size = archive_counts.size + EXCLUDED.size;
    INSERT INTO archive_terms
    SELECT session_key, term, role, COUNT(*)
    FROM new_lines, unnest(tsvector_to_array(terms)) AS term GROUP BY session_key, term, role
    ON CONFLICT (session_key, term, role) DO UPDATE
    SET lines = archive_terms.lines + EXCLUDED.lines;
  END IF;
  RETURN NULL;
END $$""",
    "CREATE OR REPLACE TRIGGER archive_lines_added AFTER INSERT ON archive_lines"
    " REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION archive_counted()",
    "CREATE OR REPLACE TRIGGER archive_lines_removed AFTER DELETE ON archive_lines"
    " REFERENCING OLD TABLE AS old_lines FOR EACH STATEMENT EXECUTE FUNCTION archive_counted()",
    "CREATE OR REPLACE TRIGGER archive_lines_rewritten AFTER UPDATE ON archive_lines"
    " REFERENCING OLD TABLE AS old_lines NEW TABLE AS new_lines"
    " FOR EACH STATEMENT EXECUTE FUNCTION archive_counted()",
    "DROP FUNCTION IF EXISTS archive_count()",
)
RECOUNT_SQL = (
    "DELETE FROM archive_counts",
    "DELETE FROM archive_terms",
    "INSERT INTO archive_counts SELECT session_key, role, COUNT(*), SUM(size) FROM archive_lines"
    " GROUP BY session_key, role",
    "INSERT INTO archive_terms SELECT session_key, term, role, COUNT(*)"
    " FROM archive_lines, unnest(tsvector_to_array(terms)) AS term"
    " GROUP BY session_key, term, role",
)
INSERT_LINE_SQL = (
    "INSERT INTO archive_lines (session_key, conversation_key, conversation_id, title,"
    " message_id, role, created_at, text, covers, indexed, terms, size)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s::tsvector, %s) ON CONFLICT DO NOTHING"
)
LINES_SQL = lines_sql("%s")
FREQUENCIES_SQL = """
SELECT NULL AS term, COALESCE(SUM(lines), 0) AS lines FROM archive_counts
WHERE session_key = %(session)s AND role = ANY(%(roles)s)
UNION ALL
SELECT term, SUM(lines) FROM archive_terms
WHERE session_key = %(session)s AND term = ANY(%(terms)s) AND role = ANY(%(roles)s)
GROUP BY term
"""
"""The lines of `roles` (the row without a term), then how many of them hold each term."""
SEARCH_SQL = f"""
WITH totals AS MATERIALIZED (
  SELECT COALESCE(SUM(lines), 0) AS lines, COALESCE(SUM(size), 0) AS size
  FROM archive_counts WHERE session_key = %(session)s
), weights AS MATERIALIZED (
  SELECT t.term, GREATEST(LN((totals.lines - t.held + 0.5) / (t.held + 0.5)), {IDF_FLOOR}) AS idf,
         totals.size::float8 / GREATEST(totals.lines, 1) AS average
  FROM unnest(%(terms)s::text[], %(held)s::float8[]) AS t(term, held), totals
), ranked AS MATERIALIZED (
  SELECT l.id, s.score
  FROM archive_lines l CROSS JOIN LATERAL (
    SELECT SUM(w.idf * ((array_length(u.positions, 1) * ({K1} + 1.0))
               / (array_length(u.positions, 1)
                  + {K1} * (1.0 - {B} + {B} * l.size / w.average)))) AS score
    FROM unnest(l.terms) AS u JOIN weights w ON w.term = u.lexeme
  ) s
  WHERE l.session_key = %(session)s AND l.role = ANY(%(roles)s) AND l.terms @@ %(query)s::tsquery
    AND (%(conversation)s::text IS NULL OR l.conversation_key = %(conversation)s)
  ORDER BY s.score DESC, l.id DESC LIMIT %(limit)s
), hits AS (
  SELECT l.id, l.conversation_id, l.title, l.message_id, l.role, l.created_at, l.text,
         l.conversation_key, r.score
  FROM ranked r JOIN archive_lines l ON l.id = r.id
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


def _indexed(text: str) -> tuple[str, int]:
    """A line's `terms` and `size` (how many terms it has: BM25's length of a line)."""
    return tsvector_literal(text), min(len(index_terms(text)), MAX_POSITION)


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
        """Create the tables, indexes and trigger (idempotent), one worker at a time; lines
        indexed by another `INDEX_VERSION` are indexed again, and counted anew."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SETUP_LOCK_KEY,))
            for sql in SETUP_SQL:
                conn.execute(sql)
            found = conn.execute("SELECT MAX(version) AS v FROM archive_layout").fetchone()
            if found["v"] == INDEX_VERSION:
                return
            rows = conn.execute(
                "SELECT id, COALESCE(indexed, text) AS text FROM archive_lines"
            ).fetchall()
            with conn.cursor() as cursor:
                cursor.executemany(
                    "UPDATE archive_lines SET terms = %s::tsvector, size = %s WHERE id = %s",
                    [(*_indexed(row["text"]), row["id"]) for row in rows],
                )
            for sql in RECOUNT_SQL:
                conn.execute(sql)
            conn.execute("DELETE FROM archive_layout")
            conn.execute("INSERT INTO archive_layout VALUES (%s)", (INDEX_VERSION,))

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
                        row.indexed,
                        *_indexed(row.text if row.indexed is None else row.indexed),
                    )
                    for row in change.rows
                ],
            )

    def frequencies(
        self, session_key: str, terms: Sequence[str], roles: Sequence[str] = ROLES
    ) -> Frequencies:
        """How many of the session's lines of `roles` hold each of `terms`, counted up to
        just past the commonness cut (`memory.archive.ranking`), in one query."""
        with self.pool.connection() as conn:
            return self._frequencies(conn, session_key, terms, roles)

    @staticmethod
    def _frequencies(
        db: Any, session_key: str, terms: Sequence[str], roles: Sequence[str]
    ) -> Frequencies:
        """Exact counts (`archive_terms`): one indexed read per term."""
        params = {"session": session_key, "roles": list(roles), "terms": list(dict.fromkeys(terms))}
        rows = db.execute(FREQUENCIES_SQL, params).fetchall()
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
        cursor: Any = None,
        frequencies: Frequencies | None = None,
    ) -> list[ArchivedLine]:
        """The session's lines of `roles` sharing any of `terms`, best BM25 first (as
        SQLite ranks them), each with the lines said just before and after it when
        `neighbours`, of the conversation of `conversation_key` only when given (with
        `cursor`, in the transaction that holds it: its own changes are seen;
        `frequencies`: the terms' among those lines, when the caller has them)."""
        if not terms or limit <= 0 or not roles:
            return []
        if cursor is not None:
            return self._search(
                cursor, session_key, terms, limit, neighbours, roles, conversation_key, frequencies
            )
        with self.pool.connection() as conn:
            return self._search(
                conn, session_key, terms, limit, neighbours, roles, conversation_key, frequencies
            )

    def _search(
        self,
        db: Any,
        session_key: str,
        terms: Sequence[str],
        limit: int,
        neighbours: bool,
        roles: Sequence[str],
        conversation_key: str | None,
        frequencies: Frequencies | None,
    ) -> list[ArchivedLine]:
        counted = frequencies or self._frequencies(db, session_key, terms, roles)
        counts = counted.lines_with  # exact: no term needs counting again
        kept = distinctive(terms, counts, counted.total, lambda common: counts)
        params = {
            "terms": kept,
            "held": [counts.get(term, 0) for term in kept],
            "roles": list(roles),
            "query": tsquery_literal(kept),
            "session": session_key,
            "limit": limit,
            "neighbours": neighbours,
            "conversation": conversation_key,
        }
        return [_line(row) for row in db.execute(SEARCH_SQL, params).fetchall()]

    def page(self, cursor: Any, session_key: str, after: int, limit: int) -> list[ArchivedLine]:
        """With `cursor`: the session's next `limit` lines after id `after`, by id."""
        rows = cursor.execute(
            "SELECT id, conversation_id, title, message_id, role, created_at, text"
            " FROM archive_lines WHERE session_key = %s AND id > %s ORDER BY id LIMIT %s",
            (session_key, after, limit),
        ).fetchall()
        return [ArchivedLine(**row) for row in rows]

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
        for line_id, new in changes.items():
            cursor.execute(
                "UPDATE archive_lines SET text = %s, indexed = NULL, terms = %s::tsvector,"
                " size = %s WHERE session_key = %s AND id = %s",
                (new, *_indexed(new), session_key, line_id),
            )
            done += cursor.rowcount
        # (last: a line forgotten whole by its message id stays so, whatever else changed)
        if message_ids:
            cursor.execute(
                "UPDATE archive_lines SET text = %s, indexed = NULL, terms = %s::tsvector,"
                " size = %s WHERE session_key = %s AND message_id = ANY(%s)",
                (text, *_indexed(text), session_key, list(message_ids)),
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
