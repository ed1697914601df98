"""Long-term memory through the real clients against the local OpenAI-compatible stub:
model extraction through `ChatOpenAI`, embeddings through `OpenAIEmbeddings`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import IndexConfig
from langgraph.store.memory import InMemoryStore

from agent import ChatAgent
from agent.models import load_chat_model, load_compaction_model, load_embeddings
from agent.offline import OfflineChatModel
from agent.runtime import open_long_term, open_memory
from agent.settings import Settings
from graphs.agent import build_agent_graph
from graphs.prompts import AGENT_SYSTEM_PROMPT
from memory import ThreadIds, UnsupportedDatabaseUrl
from memory.context import RECALL_BLOCK_ID
from memory.conversations import ConversationMemory
from memory.longterm.store import LongTermMemory
from memory.prompts import LONG_TERM_BLOCK
from memory.storage.locks import KeyedLocks
from tests.integration.openai_support import COMPACTION_MODEL, run, settings_for, wire
from tests.openai_stub import OpenAIStub
from tests.openai_wire import EMBEDDING_DIMS

pytestmark = pytest.mark.integration


def long_term_of(memory: ConversationMemory, **options: Any) -> LongTermMemory:
    threads = memory.threads
    return LongTermMemory(threads.open_items(), threads.locks, memory.ids, **options)


def test_model_extraction_goes_through_chat_openai(
    stub: OpenAIStub, memory: ConversationMemory
) -> None:
    settings = settings_for(stub)
    users = long_term_of(memory)
    graph = build_agent_graph(
        model=load_chat_model(settings),
        compaction_model=load_compaction_model(settings),
        memory=memory,
        structured_output_method=settings.structured_output_method,
        long_term=users,
        extraction="model",
    ).compile(checkpointer=InMemorySaver())
    stub.reply_text("Noted.")
    stub.reply_json(
        {
            "operations": [
                {
                    "op": "add",
                    "turn": 1,
                    "quote": "From now on, answer in English",
                    "kind": "style",
                    "text": "Answer in English",
                    "importance": 4,
                }
            ]
        }
    )
    final, events = run(graph, "From now on, answer in English please.")
    assert final["remembered"] == ["Answer in English"]
    assert events[-2:] == [
        {"event": "memory", "stage": "remember", "status": "succeeded", "remembered": 1,
         "retired": 0},
        {"event": "memory", "stage": "upkeep", "status": "done"},  # the record settled
    ]  # fmt: skip
    request = stub.last_request
    assert (request["model"], request["temperature"]) == (COMPACTION_MODEL, 0)
    schema = request["response_format"]["json_schema"]["schema"]
    assert set(schema["properties"]) == {"operations"}
    document = json.loads(request["messages"][-1]["content"])
    assert document == {
        "turns": [
            {
                "turn": 1,
                "assistant_before": "",
                "user": "From now on, answer in English please.",
            }
        ],
        "current_memories": [],
        "history": [],
    }
    # a trivial turn makes no extraction request, and its context carries the item
    stub.reply_text("Paris.")
    run(graph, "ok")
    assert len(stub.requests) == 3
    assert wire(stub.last_request)[:2] == [
        ("system", AGENT_SYSTEM_PROMPT),
        ("system", LONG_TERM_BLOCK.format(items="- [style] Answer in English")),
    ]


def test_embeddings_rank_through_openai_embeddings(stub: OpenAIStub) -> None:
    settings = Settings(
        openai_api_key="test-key",
        openai_base_url=stub.base_url,
        embeddings_model="stub-embed",
        max_retries=0,
    )
    embeddings = load_embeddings(settings)
    store = InMemoryStore(index=IndexConfig(dims=EMBEDDING_DIMS, embed=embeddings, fields=["text"]))
    users = LongTermMemory(store, KeyedLocks(), ThreadIds("x" * 32), semantic=True)
    users.remember("s", "I play chess on weekends", kind="fact")
    users.remember("s", "My cat is called Miso", kind="fact")
    recalled = users.recall("s", "any chess openings for me?")
    assert recalled[0].text == "I play chess on weekends"
    sent = [r for r in stub.requests if r.get("model") == "stub-embed"]
    assert sent and all(isinstance(r["input"], list) for r in sent)  # texts, not token ids


def embedding_settings(stub: OpenAIStub, tmp_path: Path) -> Settings:
    return Settings(
        openai_api_key="test-key",
        openai_base_url=stub.base_url,
        embeddings_model="stub-embed",
        embeddings_dims=EMBEDDING_DIMS,
        max_retries=0,
        data_dir=tmp_path / "data",
    )


def embedding_requests(stub: OpenAIStub) -> list[list[str]]:
    return [r["input"] for r in stub.requests if r.get("model") == "stub-embed"]


def test_long_term_memory_ranks_through_sqlites_vector_index(
    stub: OpenAIStub, tmp_path: Path
) -> None:
    settings = embedding_settings(stub, tmp_path)
    memory = open_memory(settings, database_url=f"sqlite:///{tmp_path / 'a.sqlite'}")
    try:
        users = open_long_term(settings, memory)
        users.remember("s", "I play chess on weekends", kind="fact")
        users.remember("s", "My cat is called Miso", kind="fact")
        assert users.recall("s", "any chess openings for me?")[0].text == "I play chess on weekends"
        documents: Any = memory.threads.documents  # SQLite: the shared connection
        with documents.lock:
            (indexed,) = documents.conn.execute("SELECT COUNT(*) FROM store_vectors").fetchone()
        assert indexed == 2  # the store's own vector index, in the same file
        assert ["any chess openings for me?"] in embedding_requests(stub)
    finally:
        memory.threads.close()


def test_a_store_opened_without_its_vector_index_refuses_one(
    stub: OpenAIStub, memory: ConversationMemory, tmp_path: Path
) -> None:
    # this Python's sqlite3 cannot load sqlite-vec: the store must be opened with vectors
    # (as `open_memory` does when embeddings are set), or say so, never half-work
    assert not hasattr(sqlite3.Connection, "enable_load_extension")
    with pytest.raises(UnsupportedDatabaseUrl, match=r"AGENT_EMBEDDINGS_MODEL .* sqlite3"):
        open_long_term(embedding_settings(stub, tmp_path), memory)


def test_the_archive_recalls_through_openai_embeddings(stub: OpenAIStub, tmp_path: Path) -> None:
    model = OfflineChatModel(record=True)
    agent = ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'agent.sqlite'}",
        model=model,
        secret="s" * 40,
        settings=embedding_settings(stub, tmp_path),
        long_term_memory="off",  # the archive alone carries it
    )
    try:
        fact = "My boat is moored in the harbour of Vigo"
        agent.send(fact, session_id="s1", create_conversation=True)
        assert agent.wait_for_upkeep(30)  # the line is embedded after the turn
        # long-term recall, the archive's recall and the upkeep's line all asked for the
        # message's vector: it was sent once
        assert embedding_requests(stub) == [[fact]]
        documents: Any = agent.memory.threads.documents
        with documents.lock:
            (embedded,) = documents.conn.execute("SELECT COUNT(*) FROM archive_vectors").fetchone()
        assert embedded == 1
        agent.send("Where is my boat?", session_id="s1", create_conversation=True)
        block = next(m.text for m in model.calls[-1] if m.id == RECALL_BLOCK_ID)
        assert fact in block
        agent.send("Where is my boat?", session_id="s2", create_conversation=True)
        assert all(fact not in m.text for m in model.calls[-1])  # never another session's
    finally:
        agent.close()
