"""Storage across processes: persistence, cross-process locks, concurrent writers,
fresh databases opened together, and a crash in the middle of a turn's write."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import pytest

from memory import ThreadIds
from memory.conversations import ConversationMemory
from memory.schema import ThreadState
from memory.storage import ThreadStore, open_thread_store
from memory.turns import chat_turn
from tests.conftest import SECRET

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def all_texts_survive(state: ThreadState, expected: set[str]) -> bool:
    lines = {json.loads(line.split(": ", 1)[1]) for line in state.summary.splitlines()}
    return expected <= lines | {m.text for m in state.messages}


REOPEN_SCRIPT = """
import sys
from memory.conversations import ConversationMemory
from memory import ThreadIds
from memory.storage import open_thread_store
store = open_thread_store(sys.argv[1])
memory = ConversationMemory(store, ThreadIds(sys.argv[2]))
print("|".join(m.text for m in memory.read_memory("s1", "c1").messages))
print(memory.conversations("s1")["conversations"][0]["title"])
"""


def test_persists_across_a_reopen_in_a_new_process(db_url: str) -> None:
    store = open_thread_store(db_url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("remember me", "ok"))
    store.close()
    out = subprocess.run(
        [sys.executable, "-c", REOPEN_SCRIPT, db_url, SECRET],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.stdout.splitlines() == ["remember me|ok", "remember me"]


def _append_turns(db_url: str, worker: int, turns: int) -> None:
    store = open_thread_store(db_url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    for i in range(turns):
        memory.write_turn("s1", "c1", chat_turn(f"p{worker}-{i}", f"r{worker}-{i}"))
    store.close()


def test_two_processes_appending_to_one_conversation_lose_nothing(db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_append_turns, args=(db_url, n, 15)) for n in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0, 0]
    store = open_thread_store(db_url)
    state = ConversationMemory(store, ThreadIds(SECRET)).read_memory("s1", "c1")
    assert state.version == 30
    expected = {f"{kind}{n}-{i}" for kind in "pr" for n in range(2) for i in range(15)}
    assert all_texts_survive(state, expected)
    store.close()


def test_locks_exclude_across_processes(store: ThreadStore, db_url: str) -> None:
    with store.locks.hold("key-a"):
        probe = subprocess.run(
            [sys.executable, "-c", LOCK_PROBE, db_url],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
            check=True,
        )
    assert probe.stdout.split() == ["busy", "free"]


LOCK_PROBE = """
import sys
from memory.storage import open_thread_store
from memory.errors import LockTimeout
store = open_thread_store(sys.argv[1])
try:
    with store.locks.hold("key-a", timeout=0.2):
        print("free")
except LockTimeout:
    print("busy")
with store.locks.hold("key-b", timeout=0.2):
    print("free")
store.close()
"""


def _open_and_write(url: str, n: int) -> None:
    store = open_thread_store(url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft(f"s{n}", "c1")
    memory.write_turn(f"s{n}", "c1", chat_turn("q", "a"))
    store.close()


def test_processes_opening_a_fresh_database_together(db_url: str) -> None:
    """Workers start together: the tables are created once, and every worker opens."""
    if db_url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(db_url, autocommit=True) as conn:
            for table in (
                "checkpoint_writes",
                "checkpoint_blobs",
                "checkpoints",
                "checkpoint_migrations",
            ):
                conn.execute(f"DROP TABLE IF EXISTS {table}")
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_open_and_write, args=(db_url, n)) for n in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0, 0, 0, 0]


CRASH_SCRIPT = """
import os, sys
from memory.conversations import ConversationMemory
from memory import ThreadIds
from memory.storage import open_thread_store
from memory.turns import chat_turn
store = open_thread_store(sys.argv[1])
memory = ConversationMemory(store, ThreadIds(sys.argv[2]))
inserts = 0

def trace(statement):
    global inserts
    if statement.lstrip().upper().startswith("INSERT") and "INTO memory_documents" in statement:
        inserts += 1
        if inserts == 2:  # the memory row is in, the registry row is next: die here
            os._exit(9)

store.checkpointer.conn.set_trace_callback(trace)
memory.write_turn("s1", "c1", chat_turn("crash turn", "never stored"))
"""


def test_a_crash_between_the_memory_and_registry_writes_leaves_neither(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.sqlite'}"
    store = open_thread_store(url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("first", "kept"))
    before = memory.conversations("s1")
    store.close()
    crashed = subprocess.run(
        [sys.executable, "-c", CRASH_SCRIPT, url, SECRET], cwd=REPO, capture_output=True
    )
    assert crashed.returncode == 9, crashed.stderr.decode()
    store = open_thread_store(url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    try:
        texts = [m["text"] for m in memory.hydrate("s1", "c1")["messages"]]
        assert texts == ["first", "kept"]
        assert memory.conversations("s1") == before
    finally:
        store.close()
