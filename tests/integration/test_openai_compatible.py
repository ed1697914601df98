"""Integration tests: the real agent graph and ChatOpenAI client against the local OpenAIStub.

What the provider is sent (the context, the tools, the compaction schema) is the product
here, so the tests assert on the recorded request bodies as much as on the run results.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessageChunk

from agent.settings import StructuredOutputMethod
from graphs.prompts import AGENT_SYSTEM_PROMPT
from memory.conversations import ConversationMemory
from memory.prompts import PINNED_BLOCK, SUMMARY_BLOCK
from tests.integration.openai_support import (
    CHAT_MODEL,
    COMPACTION_MODEL,
    CONVERSATION,
    SESSION,
    Graph,
    compile_graph,
    run,
    run_config,
    run_context,
    settings_for,
    stored,
    tool_names,
    wire,
)
from tests.openai_stub import OpenAIStub

pytestmark = pytest.mark.integration

COMPACTION_FIELDS = {"summary", "pinned_decisions", "retired_pins"}
QUESTION_FIELDS = {"open_questions", "resolved_questions"}
"""Optional in the model: one that leaves them out keeps the open questions as they are."""
PROVIDER_SECRET = "upstream-trace-7f3a provider exploded at /srv/internal"


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
        text for node, text in streamed_chunks(graph, "stream please") if node == "chat" and text
    ]
    values = graph.get_state(run_config()).values

    assert stub.last_request["stream"] is True
    assert len(tokens) > 1
    assert "".join(tokens) == answer
    assert values["messages"][-1].content == answer
    assert stored(memory) == [("user", "stream please"), ("assistant", answer)]


def run_four_turns(stub: OpenAIStub, graph: Graph) -> None:
    for i in range(4):
        stub.reply_text(f"answer {i}")
        final, _ = run(graph, f"question {i}")
        assert final["compaction"] == "skipped"


def assert_compaction_request(request: dict[str, Any], method: StructuredOutputMethod) -> None:
    """The compaction request: its model, its structured-output form for `method`, the
    schema's fields, and the folded turns as its only input."""
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
            # a pin stands on the words of a folded message
            "pinned_decisions": [{"text": "Answer question 1 first.", "quote": "question 1"}],
            "retired_pins": [],
        }
    )

    final, events = run(graph, "question 4")

    assert (final["answer"], final["compaction"]) == ("answer 4", "succeeded")
    assert len(stub.requests) == 6
    assert_compaction_request(stub.last_request, method)

    after = memory.read_memory(SESSION, CONVERSATION)
    assert [m.text for m in after.messages] == ["question 3", "answer 3", "question 4", "answer 4"]
    assert after.summary == "The user asked questions 0 to 2."
    assert after.pinned_decisions == ["Answer question 1 first."]
    assert [(e["stage"], e["status"]) for e in events[-2:]] == [
        ("compact", "succeeded"),
        ("upkeep", "done"),
    ]

    # the next chat request carries the compacted memory as its stable prefix
    stub.reply_text("answer 5")
    run(graph, "question 5")
    assert wire(stub.last_request) == [
        ("system", AGENT_SYSTEM_PROMPT),
        ("system", PINNED_BLOCK.format(pins="1. Answer question 1 first.")),
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

    # a server error leaves compaction owed; an answer of the wrong form (the same model
    # would give it again) is replaced at once by the deterministic summary
    status = "failed" if failure == "http_500" else "fallback"
    assert (final["status"], final["answer"], final["compaction"]) == (
        "completed",
        "answer 4",
        status,
    )
    assert final["degraded"] is False
    assert len(stub.requests) == 6  # one compaction attempt, no retries
    assert stub.last_request["model"] == COMPACTION_MODEL
    after = memory.read_memory(SESSION, CONVERSATION)
    assert after.pinned_decisions == []
    if failure == "http_500":
        assert len(after.messages) == 10 and after.summary == ""
    else:
        assert len(after.messages) < 10 and '"question 0"' in after.summary
        assert PROVIDER_SECRET not in after.summary
    assert [(e["stage"], e["status"]) for e in events[-2:]] == [
        ("compact", status),
        ("upkeep", "failed" if failure == "http_500" else "done"),
    ]
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
    assert memory.read_memory(SESSION, CONVERSATION).summary == "SECRET-SUMMARY"
    assert {node for node, _ in streamed} == {"chat"}
    assert "SECRET-SUMMARY" not in "".join(text for _, text in streamed)
