"""The delivery route under a real `langgraph dev` server (offline model), via `langgraph_sdk`
and via the HTTP API that `langgraph dev` mounts (ChatAgent inside the server)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langgraph_sdk import get_client

from memory import assert_client_safe
from tests.integration.conftest import Server, memory_of
from tests.integration.http_support import api_client

pytestmark = pytest.mark.integration

REQUEST = "/delivery write a migration plan, a rollback script then a test checklist"
STAGES = {"load_request", "plan_delivery", "execute_tasks", "review_delivery", "synthesize_report"}
RUNTIME_TEXTS = ("Offline work product", "Offline quality note", "Offline risk note")


async def new_thread(server: Server) -> str:
    thread = await get_client(url=server.url).threads.create()
    return str(thread["thread_id"])


async def wait_run(server: Server, thread_id: str, payload: dict[str, Any]) -> Any:
    client = get_client(url=server.url)
    return await client.runs.wait(thread_id, "agent", input=payload, raise_error=False)


def test_completed_delivery_streams_progress_and_writes_request_and_report_once(
    langgraph_dev: Server,
) -> None:
    async def go() -> tuple[list[Any], Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread_id = await new_thread(langgraph_dev)
        custom = [
            part.data
            async for part in client.runs.stream(
                thread_id,
                "agent",
                input={"message": REQUEST},
                stream_mode="custom",
                stream_subgraphs=True,
            )
            if part.event.startswith("custom")
        ]
        state = await client.threads.get_state(thread_id)
        return custom, state["values"], await memory_of(langgraph_dev, thread_id)

    custom, output, hydration = asyncio.run(go())
    progress = [e for e in custom if isinstance(e, dict) and e.get("workflow") == "delivery"]
    assert {e["stage"] for e in progress} == STAGES
    reviewers = {e.get("reviewer") for e in progress if e["stage"] == "review_delivery"}
    assert reviewers == {"quality", "risk", "boundary"}
    assert (output["route"], output["status"], output["memory_written"]) == (
        "delivery",
        "completed",
        True,
    )
    assert_client_safe(hydration)
    assert [m["text"] for m in hydration["messages"]] == [
        REQUEST.removeprefix("/delivery "),
        answer := output["messages"][-1]["content"],  # the thread keeps the answer there only
    ]
    assert "answer" not in output and answer.startswith("# Delivery report")
    assert not any(text in json.dumps(hydration) for text in RUNTIME_TEXTS)
    assert not {"artifacts", "verdicts", "plan", "failures"} & set(output)


def test_blocked_delivery_is_written_once_and_the_next_turn_sees_it(
    langgraph_dev: Server,
) -> None:
    async def go() -> tuple[Any, Any, Any, Any]:
        thread_id = await new_thread(langgraph_dev)
        blocked = await wait_run(
            langgraph_dev,
            thread_id,
            {
                "message": "drop and recreate the production database with no tests",
                "mode": "delivery",
            },
        )
        after_blocked = await memory_of(langgraph_dev, thread_id)
        chat = await wait_run(langgraph_dev, thread_id, {"message": "what did you deliver?"})
        return blocked, after_blocked, chat, await memory_of(langgraph_dev, thread_id)

    blocked, after_blocked, chat, after_chat = asyncio.run(go())
    assert (blocked["status"], blocked["memory_written"]) == ("blocked", True)
    assert "**Risk review:** blocking:" in blocked["answer"]
    assert len(after_blocked["messages"]) == 2
    # the offline chat model reports the memory it was sent: the request and the report
    assert "I can see 2 earlier message(s)" in chat["answer"]
    assert "drop and recreate the production database" in chat["answer"]
    assert after_chat["messages"][1]["text"] == blocked["answer"]
    assert not any(text in json.dumps(after_chat) for text in RUNTIME_TEXTS)


def test_a_long_report_is_cut_in_memory_and_delivered_whole(langgraph_dev: Server) -> None:
    parts = ", ".join(f"deliver part {n}" for n in range(700))  # one deliverable per clause

    async def go() -> tuple[Any, Any]:
        thread_id = await new_thread(langgraph_dev)
        output = await wait_run(langgraph_dev, thread_id, {"message": f"/delivery {parts}"})
        return output, await memory_of(langgraph_dev, thread_id)

    output, hydration = asyncio.run(go())
    report = output["answer"]
    assert output["status"] == "completed" and len(report) > 20_000
    assert "deliver part 699" in report  # the user receives the whole report
    kept = hydration["messages"][1]["text"]
    head, marker = kept.rsplit("\n", 1)
    assert len(kept) <= 8_000 and marker.startswith("[Report truncated:")
    assert report.startswith(head) and len(head) > 7_500


@pytest.mark.parametrize("message", ["/delivery   ", "/delivery " + "x" * 16_001])
def test_bad_delivery_input_fails_the_run_clearly_and_writes_nothing(
    langgraph_dev: Server, message: str
) -> None:
    async def go() -> tuple[Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread_id = await new_thread(langgraph_dev)
        run = await client.runs.create(thread_id, "agent", input={"message": message})
        await client.runs.join(thread_id, run["run_id"])
        finished = await client.runs.get(thread_id, run["run_id"])
        await wait_run(langgraph_dev, thread_id, {"message": "hello"})
        return finished, await memory_of(langgraph_dev, thread_id)

    finished, good = asyncio.run(go())
    assert finished["status"] == "error"
    assert [m["text"] for m in good["messages"]][::2] == ["hello"]


def test_delivery_over_the_http_api_of_the_same_server(langgraph_dev: Server) -> None:
    with api_client(langgraph_dev.url, timeout=60) as client:
        response = client.post("/api/chat", json={"message": REQUEST, "createConversation": True})
        assert response.status_code == 200, response.text
        cid = response.headers["X-Conversation-Id"]
        events = [
            json.loads(line.removeprefix("data:").strip())
            for line in response.text.splitlines()
            if line.startswith("data:")
        ]
        stages = {e.get("stage") for e in events if e.get("workflow") == "delivery"}
        assert stages == STAGES
        assert "event: token" not in response.text  # stage model calls never stream as answer
        done = [e for e in events if "result" in e][-1]["result"]
        assert (done["status"], done["route"], done["memoryWritten"]) == (
            "completed",
            "delivery",
            True,
        )
        hydration = client.get("/api/chat/thread", params={"conversationId": cid}).json()
        assert_client_safe(hydration)
        assert [m["text"] for m in hydration["messages"]][1] == done["text"]
        bad = client.post(
            "/api/chat", json={"message": "/delivery " + "x" * 16_001, "conversationId": cid}
        )
        assert bad.status_code == 413
        after = client.get("/api/chat/thread", params={"conversationId": cid}).json()
        assert after["messages"] == hydration["messages"]
    assert "Blocking call" not in langgraph_dev.log.read_text()
