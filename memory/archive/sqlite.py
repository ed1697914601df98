"""The archive on SQLite: a table of lines and an FTS5 index of their terms, ranked by
`bm25()`, on the checkpointer's connection (so a turn's lines commit with its memory)."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memory.archive.lines import (
    EMBEDDED_ROLES,
    FORGOTTEN,
    ROLES,
    ArchivedLine,
    ArchiveRow,
    ArchiveWrite,
    Frequencies,
    lines_sql,
)
from memory.archive.ranking import common_cap, distinctive
from memory.archive.sqlite_search import read_line, search_sql
from memory.archive.terms import index_terms
from memory.storage.sqlite.connection import scrub_on_commit, sqlite_transaction

logger = logging.getLogger(__name__)

if TYPE_CHECKING:
    from memory.archive.sqlite_vectors import SqliteVectors

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
    "INSERT OR IGNORE INTO archive_lines (session_key, conversation_key, conversation_id,"
    " title, message_id, role, created_at, text, covers, indexed)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
LINES_SQL = lines_sql("?")
PAGE_SQL = (
    "SELECT id, conversation_id, title, message_id, role, created_at, text FROM archive_lines"
    " WHERE session_key = ? AND id > ? ORDER BY id LIMIT ?"
)
INDEXED = "SELECT id, session_key, role, COALESCE(indexed, text) FROM archive_lines"
"""A line's `index_row` arguments (what it is indexed under: its `indexed` text, else its
text)."""
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
INDEX_VERSION = 2
"""The version of the index's terms (`index_row`, `memory.archive.terms`): an index of
another version is rebuilt on open. A contentless index is told a line's terms again to
delete them, so terms computed another way would leave the old ones behind: change the
terms, bump this (tests/unit/test_archive.py pins the terms of a few lines)."""


SEARCH_SQL = search_sql(
    "SELECT rowid AS id, -bm25(archive_index) AS score, NULL AS distance, NULL AS mark"
    " FROM archive_index WHERE archive_index MATCH ?"
    " AND (? IS NULL OR rowid IN (SELECT id FROM archive_lines WHERE conversation_key = ?))"
    " ORDER BY bm25(archive_index), rowid DESC LIMIT ?"
)


def prefix(session_key: str) -> str:
    """The session's prefix of its terms."""
    return session_key[:PREFIX_CHARS]


def columns(roles: Sequence[str]) -> list[str]:
    """The index columns that hold the terms of lines of `roles`."""
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


def _counts_up_to(
    db: sqlite3.Connection | sqlite3.Cursor,
    session_key: str,
    terms: Sequence[str],
    roles: Sequence[str],
    bound: int,
) -> dict[str, int]:
    """How many of the session's lines of `roles` hold each term, counted up to `bound`:
    a posting list is read only that far, however common its term."""
    count = (
        "(SELECT COUNT(*) FROM (SELECT 1 FROM archive_index WHERE archive_index MATCH ?"
        f" LIMIT {int(bound)}))"
    )
    sql = " UNION ALL ".join([f"SELECT {count}"] * len(terms))
    rows = db.execute(sql, [match_expression(session_key, [term], roles) for term in terms])
    return {term: int(found) for term, (found,) in zip(terms, rows.fetchall(), strict=True)}


def _counts(
    db: sqlite3.Connection | sqlite3.Cursor,
    session_key: str,
    terms: Sequence[str],
    roles: Sequence[str],
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


def _frequencies(
    db: sqlite3.Connection | sqlite3.Cursor,
    session_key: str,
    terms: Sequence[str],
    roles: Sequence[str],
) -> Frequencies:
    """How many of the session's lines of `roles` hold each term, counted up to just past
    the commonness cut; the caller holds the lock."""
    marks = ", ".join("?" * len(roles))
    (total,) = db.execute(
        "SELECT COALESCE(SUM(lines), 0) FROM archive_sessions"
        f" WHERE session_key = ? AND role IN ({marks})",
        (session_key, *roles),
    ).fetchone()
    bound = common_cap(total) + 1
    counts = _counts_up_to(db, session_key, terms, roles, bound) if terms else {}
    return Frequencies(counts, int(total))


def _earlier_index(cursor: sqlite3.Cursor) -> bool:
    """Whether the file holds an index of another layout than this module's."""
    found = cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'archive_index'").fetchone()
    if found is None:
        return False  # a new file: nothing to rebuild
    columns = tuple(row[1] for row in cursor.execute("PRAGMA table_info(archive_index)"))
    contentless = "content=''" in "".join(found[0].split())
    layout = cursor.execute("PRAGMA table_info(archive_index_layout)").fetchall()
    version = (
        cursor.execute("SELECT MAX(version) FROM archive_index_layout").fetchone()[0]
        if layout
        else None
    )
    return columns != INDEX_COLUMNS or not contentless or version != INDEX_VERSION


VECTORS_LEFT_BEHIND = (
    "the archive holds embeddings of its lines, and this process runs without "
    "AGENT_EMBEDDINGS_MODEL: lines it deletes or rewrites keep their vectors in the file "
    "until the agent runs with embeddings again (which deletes them)"
)


class SqliteArchive:
    """The archive in a SQLite file (or in-memory database) shared with the checkpointer.

    Args:
        conn: the checkpointer's connection.
        lock: the checkpointer's lock (the connection is shared between threads).
        vectors: the lines' embeddings (`AGENT_EMBEDDINGS_MODEL`), which every deletion
            and rewrite of a line deletes in its own transaction.
    """

    def __init__(
        self, conn: sqlite3.Connection, lock: threading.Lock, vectors: SqliteVectors | None = None
    ) -> None:
        self.conn = conn
        self.lock = lock
        self.vectors = vectors

    def setup(self) -> None:
        """Create the tables (idempotent), and rebuild an index of an earlier layout (one
        column of terms for every role; terms without their session's prefix; a copy of
        its terms kept; terms of another `INDEX_VERSION`); callers serialise processes
        around it."""
        with sqlite_transaction(self.conn, self.lock) as cur:
            earlier = _earlier_index(cur)
            uncounted = not cur.execute("PRAGMA table_info(archive_sessions)").fetchall()
            if earlier:
                cur.execute("DROP TABLE IF EXISTS archive_vocab")
                cur.execute("DROP TABLE archive_index")
            for sql in SETUP_SQL:
                cur.execute(sql)
            if "indexed" not in {row[1] for row in cur.execute("PRAGMA table_info(archive_lines)")}:
                cur.execute("ALTER TABLE archive_lines ADD COLUMN indexed TEXT")
            if uncounted:  # an archive from before the counts (none: an empty table)
                cur.execute(COUNT_SESSIONS_SQL)
            if earlier:
                rows = cur.execute(INDEXED)
                cur.executemany(INSERT_INDEX_SQL, [index_row(*row) for row in rows.fetchall()])
            cur.execute("DELETE FROM archive_index_layout")
            cur.execute("INSERT INTO archive_index_layout VALUES (?)", (INDEX_VERSION,))
            vectors = "SELECT 1 FROM sqlite_master WHERE name = 'archive_vectors'"
            if self.vectors is None and cur.execute(vectors).fetchone() is not None:
                logger.warning(VECTORS_LEFT_BEHIND)

    def write(self, cursor: Any, change: ArchiveWrite) -> None:
        """Delete the dropped conversations' lines and append the new ones with `cursor`,
        inside the transaction the caller commits."""
        for key in change.drop_conversations:
            self._drop(cursor, "conversation_key = ?", (key,))
        if change.drop_session is not None:
            self._drop(cursor, "session_key = ?", (change.drop_session,))
        for row in change.rows:
            cursor.execute(
                INSERT_LINE_SQL,
                (
                    row.session_key,
                    row.conversation_key,
                    row.conversation_id,
                    row.title,
                    row.message_id,
                    row.role,
                    stamp(row.created_at),
                    row.text,
                    row.covers,
                    row.indexed,
                ),
            )
            if cursor.rowcount == 1:
                indexed = row.text if row.indexed is None else row.indexed
                index = index_row(cursor.lastrowid, row.session_key, row.role, indexed)
                cursor.execute(INSERT_INDEX_SQL, index)

    def frequencies(
        self, session_key: str, terms: Sequence[str], roles: Sequence[str] = ROLES
    ) -> Frequencies:
        """How many of the session's lines of `roles` hold each of `terms`, counted up to
        just past the commonness cut (`memory.archive.ranking`)."""
        with self.lock:
            return _frequencies(self.conn, session_key, terms, roles)

    def search(
        self,
        session_key: str,
        terms: Sequence[str],
        limit: int,
        *,
        neighbours: bool = False,
        roles: Sequence[str] = ROLES,
        conversation_key: str | None = None,
        cursor: sqlite3.Cursor | None = None,
        frequencies: Frequencies | None = None,
    ) -> list[ArchivedLine]:
        """The session's lines of `roles` sharing any of `terms`, best `bm25()` first, each
        with the lines said just before and after it when `neighbours`, of the conversation
        of `conversation_key` only when given, in one query (with `cursor`, in the
        transaction that holds it: its own changes are seen; `frequencies`: the terms'
        among those lines, when the caller has them)."""
        if not terms or limit <= 0 or not roles:
            return []
        where = (session_key, terms, limit, neighbours, roles, conversation_key, frequencies)
        if cursor is not None:  # its transaction holds the lock already
            return self._search(cursor, *where)
        with self.lock:
            return self._search(self.conn, *where)

    def _search(
        self,
        db: sqlite3.Connection | sqlite3.Cursor,
        session_key: str,
        terms: Sequence[str],
        limit: int,
        neighbours: bool,
        roles: Sequence[str],
        conversation_key: str | None,
        frequencies: Frequencies | None,
    ) -> list[ArchivedLine]:
        counted = frequencies or _frequencies(db, session_key, terms, roles)
        terms = distinctive(
            terms,
            counted.lines_with,
            counted.total,
            lambda common: _counts(db, session_key, common, roles),
        )
        expression = match_expression(session_key, terms, roles)
        conversation = (conversation_key, conversation_key)
        rows = db.execute(
            SEARCH_SQL, (expression, *conversation, limit, session_key, neighbours, neighbours)
        ).fetchall()
        return [read_line(row) for row in rows]

    def page(
        self, cursor: sqlite3.Cursor, session_key: str, after: int, limit: int
    ) -> list[ArchivedLine]:
        """With `cursor`: the session's next `limit` lines after id `after`, by id."""
        rows = cursor.execute(PAGE_SQL, (session_key, after, limit)).fetchall()
        return [
            ArchivedLine(line_id, cid, title, mid, role, datetime.fromisoformat(at), text)
            for line_id, cid, title, mid, role, at, text in rows
        ]

    def rewrite(
        self,
        cursor: sqlite3.Cursor,
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
        if not changes and not message_ids and not titles:
            return 0
        for old, new in (titles or {}).items():
            cursor.execute(
                "UPDATE archive_lines SET title = ? WHERE session_key = ? AND title = ?",
                (new, session_key, old),
            )
        marks = ", ".join("?" * len(message_ids)) or "NULL"
        found = cursor.execute(
            f"SELECT id FROM archive_lines WHERE session_key = ? AND message_id IN ({marks})",
            (session_key, *message_ids),
        ).fetchall()
        wanted = {**dict(changes), **{row[0]: text for row in found}}
        ids = ", ".join("?" * len(wanted)) or "NULL"
        owned = cursor.execute(
            f"{INDEXED} WHERE session_key = ? AND id IN ({ids})", (session_key, *wanted)
        ).fetchall()
        for line_id, _, role, old in owned:
            new = wanted[line_id]
            cursor.execute(DELETE_INDEX_SQL, index_row(line_id, session_key, role, old))
            cursor.execute(
                "UPDATE archive_lines SET text = ?, indexed = NULL WHERE id = ?", (new, line_id)
            )
            cursor.execute(INSERT_INDEX_SQL, index_row(line_id, session_key, role, new))
        if self.vectors is not None:  # an embedding of the old text would find it again
            self.vectors.forget(cursor, [line_id for line_id, *_ in owned])
        if owned or titles:  # the old texts are in the WAL, the old terms in the index
            scrub_on_commit(cursor, *([MERGE_INDEX_SQL] if owned else []))
        return len(owned)

    def _drop(self, cursor: sqlite3.Cursor, where: str, params: tuple[Any, ...]) -> int:
        """With `cursor`: delete the lines `where` selects, their terms and embeddings."""
        rows = cursor.execute(f"{INDEXED} WHERE {where}", params).fetchall()
        cursor.executemany(DELETE_INDEX_SQL, [index_row(*row) for row in rows])
        if self.vectors is not None:
            embedded = [line_id for line_id, _, role, _ in rows if role in EMBEDDED_ROLES]
            self.vectors.forget(cursor, embedded)
        if rows:
            scrub_on_commit(cursor, MERGE_INDEX_SQL)
        return int(cursor.execute(f"DELETE FROM archive_lines WHERE {where}", params).rowcount)

    def _delete(self, where: str, params: tuple[Any, ...]) -> int:
        with sqlite_transaction(self.conn, self.lock) as cur:
            return self._drop(cur, where, params)

    def forget_session(self, session_key: str) -> int:
        """Delete every line of the session, in one transaction."""
        return self._delete("session_key = ?", (session_key,))

    def sweep(self, cutoff: datetime) -> int:
        """Delete the lines of every conversation whose newest line predates `cutoff`."""
        return self._delete(
            "conversation_key IN (SELECT conversation_key FROM archive_lines "
            "GROUP BY conversation_key HAVING MAX(created_at) < ?)",
            (stamp(cutoff),),
        )

    def count(self, session_key: str) -> int:
        """How many lines the session has."""
        with self.lock:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM archive_lines WHERE session_key = ?", (session_key,)
            ).fetchone()
        return int(row[0])

    def lines(self, session_key: str) -> list[ArchiveRow]:
        """Every line of the session, in the order they were archived."""
        with self.lock:
            cursor = self.conn.execute(LINES_SQL, (session_key,))
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return [
            ArchiveRow(**{**row, "created_at": datetime.fromisoformat(row["created_at"])})
            for row in rows
        ]
