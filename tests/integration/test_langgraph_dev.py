"""The real `langgraph dev` server serving the agent graph, driven with `langgraph_sdk`."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client

from memory import assert_client_safe
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration


async def wait_run(server: Server, thread_id: str, payload: dict[str, Any]) -> Any:
    client = get_client(url=server.url)
    return await client.runs.wait(thread_id, "agent", input=payload, raise_error=False)


def test_two_runs_on_one_thread_remember_the_first(langgraph_dev: Server) -> None:
    async def go() -> tuple[Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        first = await wait_run(
            langgraph_dev, thread["thread_id"], {"message": "We decided to always use PostgreSQL."}
        )
        second = await wait_run(
            langgraph_dev, thread["thread_id"], {"message": "What did we decide?"}
        )
        return thread, (first, second)

    thread, (first, second) = asyncio.run(go())
    assert first["status"] == "completed" and first["memory_written"] is True
    hydration = second["hydration"]
    assert_client_safe(hydration)
    assert hydration["conversationId"] == thread["thread_id"]
    assert [m["text"] for m in hydration["messages"]][0::2] == [
        "We decided to always use PostgreSQL.",
        "What did we decide?",
    ]
    # the offline model quotes the previous user message it received from memory
    assert "We decided to always use PostgreSQL." in second["answer"]


def test_studio_chat_input_and_tool_route(langgraph_dev: Server) -> None:
    async def go() -> Any:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        return await wait_run(
            langgraph_dev,
            thread["thread_id"],
            {"messages": [{"role": "human", "content": "what is 12*(3+4)?"}]},
        )

    output = asyncio.run(go())
    assert (output["route"], output["status"]) == ("tool", "completed")
    assert "84" in output["answer"]
    assert [m["type"] for m in output["messages"]] == ["human", "ai"]
    assert [m["role"] for m in output["hydration"]["messages"]] == ["user", "assistant"]


def test_bad_input_fails_the_run_clearly_and_writes_nothing(langgraph_dev: Server) -> None:
    async def go() -> tuple[Any, Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        run = await client.runs.create(thread["thread_id"], "agent", input={"message": "   "})
        await client.runs.join(thread["thread_id"], run["run_id"])
        finished = await client.runs.get(thread["thread_id"], run["run_id"])
        good = await wait_run(langgraph_dev, thread["thread_id"], {"message": "hello"})
        return finished, good, thread

    finished, good, _ = asyncio.run(go())
    assert finished["status"] == "error"
    # the failed turn left nothing behind: the next turn's memory holds only itself
    assert good["hydration"]["messages"][0]["text"] == "hello"
    assert len(good["hydration"]["messages"]) == 2


def test_the_http_api_is_served_in_the_same_process(langgraph_dev: Server) -> None:
    with httpx.Client(base_url=langgraph_dev.url, timeout=30) as client:
        response = client.post(
            "/api/chat", json={"message": "what is 6*7?", "createConversation": True}
        )
        assert response.status_code == 200, response.text
        cid = response.headers["X-Conversation-Id"]
        assert "event: done" in response.text
        listed = client.get("/api/conversations").json()["conversations"]
        assert [c["id"] for c in listed] == [cid]
        hydration = client.get("/api/chat/thread", params={"conversationId": cid}).json()
        assert_client_safe(hydration)
        assert hydration["messages"][1]["text"].endswith("6*7 = 42.")
    assert "Blocking call" not in langgraph_dev.log.read_text()
