"""Memory benchmark: one conversation, 200 written turns, a zero-latency scripted compactor.

Reports database bytes (the conversation memory apart from the archive of every turn,
which episodic memory keeps until the retention sweep), documents per memory thread,
compaction calls and the median time of one append (`ConversationMemory.write_turn`).

Run: `make bench` or `python -m bench.memory_bench [--turns N]`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableLambda

from bench.scripted import folded_pin
from memory import CompactionOutput, CompactionStatus, ThreadIds
from memory.conversations import ConversationMemory
from memory.storage import open_thread_store
from memory.turns import chat_turn

SECRET = "bench-secret-" + "x" * 32


def scripted_compactor() -> RunnableLambda[Any, CompactionOutput]:
    """Answers every compaction with a near-limit summary and a growing set of pins."""

    def answer(messages: Any) -> CompactionOutput:
        return CompactionOutput(
            summary=("The user and the assistant discussed the project plan. " * 45)[:2400],
            pinned_decisions=folded_pin(messages),
            retired_pins=[],
        )

    return RunnableLambda(answer)


def archive_bytes(conn: Any) -> int:
    """The pages of the archive's tables and indexes (SQLite's `dbstat`)."""
    row = conn.execute(
        "SELECT COALESCE(SUM(pgsize), 0) FROM dbstat WHERE name LIKE 'archive%'"
        " OR name = 'sqlite_autoindex_archive_lines_1'"
    ).fetchone()
    return int(row[0])


def run(turns: int, directory: Path) -> dict[str, Any]:
    db = directory / "bench.sqlite"
    store = open_thread_store(f"sqlite:///{db}")
    memory = ConversationMemory(store, ThreadIds(SECRET))
    compactor = scripted_compactor()
    memory.accept_draft("bench", "c1")
    append_seconds: list[float] = []
    compactions = 0
    for turn in range(turns):
        user = f"Turn {turn}: could you refine section {turn % 7} of the plan? " * 3
        answer = f"Here is the refined section {turn % 7}, with the trade-offs spelled out. " * 8
        started = time.perf_counter()
        memory.write_turn("bench", "c1", chat_turn(user, answer))
        append_seconds.append(time.perf_counter() - started)
        result = memory.compact("bench", "c1", compactor)
        compactions += result.status is not CompactionStatus.SKIPPED
    state = memory.read_memory("bench", "c1")
    conn = store.checkpointer.conn  # type: ignore[attr-defined]
    rows = conn.execute(
        "SELECT COUNT(*) FROM memory_documents WHERE thread_id = ?",
        (memory.memory_thread("bench", "c1"),),
    ).fetchone()[0]
    wal = db.with_name(db.name + "-wal")
    wal_before = wal.stat().st_size if wal.exists() else 0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    archive = archive_bytes(conn)
    figures = {
        "turns": turns,
        "database_bytes": db.stat().st_size,
        # the archive keeps every turn (episodic memory, unbounded by design until the
        # retention sweep): the bound is the conversation memory's, the rest of the file
        "memory_bytes": db.stat().st_size - archive,
        "archive_bytes_per_turn": round(archive / turns),
        "wal_bytes_before_checkpoint": wal_before,
        "documents_per_memory_thread": rows,
        "checkpoints_per_memory_thread": store.checkpoint_count(
            memory.memory_thread("bench", "c1")
        ),
        "compaction_calls": compactions,
        "compaction_calls_per_turn": round(compactions / turns, 3),
        "append_median_ms": round(statistics.median(append_seconds) * 1000, 3),
        "append_p95_ms": round(statistics.quantiles(append_seconds, n=20)[-1] * 1000, 3),
        "final_messages": len(state.messages),
        "final_summary_chars": len(state.summary),
        "final_pins": len(state.pinned_decisions),
    }
    store.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(args.turns, Path(tmp))
    print(json.dumps(figures, indent=2))
    targets = {
        "memory_bytes (the file without the archive) <= 64 KiB": figures["memory_bytes"]
        <= 64 * 1024,
        "one document and no checkpoint per memory thread": (
            figures["documents_per_memory_thread"],
            figures["checkpoints_per_memory_thread"],
        )
        == (1, 0),
        "compaction calls <= 1 per 3 turns": figures["compaction_calls"] * 3 <= figures["turns"],
    }
    for name, met in targets.items():
        print(f"{'met ' if met else 'MISSED'}  {name}")


if __name__ == "__main__":
    main()
