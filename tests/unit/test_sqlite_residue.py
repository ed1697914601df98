"""Deleted text leaves the SQLite file: right after an item is forgotten, a conversation
deleted, the retention sweep run or the history forgotten, the database file and its
WAL, read byte by byte, hold a deleted word no more often than the live rows still do
(not in free space, old WAL frames or unmerged FTS5 segments); and `gc` cleans a file
whose deletions left their words behind."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import memory.archive.sqlite_index as sqlite_index
from agent import ChatAgent
from agent.cli.main import main as cli_main
from agent.offline import OfflineChatModel
from agent.settings import Settings
from memory.schema import utcnow
from memory.storage.sqlite.checkpointer import SqliteCheckpointer

pytestmark = pytest.mark.sqlite_only

WORD = "zqxjvelvet42"


def raw_count(db: Path) -> int:
    """How often `WORD` is in the bytes of the database file and its WAL."""
    files = [db, db.with_name(db.name + "-wal")]
    return sum(f.read_bytes().count(WORD.encode()) for f in files if f.exists())


def live_count(db: Path) -> int:
    """How often `WORD` is in the values of the file's tables, as SQL reads them (an FTS5
    index's own tables aside: what they keep of a deleted row is what is measured)."""
    with sqlite3.connect(db) as conn:
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        virtual = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL%'"
            )
        ]
        found = 0
        for table in tables:
            if any(table == v or table.startswith(f"{v}_") for v in virtual):
                continue
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                for value in row:
                    if isinstance(value, str):
                        found += value.count(WORD)
                    elif isinstance(value, bytes):
                        found += value.count(WORD.encode())
    return found


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agent.sqlite"


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], tmp_path: Path, db: Path) -> ChatAgent:
    settings = Settings(data_dir=tmp_path / "data", retention_days=30, long_term_memory="explicit")
    opened = open_agent(OfflineChatModel(), settings=settings)
    for number in range(3):  # other conversations share the pages and the index
        send(opened, f"Tomatoes need sun, note {number}", create_conversation=True)
    return opened


def send(agent: ChatAgent, text: str, **where: Any) -> str:
    """A turn of the session "s", its upkeep paid; its conversation's id."""
    result = agent.send(text, session_id="s", **where)
    assert agent.wait_for_upkeep(30)
    return str(result.conversation_id)


def said(agent: ChatAgent, db: Path) -> str:
    """A conversation that says `WORD` in two turns (no profile item holds it)."""
    cid = send(agent, f"What does {WORD} mean?", create_conversation=True)
    send(agent, f"And where is {WORD} from?", conversation_id=cid)
    assert raw_count(db) > 0
    return cid


def test_a_forgotten_item_leaves_no_trace_in_the_file(agent: ChatAgent, db: Path) -> None:
    cid = send(agent, f"Remember that I collect {WORD} figurines.", create_conversation=True)
    send(agent, "Which shelf suits them?", conversation_id=cid)
    (item,) = [m for m in agent.memories(session_id="s")["memories"] if WORD in m["text"]]
    assert raw_count(db) > 0
    agent.forget(item["id"], session_id="s")
    assert live_count(db) == 0
    assert raw_count(db) == 0


def test_a_deleted_conversation_leaves_no_trace_in_the_file(agent: ChatAgent, db: Path) -> None:
    agent.delete_conversation(session_id="s", conversation_id=said(agent, db))
    assert live_count(db) == 0
    assert raw_count(db) == 0


def test_the_retention_sweep_leaves_no_trace_in_the_file(agent: ChatAgent, db: Path) -> None:
    said(agent, db)
    # an item whose TTL ran out goes in the same sweep
    agent.long_term.store.put(agent.long_term.namespace("x"), "m_old", {"note": WORD}, ttl=-1)
    removed = agent.sweep(now=utcnow() + timedelta(days=31))
    assert removed["archivedLines"] > 0 and removed["memories"] == 1
    assert live_count(db) == 0
    assert raw_count(db) == 0


def test_a_forgotten_history_leaves_only_the_memory_it_keeps(agent: ChatAgent, db: Path) -> None:
    said(agent, db)
    assert agent.forget_history(session_id="s") > 0
    # the conversation's own memory stays (forget_history touches only the archive)
    assert live_count(db) > 0
    assert raw_count(db) <= live_count(db)


def test_gc_cleans_a_file_whose_deletions_left_their_words(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_DATABASE_URL", f"sqlite:///{db}")
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    # a file written before deletions scrubbed: no zeroing, no merge of the index
    with monkeypatch.context() as before:
        before.setattr(sqlite_index, "MERGE_INDEX_SQL", "SELECT 1")
        with ChatAgent(model=OfflineChatModel(), settings=Settings.from_env()) as agent:
            saver = agent.memory.threads.checkpointer
            assert isinstance(saver, SqliteCheckpointer)
            saver.conn.execute("PRAGMA secure_delete = OFF")
            send(agent, "Tomatoes need sun", create_conversation=True)
            agent.delete_conversation(session_id="s", conversation_id=said(agent, db))
    assert live_count(db) == 0 < raw_count(db)
    assert cli_main(["gc"]) == 0
    assert raw_count(db) == 0
