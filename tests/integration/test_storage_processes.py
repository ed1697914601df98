"""Storage across processes: persistence, cross-process locks, concurrent writers,
fresh databases opened together, and a crash in the middle of a turn's write."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from memory import ThreadIds
from memory.conversations import ConversationMemory
from memory.errors import LockTimeout
from memory.schema import ThreadState
from memory.storage import ThreadStore, open_thread_store
from memory.turns import chat_turn
from tests.conftest import SECRET

pytestmark = pytest.mark.integration

PROCESSES = multiprocessing.get_context("forkserver")
"""The other processes are forked from one server process that imported this module
(and the storage code) once: each starts in moments, with none of the test process's
threads or connections, so writers started together do run together."""
PROCESSES.set_forkserver_preload([__name__])
PROCESS_TIMEOUT_S = 120


def _answer(sender: Connection, target: Callable[..., Any], *args: Any) -> None:
    sender.send(target(*args))


def in_new_process(target: Callable[..., Any], *args: Any) -> tuple[int | None, Any]:
    """Run `target(*args)` in a process of its own: its exit code, and what it returned
    (None when it died first)."""
    receiver, sender = PROCESSES.Pipe(duplex=False)
    process = PROCESSES.Process(target=_answer, args=(sender, target, *args))
    process.start()
    sender.close()
    try:
        answer = receiver.recv() if receiver.poll(PROCESS_TIMEOUT_S) else None
    except EOFError:  # it ended without answering
        answer = None
    process.join(timeout=PROCESS_TIMEOUT_S)
    return process.exitcode, answer


def all_texts_survive(state: ThreadState, expected: set[str]) -> bool:
    lines = {json.loads(line.split(": ", 1)[1]) for line in state.summary.splitlines()}
    return expected <= lines | {m.text for m in state.messages}


def _reopen(db_url: str, secret: str) -> list[str]:
    store = open_thread_store(db_url)
    memory = ConversationMemory(store, ThreadIds(secret))
    try:
        texts = "|".join(m.text for m in memory.read_memory("s1", "c1").messages)
        return [texts, memory.conversations("s1")["conversations"][0]["title"]]
    finally:
        store.close()


def test_persists_across_a_reopen_in_a_new_process(db_url: str) -> None:
    store = open_thread_store(db_url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("remember me", "ok"))
    store.close()
    assert in_new_process(_reopen, db_url, SECRET) == (0, ["remember me|ok", "remember me"])


def _append_turns(db_url: str, worker: int, turns: int) -> None:
    store = open_thread_store(db_url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    for i in range(turns):
        memory.write_turn("s1", "c1", chat_turn(f"p{worker}-{i}", f"r{worker}-{i}"))
    store.close()


def test_two_processes_appending_to_one_conversation_lose_nothing(db_url: str) -> None:
    processes = [PROCESSES.Process(target=_append_turns, args=(db_url, n, 15)) for n in range(2)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=PROCESS_TIMEOUT_S)
    assert [p.exitcode for p in processes] == [0, 0]
    store = open_thread_store(db_url)
    state = ConversationMemory(store, ThreadIds(SECRET)).read_memory("s1", "c1")
    assert state.version == 30
    expected = {f"{kind}{n}-{i}" for kind in "pr" for n in range(2) for i in range(15)}
    assert all_texts_survive(state, expected)
    store.close()


def _probe_locks(db_url: str) -> list[str]:
    store = open_thread_store(db_url)
    seen = []
    try:
        with store.locks.hold("key-a", timeout=0.2):
            seen.append("free")
    except LockTimeout:
        seen.append("busy")
    with store.locks.hold("key-b", timeout=0.2):
        seen.append("free")
    store.close()
    return seen


def test_locks_exclude_across_processes(store: ThreadStore, db_url: str) -> None:
    with store.locks.hold("key-a"):
        probe = in_new_process(_probe_locks, db_url)
    assert probe == (0, ["busy", "free"])


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
    processes = [PROCESSES.Process(target=_open_and_write, args=(db_url, n)) for n in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=PROCESS_TIMEOUT_S)
    assert [p.exitcode for p in processes] == [0, 0, 0, 0]


def _crash_mid_write(url: str, secret: str) -> None:
    store = open_thread_store(url)
    memory = ConversationMemory(store, ThreadIds(secret))
    inserts = 0

    def trace(statement: str) -> None:
        nonlocal inserts
        if statement.lstrip().upper().startswith("INSERT") and "INTO memory_documents" in statement:
            inserts += 1
            if inserts == 2:  # the memory row is in, the registry row is next: die here
                os._exit(9)

    store.checkpointer.conn.set_trace_callback(trace)  # type: ignore[attr-defined]
    memory.write_turn("s1", "c1", chat_turn("crash turn", "never stored"))


def test_a_crash_between_the_memory_and_registry_writes_leaves_neither(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.sqlite'}"
    store = open_thread_store(url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("first", "kept"))
    before = memory.conversations("s1")
    store.close()
    assert in_new_process(_crash_mid_write, url, SECRET) == (9, None)
    store = open_thread_store(url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    try:
        texts = [m["text"] for m in memory.hydrate("s1", "c1")["messages"]]
        assert texts == ["first", "kept"]
        assert memory.conversations("s1") == before
    finally:
        store.close()
