"""The real-model lane: the agent on `AGENT_MODEL=local` (SmolLM2-135M-Instruct served by
llama-cpp-python on 127.0.0.1), every model-facing path once.

These tests assert structure, never wording: answered, not degraded, upkeep not failed,
every stored item quoting the user, every pin grounded in the conversation, every call
bounded on the wire. They run in one worker, one after another, on one server. Skipped
when llama-cpp-python or the GGUF is not installed (`make local-model`); with CI=true
that is a failure.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent
from agent.local_model import LocalModelUnavailable, model_path, serve
from agent.settings import Settings
from evals.wire import Wire, recording

pytestmark = pytest.mark.integration

MAX_TOKENS = 256
"""The lane's bound on every answer: small, so that the lane stays within minutes, and
room enough for an extraction of two operations (about 100 tokens each)."""
SESSION = "lane"
WORD = re.compile(r"\w{3,}")


def _settings(tmp_path: Path, long_term: str = "off") -> Settings:
    return Settings.from_env(
        {
            "AGENT_MODEL": "local",
            "AGENT_ANSWER_TOKENS": str(MAX_TOKENS),
            "AGENT_DATABASE_URL": f"sqlite:///{tmp_path / 'agent.db'}",
            "AGENT_DATA_DIR": str(tmp_path / "data"),
            "AGENT_SESSION_SECRET": "a-local-model-lane-secret-of-32-chars",
            "AGENT_LONG_TERM_MEMORY": long_term,
            "AGENT_STRUCTURED_OUTPUT_METHOD": "function_calling",
            "AGENT_EXTRACTION_BATCH_TURNS": "1",  # each turn's upkeep extracts
        }
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """One server for the module: each test's agent shares it; stopped at the end."""
    settings = _settings(tmp_path_factory.mktemp("server"))
    try:
        model_path(settings)
    except LocalModelUnavailable as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the local model is not installed: {exc}")
        pytest.skip(str(exc))
    _endpoint, release = serve(settings)
    yield
    release()


MAX_STRUCTURED_TOKENS = 2_000
"""The largest bound a structured task sets (compaction's)."""


@pytest.fixture(scope="module")
def wire() -> Iterator[Wire]:
    """Every chat-completion call of the module, recorded at openai's HTTP client."""
    with recording() as recorded:
        yield recorded
    assert recorded.calls, "no call reached the local server"
    for call in recorded.calls:
        assert call.status == 200, call
        # `max_tokens` is the field this server reads: the chat answer's bound, or the
        # bound a structured task sets for itself
        bound = call.request.get("max_tokens")
        assert isinstance(bound, int) and 0 < bound <= MAX_STRUCTURED_TOKENS, call
        if call.structured is None:
            assert bound == MAX_TOKENS
        tokens = call.completion_tokens
        assert tokens is None or tokens <= bound


@pytest.fixture
def agent(
    server: None, wire: Wire, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[ChatAgent]:
    """An agent of its own per test, on the module's server; long-term extraction only
    where a test asks for it (`agent` parametrised with "model"): each extraction is a
    grammar-constrained call, the slowest kind on a CPU."""
    long_term = getattr(request, "param", "off")
    with ChatAgent(settings=_settings(tmp_path, long_term)) as opened:
        yield opened


@dataclass
class Turn:
    events: list[dict[str, Any]]

    @property
    def result(self) -> dict[str, Any]:
        done = [event for event in self.events if event["event"] == "done"]
        assert len(done) == 1, self.events
        return dict(done[0]["result"])

    def memory(self, stage: str) -> list[str]:
        return [e["status"] for e in self.events if e["event"] == "memory" and e["stage"] == stage]


def turn(agent: ChatAgent, message: str, conversation: str | None, mode: Any = "auto") -> Turn:
    """One streamed turn, with the memory events of its upkeep (they follow `done`)."""

    async def collect() -> list[dict[str, Any]]:
        events = agent.astream(
            message,
            session_id=SESSION,
            conversation_id=conversation,
            create_conversation=conversation is None,
            mode=mode,
        )
        return [dict(event) async for event in events]

    return Turn(asyncio.run(collect()))


def assert_answered(step: Turn, route: str = "chat") -> dict[str, Any]:
    result = step.result
    assert result["status"] == "completed", step.events
    assert result["text"].strip()
    assert result["route"] == route
    assert not result["degraded"]
    for stage in ("upkeep", "remember", "compact"):
        assert "failed" not in step.memory(stage), step.events
    return result


def assert_items_quote_the_user(agent: ChatAgent, said: list[str]) -> None:
    listing = agent.memories(session_id=SESSION, include_history=True)
    words = " ".join(" ".join(text.split()).lower() for text in said)
    for item in [*listing["memories"], *listing["history"]]:
        quote = " ".join(item["provenance"]["quote"].split()).lower()
        assert quote and quote in words, item


def test_chat_streams_an_answer(agent: ChatAgent) -> None:
    step = turn(agent, "Hello! What is the capital of France?", None)
    assert any(event["event"] == "token" for event in step.events)
    assert_answered(step)


def test_a_tool_turn(agent: ChatAgent) -> None:
    step = turn(agent, "What is 6 times 7? Use the calculator.", None, mode="tool")
    assert_answered(step, route="tool")


def test_compaction_after_more_than_eight_messages_keeps_only_grounded_pins(
    agent: ChatAgent,
) -> None:
    lines = [
        "We are planning the Lisbon offsite for the design team.",
        "Decision: the offsite is on 14 March, and we fly with TAP.",
        "How many rooms should we book for twelve people?",
        "Decision: the budget is 9000 euros in total.",
        "Which neighbourhood is good for the hotel?",
    ]
    conversation: str | None = None
    said: list[str] = []
    compacted: list[str] = []
    for line in lines:
        step = turn(agent, line, conversation)
        result = step.result
        assert result["status"] == "completed" and result["text"].strip()
        assert not result["degraded"]
        conversation = result["conversationId"]
        said += [line, result["text"]]
        compacted += [s for s in step.memory("compact") if s not in ("started", "skipped")]
    assert conversation is not None
    memory = agent.hydrate(session_id=SESSION, conversation_id=conversation)
    assert compacted, "ten messages, and no compaction ran"
    assert compacted[-1] in ("succeeded", "fallback")
    assert memory["upkeep"] != "failed"
    assert memory["summaryVersion"] >= 1  # ten messages: the older ones were folded
    words = set(WORD.findall(" ".join(said).lower()))
    for pin in memory["pinnedDecisions"]:
        assert set(WORD.findall(pin.lower())) <= words, pin


@pytest.mark.parametrize("agent", ["model"], indirect=True)
def test_extraction_a_change_and_a_forgetting_go_through_the_gate(agent: ChatAgent) -> None:
    said = [
        "I work as a nurse in Porto, and my favourite colour is teal.",
        "Actually, my favourite colour is green now, not teal. And forget that I am a nurse.",
    ]
    conversation = None
    failed = []
    for line in said:
        step = turn(agent, line, conversation)
        result = step.result
        assert result["status"] == "completed" and result["text"].strip()
        assert not result["degraded"]
        conversation = result["conversationId"]
        remembered = step.memory("remember")
        assert remembered, step.events  # an extraction ran for each turn
        failed += [s for s in [*remembered, *step.memory("upkeep")] if s == "failed"]
    # an answer of the wrong form is refused (nothing of it stored), never a failure
    assert failed == [], step.events
    assert_items_quote_the_user(agent, said)  # whatever came back, nothing unverified


def test_a_new_conversation_answers_beside_the_first(agent: ChatAgent) -> None:
    first = turn(agent, "I am learning Portuguese this year.", None)
    conversation = assert_answered(first)["conversationId"]
    second = turn(agent, "Can you suggest a good book?", None)
    assert assert_answered(second)["conversationId"] != conversation
    listed = agent.conversations(session_id=SESSION)["conversations"]
    assert len(listed) == 2
    kept = agent.hydrate(session_id=SESSION, conversation_id=conversation)["messages"]
    assert [m["text"] for m in kept if m["role"] == "user"] == [
        "I am learning Portuguese this year."
    ]


SERVE_AND_WAIT = """\
import sys, time
from agent.local_model import serve
from agent.settings import Settings
settings = Settings.from_env({"AGENT_MODEL": "local", "AGENT_DATA_DIR": sys.argv[1]})
endpoint, _release = serve(settings)
print(endpoint.base_url, flush=True)
time.sleep(600)
"""


def test_a_killed_agent_leaves_no_server_behind(server: None, tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", SERVE_AND_WAIT, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        models = child.stdout.readline().strip() + "/models"
        with urllib.request.urlopen(models, timeout=10) as answer:
            assert answer.status == 200
    finally:
        child.kill()  # no atexit, no cleanup: only the pipe closes
        child.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(models, timeout=2).close()
        except OSError:
            return
        time.sleep(0.5)
    pytest.fail("the server outlived the process that started it")
