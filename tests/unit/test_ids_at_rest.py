"""Run checkpoints hold no raw session or conversation id (their thread ids are HMACs):
the ids reach the graph through its context only, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from agent import ChatAgent
from agent.offline import OfflineChatModel

SESSION = "session-7f3a9c2b"
TASKS = "/tasklist Set up CI. Add linting."


def checkpointed(db_url: str) -> bytes:
    """Everything the savers' tables hold (SQLite read through its WAL), as bytes."""
    rows: list[tuple[object, ...]]
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute("SELECT * FROM checkpoints").fetchall()
            rows += conn.execute("SELECT * FROM writes").fetchall()
    else:
        import psycopg

        with psycopg.connect(db_url) as conn:
            rows = []
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                rows += conn.execute(f"SELECT * FROM {table}").fetchall()
    return b"\n".join(
        value if isinstance(value, bytes) else str(value).encode() for row in rows for value in row
    )


def test_run_checkpoints_hold_no_raw_ids(
    open_agent: Callable[..., ChatAgent], db_url: str, tmp_path: Path
) -> None:
    agent = open_agent(OfflineChatModel())
    chatted = agent.send("hello there", session_id=SESSION, create_conversation=True)
    paused = agent.send(TASKS, session_id=SESSION, create_conversation=True)
    assert paused.status == "interrupted"
    agent.wait_for_upkeep(30)
    stored = checkpointed(db_url)
    assert stored  # the runs were checkpointed
    for raw in (SESSION, chatted.conversation_id, paused.conversation_id):
        assert raw.encode() not in stored, raw
    # the review still resumes: its ids come from the run's context again
    done = agent.resume(
        {"action": "approve"}, session_id=SESSION, conversation_id=paused.conversation_id
    )
    assert done.status == "completed" and done.conversation_id == paused.conversation_id
    assert paused.conversation_id.encode() not in checkpointed(db_url)
