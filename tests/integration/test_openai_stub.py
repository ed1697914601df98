"""Integration tests: the real ChatOpenAI client against the local OpenAIStub server."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic import BaseModel

from tests.openai_stub import OpenAIStub, Reply

pytestmark = pytest.mark.integration

MODEL = "gpt-4o-mini"


class Weather(BaseModel):
    """Weather report for a city."""

    city: str
    celsius: int


@tool
def get_weather(city: str) -> str:
    """Look up the current weather in a city."""
    return f"sunny in {city}"


def chat(stub: OpenAIStub, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL, base_url=stub.base_url, api_key="test", max_retries=0, timeout=5, **kwargs
    )


def test_text_reply_is_returned_and_request_recorded(stub: OpenAIStub) -> None:
    stub.reply_text("Hello there")

    reply = chat(stub, temperature=0).invoke([HumanMessage("hi")])

    assert isinstance(reply, AIMessage)
    assert reply.content == "Hello there"
    assert reply.response_metadata["finish_reason"] == "stop"
    assert reply.response_metadata["model_name"] == MODEL
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["total_tokens"] > 0
    request = stub.last_request
    assert request["model"] == MODEL
    assert request["temperature"] == 0
    assert request["messages"] == [{"role": "user", "content": "hi"}]
    assert stub.pending == 0


def test_replies_are_served_in_order(stub: OpenAIStub) -> None:
    stub.reply_text("first")
    stub.reply_text("second")
    model = chat(stub)

    assert [model.invoke("a").content, model.invoke("b").content] == ["first", "second"]
    assert [r["messages"][-1]["content"] for r in stub.requests] == ["a", "b"]


def test_streaming_text_arrives_in_several_chunks(stub: OpenAIStub) -> None:
    text = "The quick brown fox jumps over the lazy dog."
    stub.reply_text(text)

    chunks = list(chat(stub).stream("go"))

    contents = [chunk.content for chunk in chunks if chunk.content]
    assert len(contents) > 1
    assert "".join(str(c) for c in contents) == text
    assert stub.last_request["stream"] is True


def test_streaming_reports_usage_when_requested(stub: OpenAIStub) -> None:
    stub.reply_text("counted words")

    chunks = list(chat(stub, stream_usage=True).stream("go"))

    assert stub.last_request["stream_options"] == {"include_usage": True}
    merged = sum(chunks[1:], chunks[0])
    assert isinstance(merged, AIMessageChunk)
    assert merged.usage_metadata is not None
    assert merged.usage_metadata["output_tokens"] > 0


def test_tool_call_is_parsed(stub: OpenAIStub) -> None:
    stub.reply_tool_calls([{"name": "get_weather", "arguments": {"city": "Paris"}}])

    reply = chat(stub).bind_tools([get_weather]).invoke("weather in Paris?")

    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert reply.tool_calls[0]["id"]
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    (sent_tool,) = stub.last_request["tools"]
    assert sent_tool["function"]["name"] == "get_weather"
    assert sent_tool["function"]["parameters"]["properties"] == {"city": {"type": "string"}}


def test_streamed_tool_calls_reassemble(stub: OpenAIStub) -> None:
    stub.reply_tool_calls(
        [
            {"name": "get_weather", "arguments": {"city": "Paris"}, "id": "call_a"},
            {"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_b"},
        ]
    )

    chunks = list(chat(stub).bind_tools([get_weather]).stream("two cities"))

    merged = sum(chunks[1:], chunks[0])
    assert isinstance(merged, AIMessageChunk)
    assert [(c["id"], c["args"]) for c in merged.tool_calls] == [
        ("call_a", {"city": "Paris"}),
        ("call_b", {"city": "Oslo"}),
    ]


def test_structured_output_json_schema(stub: OpenAIStub) -> None:
    stub.reply_json({"city": "Paris", "celsius": 21})

    result = chat(stub).with_structured_output(Weather, method="json_schema").invoke("report")

    assert result == Weather(city="Paris", celsius=21)
    response_format = stub.last_request["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Weather"
    assert set(response_format["json_schema"]["schema"]["properties"]) == {"city", "celsius"}
    assert "tools" not in stub.last_request


def test_structured_output_function_calling(stub: OpenAIStub) -> None:
    stub.reply_json({"city": "Oslo", "celsius": -3})

    result = chat(stub).with_structured_output(Weather, method="function_calling").invoke("go")

    assert result == Weather(city="Oslo", celsius=-3)
    request = stub.last_request
    assert request["tool_choice"] == {"type": "function", "function": {"name": "Weather"}}
    assert [t["function"]["name"] for t in request["tools"]] == ["Weather"]
    assert "response_format" not in request


# langchain-openai's streamed structured output dumps `parsed` through a model typed
# as None (langchain-ai/langchain#35538); the warning is upstream noise, not ours.
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_structured_output_streams_with_json_schema(stub: OpenAIStub) -> None:
    stub.reply_json({"city": "Rome", "celsius": 30})

    structured = chat(stub).with_structured_output(Weather, method="json_schema")
    results = list(structured.stream("report"))

    assert results[-1] == Weather(city="Rome", celsius=30)


def test_error_reply_raises_openai_error(stub: OpenAIStub) -> None:
    stub.reply_error(429, "slow down")

    with pytest.raises(openai.RateLimitError, match="slow down") as caught:
        chat(stub).invoke("hi")

    assert caught.value.status_code == 429
    assert caught.value.body == {
        "message": "slow down",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }


def test_unscripted_request_fails_loudly_without_retries(stub: OpenAIStub) -> None:
    model = ChatOpenAI(model=MODEL, base_url=stub.base_url, api_key="test", timeout=5)

    with pytest.raises(openai.InternalServerError, match="no scripted reply left"):
        model.invoke("hi")

    assert len(stub.requests) == 1  # x-should-retry: false stopped the default retries


def test_default_reply_serves_an_empty_queue() -> None:
    with OpenAIStub(default=Reply.text("fallback")) as stub:
        stub.reply_text("scripted")
        model = chat(stub)

        assert [model.invoke(str(i)).content for i in range(3)] == [
            "scripted",
            "fallback",
            "fallback",
        ]


def test_delay_holds_the_request_open(stub: OpenAIStub) -> None:
    stub.reply_text("too late", delay=2.0)
    model = ChatOpenAI(
        model=MODEL, base_url=stub.base_url, api_key="test", max_retries=0, timeout=0.3
    )

    with pytest.raises(openai.APITimeoutError):
        model.invoke("hi")

    assert len(stub.wait_for_requests(1)) == 1


def test_async_client_is_served(stub: OpenAIStub) -> None:
    stub.reply_text("async hello")

    reply = asyncio.run(chat(stub).ainvoke("hi"))

    assert reply.content == "async hello"


def test_models_endpoint_lists_models(stub: OpenAIStub) -> None:
    client = openai.OpenAI(base_url=stub.base_url, api_key="test", max_retries=0)

    ids = [model.id for model in client.models.list()]

    assert MODEL in ids


def test_unknown_path_is_a_json_404(stub: OpenAIStub) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{stub.base_url}/completions", data=b"{}", timeout=5)

    assert caught.value.code == 404
    body = json.loads(caught.value.read())
    assert "unknown endpoint POST /v1/completions" in body["error"]["message"]
    assert stub.requests == []
