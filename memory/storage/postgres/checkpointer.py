"""`PostgresCheckpointer`: LangGraph's `PostgresSaver` with the async API, and the
redaction of its threads' values."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from memory.storage.checkpointers import RunSaver

SELECT_CHANNEL_SQL = """
SELECT DISTINCT ON (c.thread_id) c.thread_id,
       c.checkpoint -> 'channel_values' -> %(channel)s AS inline, b.type, b.blob
FROM checkpoints c
LEFT JOIN checkpoint_blobs b
  ON b.thread_id = c.thread_id AND b.checkpoint_ns = c.checkpoint_ns
 AND b.channel = %(channel)s AND b.version = c.checkpoint -> 'channel_versions' ->> %(channel)s
WHERE c.thread_id = ANY(%(threads)s) AND c.checkpoint_ns = ''
ORDER BY c.thread_id, c.checkpoint_id DESC
"""


class PostgresCheckpointer(RunSaver, PostgresSaver):
    """`PostgresSaver` (its own `prune` included) with the async API."""

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        if not thread_ids:
            return {}
        params = {"channel": channel, "threads": list(thread_ids)}
        with self._cursor() as cur:
            rows = cur.execute(SELECT_CHANNEL_SQL, params).fetchall()
        values: dict[str, Any] = {}
        for row in rows:
            if row["inline"] is not None:  # PostgresSaver keeps primitives in the checkpoint
                values[row["thread_id"]] = row["inline"]
            elif row["type"] is not None:
                values[row["thread_id"]] = self.serde.loads_typed((row["type"], row["blob"]))
        return values

    def list_threads(self, prefix: str) -> list[str]:
        with self._cursor() as cur:
            rows = cur.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE left(thread_id, %s) = %s",
                (len(prefix), prefix),
            ).fetchall()
        return [row["thread_id"] for row in rows]


REDACT_SELECT_SQL = {
    "checkpoints": "SELECT thread_id, checkpoint_ns, checkpoint_id, checkpoint FROM checkpoints "
    "WHERE thread_id = ANY(%(threads)s)",
    "checkpoint_blobs": "SELECT thread_id, checkpoint_ns, channel, version, type, blob "
    "FROM checkpoint_blobs WHERE thread_id = ANY(%(threads)s)",
    "checkpoint_writes": "SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, type, "
    "blob FROM checkpoint_writes WHERE thread_id = ANY(%(threads)s)",
}
REDACT_UPDATE_SQL = {
    "checkpoints": "UPDATE checkpoints SET checkpoint = %(checkpoint)s "
    "WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(checkpoint_ns)s "
    "AND checkpoint_id = %(checkpoint_id)s",
    "checkpoint_blobs": "UPDATE checkpoint_blobs SET type = %(type)s, blob = %(blob)s "
    "WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(checkpoint_ns)s "
    "AND channel = %(channel)s AND version = %(version)s",
    "checkpoint_writes": "UPDATE checkpoint_writes SET type = %(type)s, blob = %(blob)s "
    "WHERE thread_id = %(thread_id)s AND checkpoint_ns = %(checkpoint_ns)s "
    "AND checkpoint_id = %(checkpoint_id)s AND task_id = %(task_id)s AND idx = %(idx)s",
}


def redact_runs(
    cur: Cursor[DictRow],
    thread_ids: Sequence[str],
    redact: Callable[[str, Any], Any],
    serde: SerializerProtocol,
) -> None:
    """In the caller's transaction: rewrite the values of `thread_ids` that
    `redact(thread_id, value)` changes (the primitives kept inline in each checkpoint,
    the channel blobs, the pending writes)."""
    if not thread_ids:
        return
    threads = {"threads": list(thread_ids)}
    for row in cur.execute(REDACT_SELECT_SQL["checkpoints"], threads).fetchall():
        checkpoint = row["checkpoint"]
        values = checkpoint.get("channel_values") or {}
        redacted = {key: redact(row["thread_id"], value) for key, value in values.items()}
        if any(redacted[key] is not value for key, value in values.items()):
            updated = Jsonb({**checkpoint, "channel_values": redacted})
            cur.execute(REDACT_UPDATE_SQL["checkpoints"], {**row, "checkpoint": updated})
    for table in ("checkpoint_blobs", "checkpoint_writes"):
        for row in cur.execute(REDACT_SELECT_SQL[table], threads).fetchall():
            if row["blob"] is None or row["type"] == "empty":
                continue
            value = serde.loads_typed((row["type"], row["blob"]))
            redacted_value = redact(row["thread_id"], value)
            if redacted_value is not value:
                type_, blob = serde.dumps_typed(redacted_value)
                cur.execute(REDACT_UPDATE_SQL[table], {**row, "type": type_, "blob": blob})
