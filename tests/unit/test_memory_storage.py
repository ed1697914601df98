"""Checkpointer-backed storage: one checkpoint per thread, persistence, serialised writers."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from memory import ThreadIds, UnsupportedDatabaseUrl
from memory.conversations import ConversationMemory
from memory.errors import LockTimeout, StorageError
from memory.schema import ThreadState
from memory.storage import open_thread_store, parse_database_url
from memory.storage.locks import FileLocks
from memory.turns import chat_turn
from tests.conftest import SECRET
from tests.storage_support import iter_thread_ids


def test_memory_documents_are_one_document_each_and_no_checkpoint(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft("s1", "c1")
    for i in range(12):
        memory.write_turn("s1", "c1", chat_turn(f"q{i}", f"a{i}"))
    store = memory.threads
    threads = [memory.memory_thread("s1", "c1"), memory.ids.registry_thread("s1")]
    assert store.documents is not store.checkpointer
    assert sorted(store.documents.list_threads("")) == sorted(threads)
    for thread in threads:
        assert store.checkpoint_count(thread) == 0
        assert store.checkpointer.get_tuple({"configurable": {"thread_id": thread}}) is None
    assert [m.text for m in memory.read_memory("s1", "c1").messages][-2:] == ["q11", "a11"]


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
    assert [m.text for m in memory.read_memory("s1", "c1").messages] == ["nested", "from a node"]


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
    assert len(memory.read_memory("s1", "c1").messages) == 2
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
    state = memory.read_memory("s1", "c1")
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


def test_extra_statements_share_the_documents_transaction(
    memory: ConversationMemory,
) -> None:
    store = memory.threads
    marks = "?" if store.documents.dialect == "sqlite" else "%s"
    with store.documents.transaction() as cur:
        cur.execute("CREATE TABLE IF NOT EXISTS side_rows (thread_id TEXT, note TEXT)")

    def note(cur: Any) -> None:
        cur.execute(f"INSERT INTO side_rows VALUES ({marks}, {marks})", ("t1", "noted"))

    def note_then_fail(cur: Any) -> None:
        note(cur)
        raise RuntimeError("the caller's own statement failed")

    def side_rows() -> list[Any]:
        with store.documents.transaction() as cur:
            return [
                tuple(row.values()) if isinstance(row, dict) else tuple(row)
                for row in cur.execute("SELECT thread_id, note FROM side_rows").fetchall()
            ]

    store.put_many({"t1": {"v": 1}}, also=note)
    assert store.get("t1") == {"v": 1} and side_rows() == [("t1", "noted")]
    with pytest.raises(StorageError):
        store.put_many({"t1": {"v": 2}}, delete=["t2"], also=note_then_fail)
    # all or nothing: neither the document nor the extra row was written
    assert store.get("t1") == {"v": 1} and side_rows() == [("t1", "noted")]
    with store.documents.transaction() as cur:
        cur.execute("DROP TABLE side_rows")


def test_documents_stored_as_checkpoints_move_to_their_own_table(db_url: str) -> None:
    """A database from before the documents table: each memory document was the only
    checkpoint of its thread, with a `document` channel."""
    store = open_thread_store(db_url)
    document = {"messages": [], "summary": "kept across the upgrade"}
    legacy = empty_checkpoint()
    legacy["channel_values"] = {"document": document}
    legacy["channel_versions"] = {"document": store.checkpointer.get_next_version(None, None)}
    metadata: Any = {"source": "update", "step": 0, "parents": {}}
    config: RunnableConfig = {"configurable": {"thread_id": "old-doc", "checkpoint_ns": ""}}
    store.checkpointer.put(config, legacy, metadata, dict(legacy["channel_versions"]))
    run = empty_checkpoint()
    run_config: RunnableConfig = {"configurable": {"thread_id": "old-run", "checkpoint_ns": ""}}
    store.checkpointer.put(run_config, run, {"source": "loop", "step": 1, "parents": {}}, {})
    with store.documents.transaction() as cur:
        if store.documents.dialect == "sqlite":  # written as the old code wrote it
            cur.execute(
                "UPDATE checkpoints SET metadata = ? WHERE thread_id = 'old-doc'",
                (json.dumps(metadata).encode(),),
            )
        cur.execute("DROP TABLE memory_documents")
    store.close()

    store = open_thread_store(db_url)
    try:
        assert store.get("old-doc") == document
        assert store.checkpoint_count("old-doc") == 0
        assert store.checkpoint_count("old-run") == 1  # run threads stay where they are
    finally:
        store.close()
