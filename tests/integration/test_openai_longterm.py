"""Long-term memory through the real clients against the local OpenAI-compatible stub:
model extraction through `ChatOpenAI`, embeddings through `OpenAIEmbeddings`."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import IndexConfig
from langgraph.store.memory import InMemoryStore

from agent.models import load_chat_model, load_compaction_model, load_embeddings
from agent.runtime import open_long_term
from agent.settings import Settings
from graphs.agent import build_agent_graph
from graphs.prompts import AGENT_SYSTEM_PROMPT
from memory import ThreadIds, UnsupportedDatabaseUrl
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
            "memories": [{"kind": "style", "text": "Answer in English", "importance": 4}],
            "retire": [],
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
    assert set(schema["properties"]) == {"memories", "retire"}
    document = json.loads(request["messages"][-1]["content"])
    assert document == {
        "user_text": "From now on, answer in English please.",
        "current_memories": [],
    }
    # an ordinary turn makes no extraction request, and its context carries the item
    stub.reply_text("Paris.")
    run(graph, "What is the capital of France?")
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


def test_embeddings_need_a_vector_index_the_database_can_give(
    stub: OpenAIStub, memory: ConversationMemory
) -> None:
    settings = Settings(
        openai_api_key="test-key",
        openai_base_url=stub.base_url,
        embeddings_model="stub-embed",
        embeddings_dims=EMBEDDING_DIMS,
    )
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        users = open_long_term(settings, memory)
        users.remember("s", "I play chess on weekends", kind="fact")
        assert users.recall("s", "chess")[0].text == "I play chess on weekends"
    else:  # this Python's sqlite3 cannot load sqlite-vec: say so, do not half-work
        with pytest.raises(UnsupportedDatabaseUrl, match=r"AGENT_EMBEDDINGS_MODEL .* sqlite3"):
            open_long_term(settings, memory)
