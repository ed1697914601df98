"""`SqliteCheckpointer`: LangGraph's `SqliteSaver` with `prune` and the async API, and
what else reaches into its tables (deleting threads, redacting their values)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.sqlite import SqliteSaver

from memory.storage.checkpointers import RunSaver
from memory.storage.sqlite.connection import scrub_on_commit, sqlite_transaction

CHECKPOINT_TABLES = ("checkpoints", "writes")
DELTA_MARKERS = ('"counters_since_delta_snapshot"', '"delta_writes_versioned"')
"""Metadata keys of a thread whose graph uses a `DeltaChannel`: its latest value is
rebuilt from older checkpoints, which `keep_latest` would delete."""

SELECT_HEADS_SQL = (
    "SELECT checkpoint_ns, checkpoint_id, metadata FROM checkpoints c "
    "WHERE thread_id = ? AND checkpoint_id = ("
    "SELECT MAX(checkpoint_id) FROM checkpoints l "
    "WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = c.checkpoint_ns)"
)
ROOTS_SQL = "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ''"


def delete_threads(cur: sqlite3.Cursor, thread_ids: Sequence[str]) -> None:
    """Delete every checkpoint and write of `thread_ids` (in the caller's transaction,
    which then leaves none of their text in the WAL)."""
    params = [(thread_id,) for thread_id in thread_ids]
    for table in CHECKPOINT_TABLES:
        if cur.executemany(f"DELETE FROM {table} WHERE thread_id = ?", params).rowcount:
            scrub_on_commit(cur)


def keep_latest(cur: sqlite3.Cursor, thread_id: str) -> None:
    """Keep the latest checkpoint of each namespace of `thread_id`, with its writes
    (`NotImplementedError` for a `DeltaChannel` thread: nothing is pruned).

    A subgraph call's namespace (its task id after a ":") goes with the root
    checkpoint the call started from, once that one is saved and is not the one kept.
    A kept checkpoint whose parent is deleted is left with no parent.
    """
    marked = " OR ".join("instr(CAST(metadata AS TEXT), ?) > 0" for _ in DELTA_MARKERS)
    delta = cur.execute(
        f"SELECT 1 FROM checkpoints WHERE thread_id = ? AND ({marked}) LIMIT 1",
        (thread_id, *DELTA_MARKERS),
    ).fetchone()
    if delta is not None:
        raise NotImplementedError(f"keep_latest can't prune a DeltaChannel thread: {thread_id}")
    heads = {
        ns: (head, json.loads(metadata).get("parents", {}).get(""))
        for ns, head, metadata in cur.execute(SELECT_HEADS_SQL, (thread_id,)).fetchall()
    }
    kept_root = heads.get("", (None, None))[0]
    saved = {row[0] for row in cur.execute(ROOTS_SQL, (thread_id,)).fetchall()}
    # decided before anything is deleted: the root checkpoints a call started from go
    calls = {ns for ns, (_, root) in heads.items() if ":" in ns and root in saved - {kept_root}}
    for ns, (head, _) in heads.items():
        # a call's namespace goes whole; elsewhere, writes of a checkpoint not saved yet stay
        older, params = ("", ()) if ns in calls else (" AND checkpoint_id < ?", (head,))
        for table in CHECKPOINT_TABLES:
            cur.execute(
                f"DELETE FROM {table} WHERE thread_id = ? AND checkpoint_ns = ?{older}",
                (thread_id, ns, *params),
            )
        cur.execute(
            "UPDATE checkpoints SET parent_checkpoint_id = NULL WHERE thread_id = ? "
            "AND checkpoint_ns = ? AND checkpoint_id = ? AND parent_checkpoint_id IS NOT NULL",
            (thread_id, ns, head),
        )


class SqliteCheckpointer(RunSaver, SqliteSaver):
    """`SqliteSaver` with `prune` and the async API (both left unimplemented upstream)."""

    def setup(self) -> None:
        """Upstream's setup, on either driver of the connection (`connection.connect`).

        Upstream's last statement adds the column `writes.task_path`, and catches the
        `sqlite3.OperationalError` "duplicate column name" of every newer file; `sqlean`
        raises its own, which that clause does not catch: ignored here, as upstream
        means to (the tables exist by then)."""
        try:
            super().setup()
        except Exception as exc:
            expected = "duplicate column name: task_path" in str(exc)
            if isinstance(exc, sqlite3.Error) or not expected:
                raise
            self.is_setup = True

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune `thread_ids` in one transaction: `keep_latest`, or `delete` all their rows."""
        if isinstance(thread_ids, str):  # it would prune each letter
            raise TypeError("thread_ids must be a sequence of thread ids, not a str")
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"unknown prune strategy {strategy!r}")
        threads = [str(thread_id) for thread_id in thread_ids]
        if not threads:
            return
        with sqlite_transaction(self.conn, self.lock) as cur:
            if strategy == "delete":
                delete_threads(cur, threads)
                return
            for thread_id in threads:
                keep_latest(cur, thread_id)

    def get_channel_values(self, thread_ids: Sequence[str], channel: str) -> dict[str, Any]:
        if not thread_ids:
            return {}
        marks = ", ".join("?" * len(thread_ids))
        with self.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT thread_id, type, checkpoint FROM checkpoints c "
                f"WHERE checkpoint_ns = '' AND thread_id IN ({marks}) AND checkpoint_id = ("
                "SELECT MAX(checkpoint_id) FROM checkpoints l "
                "WHERE l.thread_id = c.thread_id AND l.checkpoint_ns = '')",
                tuple(thread_ids),
            ).fetchall()
        values = {
            thread: self.serde.loads_typed((type_, blob)).get("channel_values", {})
            for thread, type_, blob in rows
        }
        return {thread: found[channel] for thread, found in values.items() if channel in found}

    def list_threads(self, prefix: str) -> list[str]:
        with self.cursor(transaction=False) as cur:
            rows = cur.execute(
                "SELECT DISTINCT thread_id FROM checkpoints WHERE substr(thread_id, 1, ?) = ?",
                (len(prefix), prefix),
            ).fetchall()
        return [row[0] for row in rows]


def redact_runs(
    cur: sqlite3.Cursor,
    thread_ids: Sequence[str],
    redact: Callable[[str, Any], Any],
    serde: SerializerProtocol,
) -> None:
    """In the caller's transaction: rewrite the checkpoints and pending writes of
    `thread_ids` whose values `redact(thread_id, value)` changes."""
    if not thread_ids:
        return
    marks = ", ".join("?" * len(thread_ids))
    for table, column in (("checkpoints", "checkpoint"), ("writes", "value")):
        rows = cur.execute(
            f"SELECT rowid, thread_id, type, {column} FROM {table} WHERE thread_id IN ({marks})",
            tuple(thread_ids),
        ).fetchall()
        for rowid, thread_id, type_, blob in rows:
            value = serde.loads_typed((type_, blob))
            if table == "checkpoints":  # a checkpoint: each of its channel values
                values = value.get("channel_values") or {}
                redacted = {key: redact(thread_id, v) for key, v in values.items()}
                touched = any(redacted[key] is not v for key, v in values.items())
                value = {**value, "channel_values": redacted}
            else:  # a pending write: its value
                redacted_value = redact(thread_id, value)
                touched, value = redacted_value is not value, redacted_value
            if touched:
                sql = f"UPDATE {table} SET type = ?, {column} = ? WHERE rowid = ?"
                cur.execute(sql, (*serde.dumps_typed(value), rowid))
                scrub_on_commit(cur)
