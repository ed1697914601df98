"""The archive's embeddings on SQLite: a sqlite-vec `vec0` table of the user's lines'
vectors, partitioned by session, on the archive's connection (opened with vectors:
`memory.storage.sqlite.connection.connect`).

A vector is kept with a mark of the text it was computed from, and a nearest line
counts only while its text still bears that mark: a line rewritten by a process that
could not touch this table (one opened without embeddings) is never found by its old
text's vector. Every writer that can reach the table deletes a line's vector in the
transaction that deletes or rewrites the line, and opening the table deletes the vectors
of lines such a process deleted or rewrote (an embedding can be partly turned back into
its text): until the agent runs with embeddings again, they stay in the file.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass

import sqlite_vec  # type: ignore[import-untyped]

from memory.archive.lines import EMBEDDED_ROLES, FORGOTTEN, REDACTED, ArchivedLine, read_line
from memory.archive.sqlite_index import search_sql
from memory.errors import EMBEDDINGS_UNSUPPORTED, UnsupportedDatabaseUrl
from memory.storage.sqlite.connection import sqlite_transaction

CHUNK_SIZE = 8
"""Vectors per chunk of a session's partition: vec0 allocates a partition's vectors a
whole chunk at a time, so a session with few lines costs one small chunk (8 × 1,536
floats: 48 KiB), while a search reads a large session at about the same speed."""
MODEL_SQL = (
    "CREATE TABLE IF NOT EXISTS archive_vector_model (model TEXT NOT NULL, dims INTEGER NOT NULL)"
)
INSERT_SQL = "INSERT INTO archive_vectors (id, session_key, embedding, mark) VALUES (?, ?, ?, ?)"
NEAREST_SQL = search_sql(
    "SELECT id, 0.0 AS score, distance, mark FROM archive_vectors"
    " WHERE embedding MATCH ? AND k = ? AND session_key = ?"
)
_ROLES = ", ".join(f"'{role}'" for role in EMBEDDED_ROLES)
# the newest lines of a session without a vector, however old (a point lookup of vec0
# each: `id IN (...)` would scan every session's vectors)
UNEMBEDDED_SQL = (
    "SELECT l.id, l.text FROM archive_lines l"
    f" WHERE l.session_key = ? AND l.role IN ({_ROLES}) AND l.text NOT IN (?, ?)"
    " AND NOT EXISTS (SELECT 1 FROM archive_vectors v WHERE v.id = l.id)"
    " ORDER BY l.id DESC LIMIT ?"
)


def mark(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass(eq=False)
class SqliteVectors:
    """The archived lines' embeddings in the archive's SQLite file (`conn`, with
    sqlite-vec loaded, and its `lock`), of the embeddings' `model` and `dims`."""

    conn: sqlite3.Connection
    lock: threading.Lock
    _: KW_ONLY
    model: str
    dims: int

    def setup(self) -> None:
        """Create the table (idempotent); callers serialise processes around it. Vectors
        of another model or size are dropped: none of them compares with this model's
        (their lines are found lexically until embedded again); so are those of lines
        deleted or rewritten since they were computed (see the module docstring). Raises
        UnsupportedDatabaseUrl when the connection has no sqlite-vec."""
        with self.lock:
            try:
                self.conn.execute("SELECT vec_version()").fetchall()
            except Exception:
                why = "the database was opened without sqlite-vec (open it with vectors)"
                raise UnsupportedDatabaseUrl(EMBEDDINGS_UNSUPPORTED.format(why=why)) from None
        with sqlite_transaction(self.conn, self.lock) as cur:
            cur.execute(MODEL_SQL)
            model = (self.model, self.dims)
            if cur.execute("SELECT model, dims FROM archive_vector_model").fetchall() != [model]:
                cur.execute("DROP TABLE IF EXISTS archive_vectors")
                cur.execute("DELETE FROM archive_vector_model")
                cur.execute("INSERT INTO archive_vector_model VALUES (?, ?)", model)
            cur.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS archive_vectors USING vec0("
                " id INTEGER PRIMARY KEY, session_key TEXT PARTITION KEY,"
                f" embedding FLOAT[{int(self.dims)}] distance_metric=cosine, +mark TEXT,"
                f" chunk_size={CHUNK_SIZE})"
            )
            rows = cur.execute(
                "SELECT v.id, v.mark, l.text FROM archive_vectors v"
                " LEFT JOIN archive_lines l ON l.id = v.id"
            ).fetchall()
            stale = [line for line, kept, text in rows if text is None or kept != mark(text)]
            self.forget(cur, stale)

    def nearest(self, session_key: str, vector: Sequence[float], limit: int) -> list[ArchivedLine]:
        """The session's lines whose vectors are nearest `vector`, nearest first, each
        with the lines said around it (as a lexical search reads them), in one query."""
        params = (sqlite_vec.serialize_float32(vector), limit, session_key, session_key, True, True)
        with self.lock:
            rows = self.conn.execute(NEAREST_SQL, params).fetchall()
        found = [(read_line(row), row[-1]) for row in rows]  # (`search_sql` ends with the mark)
        # (a query of zeros has no distance to anything)
        return [
            line for line, kept in found if kept == mark(line.text) and line.distance is not None
        ]

    def unembedded(self, session_key: str, limit: int) -> list[tuple[int, str]]:
        """The session's newest `limit` lines of the embedded roles without a vector, newest
        first (`EMBED_BATCH`); a redacted or forgotten line gets none."""
        params = (session_key, REDACTED, FORGOTTEN, limit)
        with self.lock:
            return self.conn.execute(UNEMBEDDED_SQL, params).fetchall()

    def add(self, session_key: str, embedded: Iterable[tuple[int, str, Sequence[float]]]) -> int:
        """Store the vectors of `(line id, text, vector)` in a short transaction of its own,
        for the lines still the session's and still reading the text embedded; returns how
        many were stored."""
        added = 0
        with sqlite_transaction(self.conn, self.lock) as cur:
            for line_id, text, vector in embedded:
                row = cur.execute(
                    "SELECT text FROM archive_lines WHERE id = ? AND session_key = ?",
                    (line_id, session_key),
                ).fetchone()
                if row is None or row[0] != text:
                    continue
                cur.execute("DELETE FROM archive_vectors WHERE id = ?", (line_id,))
                blob = sqlite_vec.serialize_float32(vector)
                cur.execute(INSERT_SQL, (line_id, session_key, blob, mark(text)))
                added += 1
        return added

    @staticmethod
    def forget(cursor: sqlite3.Cursor, line_ids: Iterable[int]) -> None:
        """With `cursor`, in the transaction that deletes or rewrites the lines: delete
        their vectors (one point deletion each: vec0 would scan every session's vectors
        for a set)."""
        cursor.executemany(
            "DELETE FROM archive_vectors WHERE id = ?", [(line_id,) for line_id in line_ids]
        )
