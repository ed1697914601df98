"""Structured output through the real `ChatOpenAI` client against servers that refuse a
format, as llama-cpp-python's (HTTP 500 on `json_schema`) and llama.cpp's `llama-server`
(no forced tool call) do: the ladder, what it learns, what it counts, what it sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from langchain_core.callbacks import BaseCallbackHandler
from pydantic import BaseModel

from agent.models import chat_openai
from graphs.structured import (
    StructuredOutputError,
    StructuredPolicy,
    learned_method,
)
from memory.conversations import ConversationMemory
from tests.integration.openai_support import (
    CONVERSATION,
    SESSION,
    compile_graph,
    run,
    settings_for,
)
from tests.openai_stub import OpenAIStub, Refusable, Reply, request_shape


class Weather(BaseModel):
    """A weather report."""

    city: str
    celsius: int


WEATHER = {"city": "Lisbon", "celsius": 21}


@pytest.fixture
def refusing(request: pytest.FixtureRequest) -> Iterator[OpenAIStub]:
    with OpenAIStub(refuse=request.param) as stub:
        yield stub


def weather_call(stub: OpenAIStub, policy: StructuredPolicy, retries: int = 2) -> Any:
    model = chat_openai(stub.base_url, "stub-model", timeout=10, max_retries=retries)
    return policy.bind(model, Weather, max_tokens=64)


def shapes(stub: OpenAIStub) -> list[str | None]:
    return [request_shape(request) for request in stub.requests]


@pytest.mark.parametrize("refusing", [("json_schema",)], indirect=True)
def test_auto_moves_past_a_refused_json_schema_before_any_retry_and_keeps_the_method(
    refusing: OpenAIStub,
) -> None:
    policy = StructuredPolicy("auto")
    call = weather_call(refusing, policy)  # the client would retry a 500 twice
    refusing.reply_json(WEATHER)
    assert call.invoke("report") == Weather(**WEATHER)
    assert shapes(refusing) == ["json_schema", "forced_tool"]
    assert learned_method(call.model) == "function_calling"

    refusing.reply_json({"city": "Porto", "celsius": 18})
    assert call.invoke("again").city == "Porto"  # straight to the learned method
    assert shapes(refusing) == ["json_schema", "forced_tool", "forced_tool"]
    for request in refusing.requests:  # the newer name, and the one every server reads
        assert request["max_completion_tokens"] == request["max_tokens"] == 64
    counts = policy.stats.snapshot()
    assert (counts["calls"], counts["refusals"], counts["fallbacks"]) == (2, 1, 1)
    assert counts["parse_failures"] == counts["retries"] == 0


@pytest.mark.parametrize("refusing", [("json_schema", "forced_tool")], indirect=True)
def test_json_mode_carries_the_schema_in_the_prompt_and_parses_a_wrapped_answer(
    refusing: OpenAIStub,
) -> None:
    call = weather_call(refusing, StructuredPolicy("auto"))
    answer = (
        "<think>The user wants {JSON}.</think>Sure! Here it is:\n"
        '```json\n{"city": "Lisbon", "celsius": 21}\n```'
    )
    refusing.reply_text(answer)
    assert call.invoke("report") == Weather(**WEATHER)
    assert shapes(refusing) == ["json_schema", "forced_tool", "json_object"]
    (system,) = [m for m in refusing.last_request["messages"] if m["role"] == "system"]
    schema = json.loads(system["content"].split("JSON schema:\n", 1)[1])
    assert set(schema["properties"]) == {"city", "celsius"}


@pytest.mark.parametrize("refusing", [("json_schema",)], indirect=True)
def test_a_fixed_method_never_falls_back(refusing: OpenAIStub) -> None:
    call = weather_call(refusing, StructuredPolicy("json_schema"), retries=0)
    with pytest.raises(openai.InternalServerError):
        call.invoke("report")
    assert shapes(refusing) == ["json_schema"]


def test_an_answer_that_does_not_validate_is_counted_and_not_retried() -> None:
    with OpenAIStub() as stub:
        policy = StructuredPolicy("json_schema")
        call = weather_call(stub, policy)
        stub.reply_text('{"city": "Lisbon"}')  # celsius missing
        with pytest.raises(StructuredOutputError):
            call.invoke("report")
        assert len(stub.requests) == 1
        assert policy.stats.snapshot()["parse_failures"] == 1


def test_a_transient_error_is_retried_by_the_ladder() -> None:
    with OpenAIStub() as stub:
        policy = StructuredPolicy("function_calling")
        call = weather_call(stub, policy, retries=1)
        stub.enqueue(Reply.error(503, "overloaded"), Reply.json(WEATHER))
        assert call.invoke("report") == Weather(**WEATHER)
        assert len(stub.requests) == 2
        assert policy.stats.snapshot()["retries"] == 1


@pytest.mark.parametrize(
    "refuse", [("json_schema",), ("forced_tool",), ("json_schema", "forced_tool")]
)
def test_the_agent_compacts_on_a_server_that_refuses_a_format(
    memory: ConversationMemory, refuse: tuple[Refusable, ...]
) -> None:
    with OpenAIStub(refuse=refuse) as stub:
        settings = settings_for(stub, "auto").model_copy(update={"max_retries": 2})
        graph = compile_graph(settings, memory)
        for n in range(4):
            stub.reply_text(f"answer {n}")
            run(graph, f"question {n}")
        stub.reply_text("answer 4")
        summary = {"summary": "Questions 0 to 2.", "pinned_decisions": [], "retired_pins": []}
        stub.reply_json(summary)
        final, _ = run(graph, "question 4")
        assert (final["answer"], final["compaction"]) == ("answer 4", "succeeded")
        assert memory.read_memory(SESSION, CONVERSATION).summary == "Questions 0 to 2."
        # one try per refused format down the ladder, no retry, then the one accepted
        ladder = ["json_schema", "forced_tool", "json_object"]
        tried = ladder[: next(n for n, shape in enumerate(ladder) if shape not in refuse) + 1]
        assert [s for s in shapes(stub) if s is not None] == tried
        assert stub.pending == 0


class ChatStarts(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts = 0

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.starts += 1


@pytest.mark.parametrize("refusing", [("json_schema",)], indirect=True)
def test_a_bound_model_keeps_its_callbacks_and_arguments_on_every_rung(
    refusing: OpenAIStub,
) -> None:
    # `bind_tools` reaches through a binding to the bare model: the function-calling rung
    # would otherwise drop a caller's callbacks (a tracer, a call counter) and arguments
    seen = ChatStarts()
    model = chat_openai(refusing.base_url, "stub-model", timeout=10, max_retries=2)
    bound = model.bind(stop=["END"]).with_config(callbacks=[seen])
    call = StructuredPolicy("auto").bind(bound, Weather, max_tokens=64)  # type: ignore[arg-type]
    refusing.reply_json(WEATHER)
    assert call.invoke("report") == Weather(**WEATHER)
    assert shapes(refusing) == ["json_schema", "forced_tool"]  # the 500 not retried
    assert seen.starts == 2
    assert [request.get("stop") for request in refusing.requests] == [["END"], ["END"]]
