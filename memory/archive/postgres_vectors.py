"""The archive's embeddings on PostgreSQL, which has no pgvector here: each line's vector
beside it (`archive_vectors`, float32 bytes, keyed by the line), and the nearest lines
found by an exact scan of the session's vectors in Python.

A vector lives and dies with its line: deleting a line deletes it (a cascade), and
rewriting one (forgetting, redaction) deletes it in the same transaction, whichever
process does it, with embeddings or without. The session's vectors are read once into
a matrix kept per process, and read again when the session's version
(`archive_versions`, bumped by a trigger on every statement that adds or deletes its
vectors) has moved: a forgotten line's vector leaves every process's cache at its next
search.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from memory.archive.lines import EMBEDDED_ROLES, FORGOTTEN, REDACTED, ArchivedLine, read_line
from memory.archive.postgres_sql import NEAREST_SQL, SETUP_LOCK_KEY

CACHED_SESSIONS = 16
"""Sessions whose vectors a process keeps (10,000 lines of 384 floats: 15 MB)."""
VERSION_SQL = "SELECT version FROM archive_versions WHERE session_key = %s"
VECTORS_SQL = "SELECT id, embedding FROM archive_vectors WHERE session_key = %s ORDER BY id"
UNEMBEDDED_SQL = (
    "SELECT l.id, l.text FROM archive_lines l WHERE l.session_key = %s AND l.role = ANY(%s)"
    " AND l.text <> ALL(%s) AND NOT EXISTS (SELECT 1 FROM archive_vectors v WHERE v.id = l.id)"
    " ORDER BY l.id DESC LIMIT %s"
)
ADD_SQL = (
    "INSERT INTO archive_vectors (id, session_key, embedding)"
    " SELECT l.id, l.session_key, v.embedding"
    " FROM unnest(%s::bigint[], %s::bytea[], %s::text[]) AS v(id, embedding, text)"
    " JOIN archive_lines l ON l.id = v.id AND l.session_key = %s AND l.text = v.text"
    " ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding"
)
"""A batch's vectors in one statement, of the lines still reading the text embedded."""


class PostgresVectors:
    """The archived lines' embeddings in the archive's PostgreSQL table, on the thread
    store's `pool` (autocommit connections, dict rows)."""

    def __init__(self, pool: Any, *, model: str, dims: int) -> None:
        self.pool = pool
        self.model = model
        self.dims = dims
        self._lock = threading.Lock()
        # session key -> (version, line ids, unit vectors as rows)
        self._cache: OrderedDict[str, tuple[int, np.ndarray, np.ndarray]] = OrderedDict()

    def setup(self) -> None:
        """Record the model, after the archive's setup (which makes the table): vectors of
        another model or size are cleared, as `SqliteVectors.setup` drops them."""
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SETUP_LOCK_KEY,))
            rows = conn.execute("SELECT model, dims FROM archive_vector_model").fetchall()
            model = (self.model, self.dims)
            if [(row["model"], row["dims"]) for row in rows] == [model]:
                return
            conn.execute("DELETE FROM archive_vectors")
            conn.execute("DELETE FROM archive_vector_model")
            conn.execute("INSERT INTO archive_vector_model VALUES (%s, %s)", model)

    def _matrix(self, conn: Any, session_key: str) -> tuple[np.ndarray, np.ndarray]:
        """The session's line ids and unit vectors, from the cache while its version
        holds (one indexed read), else read again."""
        row = conn.execute(VERSION_SQL, (session_key,)).fetchone()
        version = -1 if row is None else int(row["version"])
        with self._lock:
            kept = self._cache.get(session_key)
            if kept is not None and kept[0] == version:
                self._cache.move_to_end(session_key)
                return kept[1], kept[2]
        rows = conn.execute(VECTORS_SQL, (session_key,)).fetchall()
        ids = np.fromiter((r["id"] for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.zeros((len(rows), self.dims), dtype=np.float32)
        for i, r in enumerate(rows):
            vector = np.frombuffer(r["embedding"], dtype="<f4")
            if vector.shape == (self.dims,):  # (another size is never compared)
                matrix[i] = vector
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
        with self._lock:
            # (the version was read before the vectors: a change between them only
            # makes the next search read them again)
            self._cache[session_key] = (version, ids, matrix)
            self._cache.move_to_end(session_key)
            while len(self._cache) > CACHED_SESSIONS:
                self._cache.popitem(last=False)
        return ids, matrix

    def nearest(self, session_key: str, vector: Sequence[float], limit: int) -> list[ArchivedLine]:
        """The session's lines whose vectors are nearest `vector` (cosine distance, as
        sqlite-vec computes it), nearest first, each with its neighbours: an exact scan
        of the cached matrix, then one query reading the lines still embedded."""
        query = np.asarray(vector, dtype=np.float32)
        norm = float(np.linalg.norm(query))
        if limit <= 0 or norm == 0.0:  # (a query of zeros has no distance to anything)
            return []
        with self.pool.connection() as conn:
            ids, matrix = self._matrix(conn, session_key)
            if not len(ids):
                return []
            distances = 1.0 - matrix @ (query / norm)
            count = min(limit, len(ids))
            best = np.argpartition(distances, count - 1)[:count]
            best = best[np.lexsort((-ids[best], distances[best]))]
            params = {
                "ids": ids[best].tolist(),
                "distances": distances[best].astype(np.float64).tolist(),
                "session": session_key,
                "neighbours": True,
            }
            rows = conn.execute(NEAREST_SQL, params).fetchall()
        found = [read_line(tuple(row.values())) for row in rows]
        return [line for line in found if line.text not in (REDACTED, FORGOTTEN)]

    def unembedded(self, session_key: str, limit: int) -> list[tuple[int, str]]:
        """As `SqliteVectors.unembedded`."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                UNEMBEDDED_SQL, (session_key, list(EMBEDDED_ROLES), [REDACTED, FORGOTTEN], limit)
            ).fetchall()
        return [(row["id"], row["text"]) for row in rows]

    def add(self, session_key: str, embedded: Iterable[tuple[int, str, Sequence[float]]]) -> int:
        """As `SqliteVectors.add`, in one statement."""
        rows = list(embedded)
        if not rows:
            return 0
        ids = [line_id for line_id, _, _ in rows]
        texts = [text for _, text, _ in rows]
        vectors = [np.asarray(vector, dtype="<f4").tobytes() for _, _, vector in rows]
        with self.pool.connection() as conn:
            return int(conn.execute(ADD_SQL, (ids, vectors, texts, session_key)).rowcount)
