"""Checkpointer-backed storage: one checkpoint per thread, persistence, serialised writers."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from memory import (
    ConversationMemory,
    ThreadIds,
    UnsupportedDatabaseUrl,
    open_thread_store,
)
from memory.errors import LockTimeout
from memory.locks import FileLocks
from memory.schema import ThreadState
from memory.storage import iter_thread_ids, parse_database_url
from memory.turns import chat_turn
from tests.conftest import SECRET


def test_one_checkpoint_per_memory_thread(memory: ConversationMemory) -> None:
    memory.accept_draft("s1", "c1")
    for i in range(12):
        memory.write_turn("s1", "c1", chat_turn(f"q{i}", f"a{i}"))
    store = memory.threads
    assert store.checkpoint_count(memory.memory_thread("s1", "c1")) == 1
    assert store.checkpoint_count(memory.ids.registry_thread("s1")) == 1
    # no pending writes linger on a memory thread
    for thread in (memory.memory_thread("s1", "c1"), memory.ids.registry_thread("s1")):
        saved = store.checkpointer.get_tuple({"configurable": {"thread_id": thread}})
        assert saved is not None and saved.pending_writes == []


def test_put_get_delete(memory: ConversationMemory) -> None:
    store = memory.threads
    assert store.get("t1") is None
    store.put("t1", {"a": 1})
    store.put("t1", {"b": 2})
    assert store.get("t1") == {"b": 2}
    store.delete("t1")
    assert store.get("t1") is None
    assert store.checkpoint_count("t1") == 0


def test_writes_from_inside_a_parent_graph_node_land(memory: ConversationMemory) -> None:
    class Outer(TypedDict):
        text: str

    def node(state: Outer) -> Outer:
        memory.write_turn("s1", "c1", chat_turn(state["text"], "from a node"))
        return state

    builder = StateGraph(Outer)
    builder.add_node(node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    outer = builder.compile(checkpointer=InMemorySaver())
    memory.accept_draft("s1", "c1")
    outer.invoke({"text": "nested"}, {"configurable": {"thread_id": "outer"}})
    assert [m.text for m in memory.load("s1", "c1").messages] == ["nested", "from a node"]


@pytest.mark.parametrize(
    ("url", "scheme", "location"),
    [
        ("sqlite:///.agent-data/agent.sqlite", "sqlite", ".agent-data/agent.sqlite"),
        ("sqlite:////tmp/abs.sqlite", "sqlite", "/tmp/abs.sqlite"),
        ("sqlite:///:memory:", "sqlite", ":memory:"),
        ("postgresql://u@h/db", "postgresql", "postgresql://u@h/db"),
    ],
)
def test_database_urls(url: str, scheme: str, location: str) -> None:
    parsed = parse_database_url(url)
    assert (parsed.scheme, parsed.location) == (scheme, location)


@pytest.mark.parametrize(
    "url", ["mysql://x/y", "sqlite://host/x", "sqlite:///", "agent.sqlite", ""]
)
def test_unsupported_urls_fail_clearly(url: str) -> None:
    with pytest.raises(UnsupportedDatabaseUrl, match="unsupported database URL"):
        open_thread_store(url)


def test_in_memory_sqlite_works() -> None:
    store = open_thread_store("sqlite:///:memory:")
    memory = ConversationMemory(store, ThreadIds(SECRET))
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("q", "a"))
    assert len(memory.load("s1", "c1").messages) == 2
    store.close()


def test_eight_threads_appending_to_one_conversation_lose_nothing(
    memory: ConversationMemory,
) -> None:
    def worker(n: int) -> None:
        for i in range(6):
            memory.write_turn("s1", "c1", chat_turn(f"t{n}-{i}", f"r{n}-{i}"))

    memory.accept_draft("s1", "c1")
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    state = memory.load("s1", "c1")
    # 48 turns = 96 appends: each write bumps the version exactly once
    assert state.version == 48
    assert len(state.messages) <= 16
    expected = {f"{kind}{n}-{i}" for kind in "tr" for n in range(8) for i in range(6)}
    assert all_texts_survive(state, expected)


def test_lock_timeout_and_release_within_a_process(tmp_path: Path) -> None:
    locks = FileLocks(tmp_path / "locks")
    outcome: list[str] = []

    def contender(key: str) -> None:
        try:
            with locks.hold(key, timeout=0.05):
                outcome.append(f"{key}: taken")
        except LockTimeout:
            outcome.append(f"{key}: timed out")

    with locks.hold("k"):
        for key in ("k", "other"):
            thread = threading.Thread(target=contender, args=(key,))
            thread.start()
            thread.join()
    contender("k")
    assert outcome == ["k: timed out", "other: taken", "k: taken"]


def all_texts_survive(state: ThreadState, expected: set[str]) -> bool:
    lines = {json.loads(line.split(": ", 1)[1]) for line in state.summary.splitlines()}
    return expected <= lines | {m.text for m in state.messages}


def test_thread_ids_are_listed_for_maintenance(memory: ConversationMemory) -> None:
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("q", "a"))
    assert set(iter_thread_ids(memory.threads)) == {
        memory.memory_thread("s1", "c1"),
        memory.ids.registry_thread("s1"),
    }


def test_direct_writes_are_the_memory_graphs_own_state(memory: ConversationMemory) -> None:
    store = memory.threads
    store.put("t1", {"v": 1})
    config: RunnableConfig = {"configurable": {"thread_id": "t1"}}
    assert store.graph.get_state(config).values == {"document": {"v": 1}}
    # running the memory graph on the same thread continues from the stored checkpoint
    store.graph.invoke({"document": {"v": 2}}, config)
    assert store.get("t1") == {"v": 2}
    store.put("t1", {"v": 3})
    assert store.graph.get_state(config).values == {"document": {"v": 3}}
    assert store.checkpoint_count("t1") == 1
