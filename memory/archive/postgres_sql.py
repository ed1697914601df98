"""The PostgreSQL archive's schema and statements, and the literals of its terms (how
they are built and ranked: `memory.archive.postgres`)."""

from __future__ import annotations

from collections import defaultdict

from memory.archive.lines import COLUMNS
from memory.archive.ranking import IDF_FLOOR, K1, B
from memory.archive.terms import index_terms

SETUP_LOCK_KEY = -(1 << 62) - 23
"""Transaction advisory lock that serialises the archive's setup across workers."""
MAX_POSITION = 16_383
INDEX_VERSION = 3
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
    # a line's vector (float32, little-endian; `memory.archive.postgres_vectors`): beside
    # the line rather than in its row, so storing one rewrites no row, its GIN entries or
    # its counts
    "CREATE TABLE IF NOT EXISTS archive_vectors (id BIGINT PRIMARY KEY"
    " REFERENCES archive_lines (id) ON DELETE CASCADE, session_key TEXT NOT NULL,"
    " embedding BYTEA NOT NULL)",
    "CREATE INDEX IF NOT EXISTS archive_vectors_session ON archive_vectors (session_key)",
    "CREATE TABLE IF NOT EXISTS archive_vector_model (model TEXT NOT NULL, dims INTEGER NOT NULL)",
    # a session's vectors' version (`memory.archive.postgres_vectors`)
    "CREATE TABLE IF NOT EXISTS archive_versions (session_key TEXT PRIMARY KEY,"
    " version BIGINT NOT NULL)",
    """CREATE OR REPLACE FUNCTION archive_versioned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO archive_versions SELECT DISTINCT session_key, 1 FROM old_lines
    ON CONFLICT (session_key) DO UPDATE SET version = archive_versions.version + 1;
  ELSE
    INSERT INTO archive_versions SELECT DISTINCT session_key, 1 FROM new_lines
    ON CONFLICT (session_key) DO UPDATE SET version = archive_versions.version + 1;
  END IF;
  RETURN NULL;
END $$""",
    "CREATE OR REPLACE TRIGGER archive_vectors_removed AFTER DELETE ON archive_vectors"
    " REFERENCING OLD TABLE AS old_lines FOR EACH STATEMENT EXECUTE FUNCTION archive_versioned()",
    "CREATE OR REPLACE TRIGGER archive_vectors_added AFTER INSERT ON archive_vectors"
    " REFERENCING NEW TABLE AS new_lines FOR EACH STATEMENT EXECUTE FUNCTION archive_versioned()",
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
    f"INSERT INTO archive_lines ({', '.join(COLUMNS)}, terms, size)"
    f" VALUES ({', '.join(['%s'] * len(COLUMNS))}, %s::tsvector, %s) ON CONFLICT DO NOTHING"
)
FREQUENCIES_SQL = """
SELECT NULL AS term, COALESCE(SUM(lines), 0) AS lines FROM archive_counts
WHERE session_key = %(session)s AND role = ANY(%(roles)s)
UNION ALL
SELECT term, SUM(lines) FROM archive_terms
WHERE session_key = %(session)s AND term = ANY(%(terms)s) AND role = ANY(%(roles)s)
GROUP BY term
"""
"""The lines of `roles` (the row without a term), then how many of them hold each term."""
RANKED_SQL = f"""totals AS MATERIALIZED (
  SELECT COALESCE(SUM(lines), 0) AS lines, COALESCE(SUM(size), 0) AS size
  FROM archive_counts WHERE session_key = %(session)s
), weights AS MATERIALIZED (
  SELECT t.term, GREATEST(LN((totals.lines - t.held + 0.5) / (t.held + 0.5)), {IDF_FLOOR}) AS idf,
         totals.size::float8 / GREATEST(totals.lines, 1) AS average
  FROM unnest(%(terms)s::text[], %(held)s::float8[]) AS t(term, held), totals
), ranked AS MATERIALIZED (
  SELECT l.id, s.score, NULL::float8 AS distance
  FROM archive_lines l CROSS JOIN LATERAL (
    SELECT SUM(w.idf * ((array_length(u.positions, 1) * ({K1} + 1.0))
               / (array_length(u.positions, 1)
                  + {K1} * (1.0 - {B} + {B} * l.size / w.average)))) AS score
    FROM unnest(ts_filter(setweight(l.terms, 'A', %(terms)s::text[]), '{{a}}')) AS u
    JOIN weights w ON w.term = u.lexeme
  ) s
  WHERE l.session_key = %(session)s AND l.role = ANY(%(roles)s) AND l.terms @@ %(query)s::tsquery
    AND (%(conversation)s::text IS NULL OR l.conversation_key = %(conversation)s)
  ORDER BY s.score DESC, l.id DESC LIMIT %(limit)s
)"""
"""The lexical candidates: the session's lines holding the terms, best BM25 first (a line's
score reads only the query's terms of it, picked in C: half the time of unnesting all)."""
NEAREST_RANKED_SQL = """ranked AS MATERIALIZED (
  SELECT r.id, 0.0::float8 AS score, r.distance
  FROM unnest(%(ids)s::bigint[], %(distances)s::float8[]) AS r(id, distance)
  JOIN archive_vectors e ON e.id = r.id
)"""
"""The dense candidates, scanned in Python: those still the session's and still embedded."""


NEIGHBOURS = (
    ("p", "<", "<> 'summary'", ""),
    ("n", ">", "<> 'summary'", ""),
    ("pu", "<", "= 'user'", ""),
    ("nu", ">", "= 'user'", ""),
    ("nl", ">", "= 'user'", " OFFSET 1"),
)
"""Each neighbour a hit is read with (the line before, after, the user's before, after, and
the one after that), in `read_line`'s order: its alias, side, role and rank."""
_NEIGHBOUR_COLUMNS = ("id", "message_id", "role", "created_at", "text")


def _near(alias: str, direction: str, role: str, offset: str) -> str:
    order = "q.id DESC" if direction == "<" else "q.id"
    return f"""LEFT JOIN LATERAL (
  SELECT q.id, q.message_id, q.role, q.created_at, q.text FROM archive_lines q
  WHERE %(neighbours)s AND q.conversation_key = h.conversation_key AND q.id {direction} h.id
    AND q.role {role}
  ORDER BY {order} LIMIT 1{offset}
) {alias} ON true"""


def search_sql(ranked: str) -> str:
    """The statement of a search whose candidates `ranked` names (`id, score, distance`),
    best first, each with the lines said around it when `%(neighbours)s`, its columns in
    the order `memory.archive.lines.read_line` reads."""
    around = ", ".join(
        f"{alias}.{column} AS {alias}_{column}"
        for alias, *_ in NEIGHBOURS
        for column in _NEIGHBOUR_COLUMNS
    )
    joins = "\n".join(_near(*neighbour) for neighbour in NEIGHBOURS)
    return f"""
WITH {ranked}, hits AS (
  SELECT l.id, l.conversation_id, l.title, l.message_id, l.role, l.created_at, l.text,
         l.conversation_key, r.score, r.distance
  FROM ranked r JOIN archive_lines l ON l.id = r.id AND l.session_key = %(session)s
)
SELECT h.id, h.conversation_id, h.title, h.message_id, h.role, h.created_at, h.text,
       h.score, {around}, h.distance
FROM hits h {joins}
ORDER BY h.score DESC, h.distance, h.id DESC
"""


SEARCH_SQL = search_sql(RANKED_SQL)
NEAREST_SQL = search_sql(NEAREST_RANKED_SQL)


def indexed(text: str) -> tuple[str, int]:
    """A line's `terms` (`'term':1,4 'other':2`: its terms with their positions) and `size`
    (how many terms it has: BM25's length of a line)."""
    terms = index_terms(text)[:MAX_POSITION]
    positions: dict[str, list[int]] = defaultdict(list)
    for position, term in enumerate(terms, start=1):
        positions[term].append(position)
    found = " ".join(f"'{term}':{','.join(map(str, at))}" for term, at in positions.items())
    return found, len(terms)
