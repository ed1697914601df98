"""Settings a server applies: the context budget (a message that cannot fit the model's
context is a 413, and nothing is stored) and the retention policy (swept at start-up)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agent import ChatAgent
from agent.settings import Settings
from tests.fakes import PacedModel, StepClock
from tests.integration.conftest import Server, start_uvicorn, stop
from tests.integration.http_support import (
    api_client,
    assert_clean_error,
    chat,
    listed,
    new_conversation,
)
from tests.storage_support import iter_thread_ids

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def small_budget(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app with a 4,000-token context budget: about 4,000 characters fit a message."""
    workdir: Path = tmp_path_factory.mktemp("budget")
    server = start_uvicorn("create", workdir, AGENT_CONTEXT_BUDGET_TOKENS="4000")
    try:
        yield server
    finally:
        stop(server.process)


def test_an_over_budget_message_is_refused_before_anything_is_stored(
    small_budget: Server,
) -> None:
    with api_client(small_budget.url, timeout=30) as client:
        too_long = "w" * 10_000  # under the 16,000-character limit, over the budget
        refused = chat(client, too_long, createConversation=True)
        assert_clean_error(refused, 413, "message_too_long")
        assert "too long for the model's context" in refused.json()["error"]["message"]
        assert listed(client) == []  # no draft left behind
        cid = new_conversation(client, "hello")
        assert_clean_error(chat(client, too_long, conversationId=cid), 413, "message_too_long")
        thread = client.get("/api/chat/thread", params={"conversationId": cid}).json()
        assert [m["text"] for m in thread["messages"]][0::2] == ["hello"]


def test_a_starting_server_applies_the_retention_policy(tmp_path: Path) -> None:
    """The app sweeps at start-up: a conversation idle for longer than
    AGENT_RETENTION_DAYS is gone (registry entry and threads) once the server is up."""
    url = f"sqlite:///{tmp_path / 'agent.sqlite'}"
    settings = Settings(data_dir=tmp_path / "data", long_term_memory="off")
    with ChatAgent(
        database_url=url, model=PacedModel(), secret="t" * 40, settings=settings
    ) as agent:
        agent.memory.clock = StepClock(datetime(2026, 1, 1, tzinfo=UTC))
        agent.send("long ago", session_id="s", create_conversation=True)
        assert len(list(iter_thread_ids(agent.memory.threads))) == 3
    server = start_uvicorn("create", tmp_path, AGENT_RETENTION_DAYS="1")
    try:
        deadline = time.monotonic() + 20
        with ChatAgent(
            database_url=url, model=PacedModel(), secret="t" * 40, settings=settings
        ) as agent:
            while list(iter_thread_ids(agent.memory.threads)):
                assert time.monotonic() < deadline, "the start-up sweep did not run"
                time.sleep(0.1)
    finally:
        stop(server.process)
