"""Integration tests: the real agent graph and ChatOpenAI client against the local OpenAIStub.

What the provider is sent (the context, the tools, the compaction schema) is the product
here, so the tests assert on the recorded request bodies as much as on the run results.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import IndexConfig
from langgraph.store.memory import InMemoryStore

from agent.models import load_chat_model, load_compaction_model, load_embeddings
from agent.runtime import open_long_term
from agent.settings import Settings, StructuredOutputMethod
from agent.tools import BUILTIN_TOOLS
from graphs.agent import build_agent_graph
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.state import Context
from memory import ConversationMemory, ThreadIds, UnsupportedDatabaseUrl, open_thread_store
from memory.locks import KeyedLocks
from memory.longterm import LongTermMemory
from memory.prompts import LONG_TERM_BLOCK, PINNED_BLOCK, SUMMARY_BLOCK
from tests.openai_stub import EMBEDDING_DIMS, OpenAIStub

pytestmark = pytest.mark.integration

CHAT_MODEL = "stub-chat"
COMPACTION_MODEL = "stub-compact"
SESSION = "s1"
CONVERSATION = "c1"
COMPACTION_FIELDS = {"summary", "pinned_decisions", "retired_pins"}
QUESTION_FIELDS = {"open_questions", "resolved_questions"}
"""Optional in the model: one that leaves them out keeps the open questions as they are."""
PROVIDER_SECRET = "upstream-trace-7f3a provider exploded at /srv/internal"

Graph = CompiledStateGraph[Any, Any, Any, Any]


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    with OpenAIStub() as running:
        yield running


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[ConversationMemory]:
    threads = open_thread_store(f"sqlite:///{tmp_path}/a.sqlite")
    yield ConversationMemory(threads, ThreadIds("x" * 32))
    threads.close()


def settings_for(stub: OpenAIStub, method: StructuredOutputMethod = "json_schema") -> Settings:
    return Settings(
        openai_api_key="test-key",
        openai_base_url=stub.base_url,
        model=CHAT_MODEL,
        compaction_model=COMPACTION_MODEL,
        max_retries=0,
        request_timeout=10,
        structured_output_method=method,
    )


def compile_graph(settings: Settings, memory: ConversationMemory) -> Graph:
    model: BaseChatModel = load_chat_model(settings)
    compaction_model: BaseChatModel = load_compaction_model(settings)
    return build_agent_graph(
        model=model,
        compaction_model=compaction_model,
        memory=memory,
        tools=BUILTIN_TOOLS,
        structured_output_method=settings.structured_output_method,
    ).compile(checkpointer=InMemorySaver())


def run_config() -> RunnableConfig:
    return {"configurable": {"thread_id": f"run-{CONVERSATION}"}}


def run_context() -> Context:
    return Context(session_id=SESSION, conversation_id=CONVERSATION, mode="auto")


def run(graph: Graph, message: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One turn: the final output and the custom events."""

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        events: list[dict[str, Any]] = []
        final: dict[str, Any] = {}
        stream = graph.astream(
            {"message": message},
            run_config(),
            context=run_context(),
            stream_mode=["custom", "values"],
            subgraphs=True,
        )
        async for namespace, mode, chunk in stream:
            if mode == "custom":
                events.append(cast(dict[str, Any], chunk))
            elif not namespace:
                final = cast(dict[str, Any], chunk)
        return final, events

    return asyncio.run(go())


def wire(request: dict[str, Any]) -> list[tuple[str, str]]:
    """The (role, content) pairs of a recorded request's messages."""
    return [(m["role"], m["content"]) for m in request["messages"]]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def stored(memory: ConversationMemory) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in memory.load(SESSION, CONVERSATION).messages]


def test_chat_turns_send_memory_context_and_tools(
    stub: OpenAIStub, memory: ConversationMemory
) -> None:
    graph = compile_graph(settings_for(stub), memory)
    stub.reply_text("Hello, I am the stub.")
    stub.reply_text("You said hello.")

    first, _ = run(graph, "hello")

    assert (first["answer"], first["route"], first["status"]) == (
        "Hello, I am the stub.",
        "chat",
        "completed",
    )
    assert stored(memory) == [("user", "hello"), ("assistant", "Hello, I am the stub.")]
    (request,) = stub.requests
    assert request["model"] == CHAT_MODEL
    assert wire(request) == [("system", AGENT_SYSTEM_PROMPT), ("user", "hello")]
    assert tool_names(request) == {"calculator", "current_time"}

    second, _ = run(graph, "what did I say?")

    assert second["answer"] == "You said hello."
    assert wire(stub.last_request) == [
        ("system", AGENT_SYSTEM_PROMPT),
        ("user", "hello"),
        ("assistant", "Hello, I am the stub."),
        ("user", "what did I say?"),
    ]
    assert tool_names(stub.last_request) == {"calculator", "current_time"}
    assert len(stored(memory)) == 4
    assert stub.pending == 0


def test_tool_turn_runs_the_calculator_and_stores_final_text_only(
    stub: OpenAIStub, memory: ConversationMemory
) -> None:
    graph = compile_graph(settings_for(stub), memory)
    stub.reply_tool_calls(
        [{"name": "calculator", "arguments": {"expression": "6*7"}, "id": "call_calc"}]
    )
    stub.reply_text("6*7 is 42.")

    final, events = run(graph, "what is 6*7?")

    assert (final["answer"], final["route"], final["status"]) == ("6*7 is 42.", "tool", "completed")
    assert {"event": "tool_call", "name": "calculator", "id": "call_calc"} in events
    first, second = stub.requests
    assert tool_names(first) == tool_names(second) == {"calculator", "current_time"}
    call_turn = second["messages"][-2]
    assert call_turn["role"] == "assistant"
    assert [c["function"]["name"] for c in call_turn["tool_calls"]] == ["calculator"]
    result = second["messages"][-1]
    assert (result["role"], result["content"], result["tool_call_id"]) == (
        "tool",
        "42",
        "call_calc",
    )
    assert stored(memory) == [("user", "what is 6*7?"), ("assistant", "6*7 is 42.")]
    assert stub.pending == 0


def streamed_chunks(graph: Graph, message: str) -> list[tuple[str, str]]:
    """(node, text) of every AI message chunk a `messages` stream of one turn carries."""

    async def go() -> list[tuple[str, str]]:
        chunks: list[tuple[str, str]] = []
        stream = graph.astream(
            {"message": message},
            run_config(),
            context=run_context(),
            stream_mode="messages",
            subgraphs=True,
        )
        async for item in stream:
            _namespace, (chunk, metadata) = cast(
                tuple[tuple[str, ...], tuple[Any, dict[str, Any]]], item
            )
            if isinstance(chunk, AIMessageChunk):
                chunks.append((str(metadata.get("langgraph_node")), chunk.text))
        return chunks

    return asyncio.run(go())


def test_messages_stream_carries_the_providers_token_chunks(
    stub: OpenAIStub, memory: ConversationMemory
) -> None:
    graph = compile_graph(settings_for(stub), memory)
    answer = "Streaming works one word at a time."
    stub.reply_text(answer)

    tokens = [
        text
        for node, text in streamed_chunks(graph, "stream please")
        if node == "call_model" and text
    ]
    values = graph.get_state(run_config()).values

    assert stub.last_request["stream"] is True
    assert len(tokens) > 1
    assert "".join(tokens) == answer
    assert values["answer"] == answer
    assert stored(memory) == [("user", "stream please"), ("assistant", answer)]


def run_four_turns(stub: OpenAIStub, graph: Graph) -> None:
    for i in range(4):
        stub.reply_text(f"answer {i}")
        final, _ = run(graph, f"question {i}")
        assert final["compaction"] == "skipped"


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_compaction_goes_through_chat_openai(
    stub: OpenAIStub, memory: ConversationMemory, method: StructuredOutputMethod
) -> None:
    graph = compile_graph(settings_for(stub, method), memory)
    run_four_turns(stub, graph)
    stub.reply_text("answer 4")
    stub.reply_json(
        {
            "summary": "The user asked questions 0 to 2.",
            "pinned_decisions": ["Always answer in English."],
            "retired_pins": [],
        }
    )

    final, events = run(graph, "question 4")

    assert (final["answer"], final["compaction"]) == ("answer 4", "succeeded")
    assert len(stub.requests) == 6
    request = stub.last_request
    assert request["model"] == COMPACTION_MODEL
    assert request["temperature"] == 0
    if method == "json_schema":
        schema = request["response_format"]["json_schema"]["schema"]
        assert request["response_format"]["type"] == "json_schema"
        assert "tools" not in request
    else:
        (tool,) = request["tools"]
        assert request["tool_choice"] == {
            "type": "function",
            "function": {"name": tool["function"]["name"]},
        }
        schema = tool["function"]["parameters"]
        assert "response_format" not in request
    assert set(schema["properties"]) == COMPACTION_FIELDS | QUESTION_FIELDS
    # json_schema lists every property as required (OpenAI's strict form); function
    # calling only the ones without a default
    assert COMPACTION_FIELDS <= set(schema["required"]) <= COMPACTION_FIELDS | QUESTION_FIELDS
    # the compaction model sees the folded turns, not the chat tools or system prompt
    folded = json.loads(request["messages"][-1]["content"])["messages_to_fold"]
    assert folded[0] == {"role": "user", "text": "question 0"}
    assert folded[-1] == {"role": "assistant", "text": "answer 2"}
    assert all(m["content"] != AGENT_SYSTEM_PROMPT for m in request["messages"])

    after = memory.load(SESSION, CONVERSATION)
    assert [m.text for m in after.messages] == ["question 3", "answer 3", "question 4", "answer 4"]
    assert after.summary == "The user asked questions 0 to 2."
    assert after.pinned_decisions == ["Always answer in English."]
    assert events[-1]["stage"] == "compact" and events[-1]["status"] == "succeeded"

    # the next chat request carries the compacted memory as its stable prefix
    stub.reply_text("answer 5")
    run(graph, "question 5")
    assert wire(stub.last_request) == [
        ("system", AGENT_SYSTEM_PROMPT),
        ("system", PINNED_BLOCK.format(pins="1. Always answer in English.")),
        ("system", SUMMARY_BLOCK.format(summary="The user asked questions 0 to 2.")),
        ("user", "question 3"),
        ("assistant", "answer 3"),
        ("user", "question 4"),
        ("assistant", "answer 4"),
        ("user", "question 5"),
    ]
    assert stub.pending == 0


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
@pytest.mark.parametrize("failure", ["http_500", "invalid_json"])
def test_compaction_failure_keeps_the_turn_and_hides_provider_errors(
    stub: OpenAIStub,
    memory: ConversationMemory,
    method: StructuredOutputMethod,
    failure: str,
) -> None:
    graph = compile_graph(settings_for(stub, method), memory)
    run_four_turns(stub, graph)
    stub.reply_text("answer 4")
    if failure == "http_500":
        stub.reply_error(500, PROVIDER_SECRET)
    else:
        stub.reply_text(f"not JSON: {PROVIDER_SECRET}")

    final, events = run(graph, "question 4")

    assert (final["status"], final["answer"], final["compaction"]) == (
        "completed",
        "answer 4",
        "failed",
    )
    assert final["degraded"] is False
    assert len(stub.requests) == 6  # one compaction attempt, no retries
    assert stub.last_request["model"] == COMPACTION_MODEL
    after = memory.load(SESSION, CONVERSATION)
    assert len(after.messages) == 10
    assert (after.summary, after.pinned_decisions) == ("", [])
    assert events[-1]["stage"] == "compact" and events[-1]["status"] == "failed"
    assert "upstream-trace-7f3a" not in str(final)
    assert "upstream-trace-7f3a" not in str(events)


# langchain-openai's streamed structured output warns on its `parsed` field
# (langchain-ai/langchain#35538): upstream noise, not ours.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_compaction_output_never_streams_as_tokens(
    stub: OpenAIStub, memory: ConversationMemory
) -> None:
    graph = compile_graph(settings_for(stub), memory)
    run_four_turns(stub, graph)
    stub.reply_text("answer 4")
    stub.reply_json({"summary": "SECRET-SUMMARY", "pinned_decisions": [], "retired_pins": []})

    streamed = streamed_chunks(graph, "question 4")
    assert memory.load(SESSION, CONVERSATION).summary == "SECRET-SUMMARY"
    assert {node for node, _ in streamed} == {"call_model"}
    assert "SECRET-SUMMARY" not in "".join(text for _, text in streamed)


# -- long-term memory -----------------------------------------------------------------------


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
    assert events[-1] == {
        "event": "memory", "stage": "remember", "status": "succeeded", "remembered": 1, "retired": 0
    }  # fmt: skip
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
