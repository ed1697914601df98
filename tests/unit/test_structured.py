"""Structured output and bounded model calls: tolerant parsing validated on the client,
the extraction schema's required fields, the settings that pick the endpoint, and a
model given as `model=` that hangs (the turn ends, the conversation is free again)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import openai
import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel, ValidationError

from agent import ChatAgent
from agent.api.app import create_app
from agent.settings import LOCAL_CONTEXT_BUDGET_TOKENS, LOCAL_REQUEST_TIMEOUT_S, Settings
from graphs.bounded import ModelTimeout, bounded_invoke
from graphs.structured import StructuredOutputError, StructuredPolicy, first_json_object
from memory.longterm import ExtractionOutput
from tests.fakes import HangingModel, ScriptedModel


class Weather(BaseModel):
    city: str
    celsius: int


@pytest.mark.parametrize(
    "text",
    [
        '{"city": "Lisbon", "celsius": 21}',
        '```json\n{"city": "Lisbon", "celsius": 21}\n```',
        '<think>maybe {"city": "Paris"}?</think>\n{"city": "Lisbon", "celsius": 21}',
        '<think>unfinished thought {"city": "Paris"',
        'Here is the report {as asked}: {"city": "Lisbon", "celsius": 21} Hope it helps!',
        'Sure.\n```\n{"city": "Lisbon", "celsius": 21}\n```\nAnything else?',
    ],
)
def test_the_first_json_object_is_found_past_thoughts_fences_and_prose(text: str) -> None:
    if text.startswith("<think>unfinished"):
        with pytest.raises(ValueError, match="no JSON object"):
            first_json_object(text)  # a thought never closed holds no answer
        return
    assert first_json_object(text) == {"city": "Lisbon", "celsius": 21}


def test_an_answer_is_validated_on_the_client_and_a_bad_one_counted() -> None:
    policy = StructuredPolicy("auto")  # a scripted model has its own structured output
    model = ScriptedModel(structured=['```json\n{"city": "Lisbon", "celsius": 21}\n```'])
    assert policy.bind(model, Weather, max_tokens=50).invoke("x") == Weather(
        city="Lisbon", celsius=21
    )
    for bad in ({"city": "Lisbon"}, "no json here", '{"city": "Lisbon", "celsius": "warm"}'):
        model.structured.append(bad)
        with pytest.raises(StructuredOutputError):
            policy.bind(model, Weather, max_tokens=50).invoke("x")
    counts = policy.stats.snapshot()
    assert (counts["calls"], counts["parse_failures"]) == (4, 3)


def test_an_answer_cut_at_max_tokens_is_of_the_wrong_form_not_an_error() -> None:
    cut = openai.LengthFinishReasonError(completion=cast(Any, SimpleNamespace(usage=None)))
    policy = StructuredPolicy("auto")
    model = ScriptedModel(structured=[cut])
    with pytest.raises(StructuredOutputError, match="cut off"):
        policy.bind(model, Weather, max_tokens=50).invoke("x")
    assert policy.stats.snapshot()["parse_failures"] == 1


def test_an_add_must_say_what_it_adds() -> None:
    def add(**fields: Any) -> dict[str, Any]:
        return {"operations": [{"op": "add", "turn": 1, "quote": "I like tea", **fields}]}

    for missing in ({}, {"kind": "preference"}, {"text": "I like tea"}):
        with pytest.raises(ValidationError):
            ExtractionOutput.model_validate(add(**missing))
    with pytest.raises(ValidationError):
        ExtractionOutput.model_validate(add(kind="preference", text=""))
    with pytest.raises(ValidationError):  # a retire names its item
        ExtractionOutput.model_validate({"operations": [{"op": "retire", "turn": 1, "quote": "q"}]})
    (op,) = ExtractionOutput.model_validate(add(kind="preference", text="I like tea")).proposed()
    assert (op.op, op.kind, op.text, op.id) == ("add", "preference", "I like tea", None)
    schema = ExtractionOutput.model_json_schema()["$defs"]["ProposedAdd"]
    assert {"op", "turn", "quote", "kind", "text"} <= set(schema["required"])


def test_a_call_past_its_bound_raises_without_waiting_for_it() -> None:
    released = threading.Event()
    try:
        with pytest.raises(ModelTimeout):
            bounded_invoke(lambda: released.wait(60), 0.2)
        assert not released.is_set()  # the call still hangs: nobody waited for it
    finally:
        released.set()


def test_a_base_url_alone_selects_the_endpoint_with_defaults_for_a_local_one() -> None:
    assert Settings.from_env({}).offline
    assert Settings.from_env({}).structured_output_method == "auto"
    local = Settings.from_env({"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})
    assert not local.offline and local.openai_api_key is None
    assert local.request_timeout == LOCAL_REQUEST_TIMEOUT_S
    assert local.context_budget_tokens == LOCAL_CONTEXT_BUDGET_TOKENS <= 8_192 - 1_024
    for host in ("localhost", "[::1]"):
        assert Settings(openai_base_url=f"http://{host}:1/v1").request_timeout > 60
    remote = Settings.from_env({"OPENAI_BASE_URL": "https://models.example.com/v1"})
    assert (remote.request_timeout, remote.context_budget_tokens) == (60.0, 16_000)
    chosen = Settings.from_env(
        {
            "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1",
            "AGENT_REQUEST_TIMEOUT": "30",
            "AGENT_CONTEXT_BUDGET_TOKENS": "5000",
            "AGENT_STRUCTURED_OUTPUT_METHOD": "json_mode",
        }
    )
    assert (chosen.request_timeout, chosen.context_budget_tokens) == (30.0, 5_000)
    assert chosen.structured_output_method == "json_mode"


@pytest.fixture
def quick(tmp_path: Path) -> Settings:
    """Settings bounding every model call at half a second (each turn's upkeep extracts)."""
    return Settings(
        data_dir=tmp_path / "data", request_timeout=0.5, max_retries=0, extraction_batch_turns=1
    )


def test_a_hanging_chat_model_given_as_model_ends_the_turn_and_frees_the_conversation(
    open_agent: Callable[..., ChatAgent], quick: Settings
) -> None:
    model = HangingModel(replies=["fine"], structured=[ExtractionOutput(operations=[])] * 2)
    agent = open_agent(model, settings=quick)
    hung = agent.send("please hang", session_id="s1", create_conversation=True)
    assert hung.status == "failed"
    again = agent.send("hello", session_id="s1", conversation_id=hung.conversation_id)
    assert (again.status, again.text) == ("completed", "fine")


@pytest.fixture
def hanging() -> Iterator[Callable[[Any], Any]]:
    released = threading.Event()
    yield lambda _: released.wait(60)
    released.set()


def test_a_hanging_structured_model_fails_the_upkeep_visibly_and_stores_nothing(
    open_agent: Callable[..., ChatAgent], quick: Settings, hanging: Callable[[Any], Any]
) -> None:
    model = ScriptedModel(replies=["noted"], structured=[hanging])
    agent = open_agent(model, settings=quick)

    async def play() -> list[dict[str, Any]]:
        stream = agent.astream("I always drink tea", session_id="s1", create_conversation=True)
        return [dict(event) async for event in stream]

    events = asyncio.run(play())  # the upkeep's events follow `done`, until it ends
    memory = [e for e in events if e["event"] == "memory" and e["stage"] != "write"]
    assert memory[-2] == {
        "event": "memory",
        "stage": "remember",
        "status": "failed",
        "reason": "timeout",
    }
    assert memory[-1]["stage"] == "upkeep" and memory[-1]["status"] == "failed"
    assert memory[-1]["structured"]["timeouts"] == 1
    conversation_id = events[0]["conversationId"]
    assert agent.hydrate(session_id="s1", conversation_id=conversation_id)["upkeep"] == "failed"
    assert agent.long_term.items("s1") == []
    with TestClient(create_app(agent)) as client:
        counts = client.get("/api/health").json()["structured"]
    assert (counts["calls"], counts["timeouts"]) == (1, 1)
