"""The agent benchmark's figures: one agent's record of turns, its reduction to figures
(timing windows, storage after a WAL checkpoint, model calls, context size), the table.
"""

from __future__ import annotations

import sqlite3
import statistics
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.scripted import CallLog

WINDOW = 20
"""Turns in the early and the late timing windows."""


@dataclass
class Run:
    """The raw record of one agent's turns.

    Attributes:
        turn_seconds: wall time of each turn (the graph call and any pruning after it).
        context_chars: characters the chat model read in each turn.
    """

    turn_seconds: list[float] = field(default_factory=list)
    context_chars: list[int] = field(default_factory=list)
    upkeep_seconds: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Figures:
    """One agent's reported figures (see the module docstring)."""

    agent: str
    turns: int
    early_median_ms: float
    late_median_ms: float
    flatness: float
    median_ms: float
    p95_ms: float
    database_bytes: int
    live_bytes: int
    checkpoint_rows: int
    write_rows: int
    chat_calls: int
    compaction_calls: int
    last_context_chars: int
    last_context_messages: int
    early_max_context_chars: int
    late_max_context_chars: int
    upkeep_median_ms: float | None
    """Median time our memory upkeep took after a turn's `done` (untimed in the turn)."""
    archive_bytes: int | None = None
    """Pages of the episodic archive (its table, indexes and full-text index): the
    session's history, kept until retention by design, so reported apart from the
    conversation's bounded storage (None where SQLite has no `dbstat`)."""


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def _p95(values: Sequence[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def database_figures(db: Path) -> dict[str, Any]:
    """File size after `wal_checkpoint(TRUNCATE)`, bytes in use, checkpoint and write rows.

    Call once the agent's connections are closed, so that the checkpoint is complete.
    `live_bytes` leaves out free pages: SQLite keeps a file at its high-water mark.
    """
    with closing(sqlite3.connect(db)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size, pages, free = (
            conn.execute(f"PRAGMA {name}").fetchone()[0]
            for name in ("page_size", "page_count", "freelist_count")
        )
        return {
            "database_bytes": db.stat().st_size,
            "live_bytes": page_size * (pages - free),
            "checkpoint_rows": conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0],
            "write_rows": conn.execute("SELECT COUNT(*) FROM writes").fetchone()[0],
            "archive_bytes": archive_bytes(conn),
        }


def archive_bytes(conn: sqlite3.Connection) -> int | None:
    """Bytes in the pages of the archive's tables and indexes (0 for a peer's file)."""
    try:
        row = conn.execute(
            "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat"
            " WHERE name LIKE 'archive%' OR name LIKE 'sqlite_autoindex_archive%'"
        ).fetchone()
    except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
        return None
    return int(row[0])


def summarise(agent: str, run: Run, log: CallLog, database: dict[str, int]) -> Figures:
    """Reduce a run to its figures.

    Raises:
        RuntimeError: the model was not called once per turn for chat (a summary call
            taken for a chat call would skew the context figures).
    """
    seconds, chars = run.turn_seconds, run.context_chars
    if log.chat_calls != len(seconds):
        raise RuntimeError(f"{agent}: {log.chat_calls} chat calls in {len(seconds)} turns")
    window = max(1, min(WINDOW, len(seconds) // 2))
    half = len(chars) // 2
    early = statistics.median(seconds[:window])
    late = statistics.median(seconds[-window:])
    return Figures(
        agent=agent,
        turns=len(seconds),
        early_median_ms=_ms(early),
        late_median_ms=_ms(late),
        flatness=round(late / early, 3),
        median_ms=_ms(statistics.median(seconds)),
        p95_ms=_ms(_p95(seconds)),
        chat_calls=log.chat_calls,
        compaction_calls=log.compaction_calls,
        last_context_chars=log.last_chat_input_chars,
        last_context_messages=log.last_chat_input_messages,
        early_max_context_chars=max(chars[:half]),
        late_max_context_chars=max(chars[half:]),
        upkeep_median_ms=_ms(statistics.median(run.upkeep_seconds)) if run.upkeep_seconds else None,
        **database,
    )


COLUMNS: tuple[tuple[str, str], ...] = (
    ("first 20 ms", "early_median_ms"),
    ("last 20 ms", "late_median_ms"),
    ("flatness", "flatness"),
    ("median ms", "median_ms"),
    ("p95 ms", "p95_ms"),
    ("db bytes", "database_bytes"),
    ("live bytes", "live_bytes"),
    ("checkpoints", "checkpoint_rows"),
    ("compactions", "compaction_calls"),
    ("context chars", "last_context_chars"),
    ("archive bytes", "archive_bytes"),
    ("upkeep ms", "upkeep_median_ms"),
)


def cell(value: object) -> str:
    """A table cell: numbers with thousands separators, n/a for None."""
    return "n/a" if value is None else f"{value:,}"


def table(figures: Sequence[Figures]) -> str:
    """A fixed-width table: one row per agent."""
    rows = [["agent", *(title for title, _ in COLUMNS)]]
    rows += [[f.agent, *(cell(getattr(f, key)) for _, key in COLUMNS)] for f in figures]
    return fixed_width(rows)


def fixed_width(rows: Sequence[Sequence[str]]) -> str:
    """`rows` as a table: the first column left-aligned, the others right-aligned, a
    rule under the first row."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)
