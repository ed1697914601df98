"""The SQLite archive's tables and its FTS5 index (`SETUP_SQL`), and one search in one
statement (`search_sql`): a session's ranked lines, each with the lines said around it
in its conversation. The ranking is the caller's (FTS5's `bm25()`, sqlite-vec's
distance): every ranking gets the same neighbours the same way."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from memory.archive.lines import COLUMNS, ROLES, Frequencies
from memory.archive.ranking import common_cap
from memory.archive.terms import index_terms

SETUP_SQL = (
    "CREATE TABLE IF NOT EXISTS archive_lines ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " session_key TEXT NOT NULL, conversation_key TEXT NOT NULL,"
    " conversation_id TEXT NOT NULL, title TEXT NOT NULL, message_id TEXT NOT NULL,"
    " role TEXT NOT NULL, created_at TEXT NOT NULL, text TEXT NOT NULL, covers TEXT,"
    " indexed TEXT, UNIQUE (session_key, conversation_key, message_id))",
    # a line's neighbours of one role are one seek of this index (it also serves the
    # deletion of a conversation's lines, as the (conversation_key, id) index it replaced)
    "DROP INDEX IF EXISTS archive_lines_conversation",
    "CREATE INDEX IF NOT EXISTS archive_lines_turns ON archive_lines (conversation_key, role, id)",
    "CREATE INDEX IF NOT EXISTS archive_lines_session ON archive_lines (session_key, id)",
    # each term is indexed under its session's prefix ("<prefix>lisbon"), so a session's
    # posting lists are its own: a query reads and ranks none of another session's
    # lines, and bm25 and the commonness cut count a word among this session's lines
    # only; each role's lines have a column of their own, so that a search of some roles
    # (recall: what either side said, no summary) counts and ranks those only; the index keeps
    # no copy of its terms (contentless: they are computed again from a line's text to
    # delete them), which would take more room than the lines themselves
    "CREATE VIRTUAL TABLE IF NOT EXISTS archive_index USING fts5("
    " said, answered, summary, content = '', tokenize = 'unicode61 remove_diacritics 0')",
    "CREATE TABLE IF NOT EXISTS archive_index_layout (version INTEGER NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS archive_vocab USING fts5vocab(archive_index, 'col')",
    # how many lines of each role a session has (what the commonness cut compares a
    # term's count with), kept by triggers in the transaction of every insert and delete:
    # counting them at query time reads the session's whole posting list
    "CREATE TABLE IF NOT EXISTS archive_sessions (session_key TEXT NOT NULL,"
    " role TEXT NOT NULL, lines INTEGER NOT NULL, PRIMARY KEY (session_key, role))"
    " WITHOUT ROWID",
    "CREATE TRIGGER IF NOT EXISTS archive_lines_added AFTER INSERT ON archive_lines BEGIN"
    " INSERT INTO archive_sessions VALUES (new.session_key, new.role, 1)"
    " ON CONFLICT (session_key, role) DO UPDATE SET lines = lines + 1; END",
    "CREATE TRIGGER IF NOT EXISTS archive_lines_removed AFTER DELETE ON archive_lines BEGIN"
    " UPDATE archive_sessions SET lines = lines - 1"
    " WHERE session_key = old.session_key AND role = old.role;"
    " DELETE FROM archive_sessions"
    " WHERE session_key = old.session_key AND role = old.role AND lines <= 0; END",
)
COUNT_SESSIONS_SQL = (
    "INSERT INTO archive_sessions"
    " SELECT session_key, role, COUNT(*) FROM archive_lines GROUP BY session_key, role"
)
INDEX_COLUMNS = ("said", "answered", "summary")
"""The index's columns of terms, one per role (`ROLES`, in that order)."""
PREFIX_CHARS = 12
"""Characters of the session key that prefix its terms (its lines are still checked
against the whole key: two sessions sharing a prefix only share posting lists)."""
INSERT_LINE_SQL = (
    f"INSERT OR IGNORE INTO archive_lines ({', '.join(COLUMNS)})"
    f" VALUES ({', '.join(':' + column for column in COLUMNS)})"
)
PAGE_SQL = (
    "SELECT id, conversation_id, title, message_id, role, created_at, text FROM archive_lines"
    " WHERE session_key = ? AND id > ? ORDER BY id LIMIT ?"
)
INDEXED = "SELECT id, session_key, role, COALESCE(indexed, text) FROM archive_lines"
"""A line's `index_row` arguments (it is indexed under its `indexed` text, else its text)."""
INSERT_INDEX_SQL = "INSERT INTO archive_index (rowid, said, answered, summary) VALUES (?, ?, ?, ?)"
DELETE_INDEX_SQL = (
    "INSERT INTO archive_index (archive_index, rowid, said, answered, summary)"
    " VALUES ('delete', ?, ?, ?, ?)"
)
"""A contentless index forgets a row given the very terms it was given (`index_row`)."""
MERGE_INDEX_SQL = "INSERT INTO archive_index (archive_index) VALUES ('optimize')"
"""Merges the index into one segment. FTS5 deletes a row's terms by writing a marker in
a new segment; the terms stay in the older segments, in the file, until a merge of
those segments drops them: a deletion or rewrite runs this before it commits."""
INDEX_VERSION = 3
"""The version of the index's terms (`index_row`, `memory.archive.terms`): an index of
another version is rebuilt on open. A contentless index is told a line's terms again to
delete them, so terms computed another way would leave the old ones behind: change the
terms, bump this (tests/unit/test_archive_index.py pins the terms of a few lines)."""


def _near(direction: str, pick: str, role: str, line: str = "h.id") -> str:
    # the nearest line of `role` before or after `line` in a hit's conversation: one
    # seek of the (conversation_key, role, id) index
    return (
        f"(SELECT {pick}(q.id) FROM archive_lines q WHERE q.conversation_key ="
        f" h.conversation_key AND q.role = '{role}' AND q.id {direction} {line})"
    )


_COLUMNS = "l.id, l.conversation_id, l.title, l.message_id, l.role, l.created_at, l.text"


def search_sql(ranked: str) -> str:
    """The statement of a search ranked by `ranked`: a query of `(id, score, distance,
    mark)`, the candidate lines best first (a higher `score`, then a lower `distance`),
    whose parameters come first; then the session key (a candidate of another session
    is never read) and, twice, whether to read each hit's neighbours."""
    return f"""
WITH ranked AS ({ranked}), hits AS MATERIALIZED (
  SELECT {_COLUMNS}, l.conversation_key, r.score, r.distance, r.mark
  FROM ranked r JOIN archive_lines l ON l.id = r.id AND l.session_key = ?
), nearest AS MATERIALIZED (
  SELECT h.*, {_near("<", "MAX", "user")} AS pu, {_near("<", "MAX", "assistant")} AS pa,
         {_near(">", "MIN", "user")} AS nu, {_near(">", "MIN", "assistant")} AS na
  FROM hits h WHERE ?
  UNION ALL SELECT h.*, NULL, NULL, NULL, NULL FROM hits h WHERE NOT ?
), near AS MATERIALIZED (
  SELECT h.*, {_near(">", "MIN", "user", "h.nu")} AS nl FROM nearest h
)
SELECT h.id, h.conversation_id, h.title, h.message_id, h.role, h.created_at, h.text, h.score,
       p.id, p.message_id, p.role, p.created_at, p.text,
       n.id, n.message_id, n.role, n.created_at, n.text,
       pu.id, pu.message_id, pu.role, pu.created_at, pu.text,
       nu.id, nu.message_id, nu.role, nu.created_at, nu.text,
       nl.id, nl.message_id, nl.role, nl.created_at, nl.text,
       h.distance, h.mark
FROM near h
LEFT JOIN archive_lines p ON p.id = max(coalesce(h.pu, 0), coalesce(h.pa, 0))
LEFT JOIN archive_lines n ON n.id = min(coalesce(h.nu, h.na), coalesce(h.na, h.nu))
LEFT JOIN archive_lines pu ON pu.id = h.pu
LEFT JOIN archive_lines nu ON nu.id = h.nu
LEFT JOIN archive_lines nl ON nl.id = h.nl
ORDER BY h.score DESC, h.distance, h.id DESC
"""


def prefix(session_key: str) -> str:
    return session_key[:PREFIX_CHARS]


def columns(roles: Sequence[str]) -> list[str]:
    return [column for column, role in zip(INDEX_COLUMNS, ROLES, strict=True) if role in roles]


def match_expression(session_key: str, terms: Sequence[str], roles: Sequence[str]) -> str:
    """`{said answered} : ("<prefix>a" OR "<prefix>b")`: terms are letters and digits, and so
    is the prefix (a hash), so they quote safely."""
    wanted = " OR ".join(f'"{prefix(session_key)}{term}"' for term in terms)
    return f"{{{' '.join(columns(roles))}}} : ({wanted})"


def index_row(line_id: int, session_key: str, role: str, text: str) -> tuple[Any, ...]:
    """A line's row of the index: its id, and its terms under its session's prefix in its
    role's column."""
    head = prefix(session_key)
    terms = " ".join(head + term for term in index_terms(text))
    return line_id, *(terms if each == role else "" for each in ROLES)


def stamp(moment: datetime) -> str:
    """A UTC time as fixed-width text, so that text order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def held_counts(
    db: sqlite3.Connection, session_key: str, terms: Sequence[str], roles: Sequence[str]
) -> dict[str, int]:
    """How many of the session's lines of `roles` hold each term (its whole posting list
    is read)."""
    head = prefix(session_key)
    marks = ", ".join("?" * len(terms))
    wanted = set(columns(roles))
    counts = dict.fromkeys(terms, 0)
    for term, column, docs in db.execute(
        f"SELECT term, col, doc FROM archive_vocab WHERE term IN ({marks})",
        [head + term for term in terms],
    ).fetchall():
        if column in wanted:
            counts[term.removeprefix(head)] += docs
    return counts


def session_frequencies(
    db: sqlite3.Connection, session_key: str, terms: Sequence[str], roles: Sequence[str]
) -> Frequencies:
    """How many of the session's lines of `roles` hold each term, counted up to just past
    the commonness cut (a posting list is read only that far, however common its term);
    the caller holds the lock."""
    marks = ", ".join("?" * len(roles))
    (total,) = db.execute(
        "SELECT COALESCE(SUM(lines), 0) FROM archive_sessions"
        f" WHERE session_key = ? AND role IN ({marks})",
        (session_key, *roles),
    ).fetchone()
    if not terms:
        return Frequencies({}, int(total))
    count = (
        "(SELECT COUNT(*) FROM (SELECT 1 FROM archive_index WHERE archive_index MATCH ?"
        f" LIMIT {common_cap(total) + 1}))"
    )
    sql = " UNION ALL ".join([f"SELECT {count}"] * len(terms))
    rows = db.execute(sql, [match_expression(session_key, [term], roles) for term in terms])
    counts = {term: int(found) for term, (found,) in zip(terms, rows.fetchall(), strict=True)}
    return Frequencies(counts, int(total))


def earlier_index(cursor: sqlite3.Cursor) -> bool:
    """Whether the file holds an index of another layout than this module's."""
    found = cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'archive_index'").fetchone()
    if found is None:
        return False  # a new file: nothing to rebuild
    columns = tuple(row[1] for row in cursor.execute("PRAGMA table_info(archive_index)"))
    contentless = "content=''" in "".join(found[0].split())
    version = None
    if cursor.execute("PRAGMA table_info(archive_index_layout)").fetchall():
        version = cursor.execute("SELECT MAX(version) FROM archive_index_layout").fetchone()[0]
    return columns != INDEX_COLUMNS or not contentless or version != INDEX_VERSION
