"""The real `langgraph dev` server serving the agent graph, driven with `langgraph_sdk`."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from langgraph_sdk import get_client

from agent.api.sessions import COOKIE_NAME
from memory import assert_client_safe
from tests.integration.conftest import Server, memory_of
from tests.integration.http_support import api_client

pytestmark = pytest.mark.integration


async def wait_run(
    server: Server, thread_id: str, payload: dict[str, Any], context: Any = None
) -> Any:
    client = get_client(url=server.url)
    return await client.runs.wait(
        thread_id, "agent", input=payload, context=context, raise_error=False
    )


def test_two_runs_on_one_thread_remember_the_first(langgraph_dev: Server) -> None:
    async def go() -> tuple[Any, Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        first = await wait_run(
            langgraph_dev, thread["thread_id"], {"message": "We decided to always use PostgreSQL."}
        )
        second = await wait_run(
            langgraph_dev, thread["thread_id"], {"message": "What did we decide?"}
        )
        return thread, (first, second), await memory_of(langgraph_dev, thread["thread_id"])

    thread, (first, second), hydration = asyncio.run(go())
    assert first["status"] == "completed" and first["memory_written"] is True
    assert "hydration" not in second  # a run holds its turn, not the memory
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
        output = await wait_run(
            langgraph_dev,
            thread["thread_id"],
            {"messages": [{"role": "human", "content": "what is 12*(3+4)?"}]},
        )
        return output, await memory_of(langgraph_dev, thread["thread_id"])

    output, hydration = asyncio.run(go())
    assert (output["route"], output["status"]) == ("tool", "completed")
    assert "84" in output["answer"]
    assert [m["type"] for m in output["messages"]] == ["human", "ai"]
    assert [m["role"] for m in hydration["messages"]] == ["user", "assistant"]


def test_bad_input_fails_the_run_clearly_and_writes_nothing(langgraph_dev: Server) -> None:
    async def go() -> tuple[Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        run = await client.runs.create(thread["thread_id"], "agent", input={"message": "   "})
        await client.runs.join(thread["thread_id"], run["run_id"])
        finished = await client.runs.get(thread["thread_id"], run["run_id"])
        await wait_run(langgraph_dev, thread["thread_id"], {"message": "hello"})
        return finished, await memory_of(langgraph_dev, thread["thread_id"])

    finished, good = asyncio.run(go())
    assert finished["status"] == "error"
    # the failed turn left nothing behind: the next turn's memory holds only itself
    assert good["messages"][0]["text"] == "hello"
    assert len(good["messages"]) == 2


def test_the_http_api_is_served_in_the_same_process(langgraph_dev: Server) -> None:
    with api_client(langgraph_dev.url, timeout=30) as client:
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


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("PUT", "/api/conversations", 405, "method_not_allowed"),
        ("GET", "/api/chat", 405, "method_not_allowed"),
        ("DELETE", "/api/memories/x/y", 404, "not_found"),
    ],
)
def test_a_wrong_method_is_405_under_langgraph_dev_too(
    langgraph_dev: Server, method: str, path: str, status: int, code: str
) -> None:
    with api_client(langgraph_dev.url, timeout=30) as client:
        response = client.request(method, path)
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code
    if status == 405:
        assert method not in response.headers["allow"]


def test_a_delivery_that_never_pauses_never_reads_interrupted(langgraph_dev: Server) -> None:
    """The `updates` stream of a delivery: `load_memory` says `running`, not `interrupted`."""

    async def go() -> list[Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        return [
            part.data
            async for part in client.runs.stream(
                thread["thread_id"],
                "agent",
                input={"message": "/delivery write a short test checklist for the login page"},
                stream_mode="updates",
            )
            if part.event == "updates"
        ]

    updates = asyncio.run(go())
    statuses = [u[node]["status"] for u in updates for node in u if "status" in (u[node] or {})]
    load = next(u["load_memory"] for u in updates if "load_memory" in u)
    assert load["status"] == "running"
    assert "interrupted" not in statuses and statuses[-1] == "completed"


def test_the_chat_page_is_served_at_the_root(langgraph_dev: Server) -> None:
    """The app's `/` (the chat page) shadows LangGraph's root health route; `/ok` and
    LangGraph's own routes stay LangGraph's."""
    with api_client(langgraph_dev.url, timeout=30) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert '<script type="module" src="/web/app.js">' in page.text
        module = client.get("/web/app.js")
        assert module.status_code == 200
        assert module.headers["content-type"].startswith("text/javascript")
        assert client.get("/ok").json()["ok"] is True
        assert client.post("/threads", json={}).status_code == 200


def studio_input(text: str) -> dict[str, Any]:
    """What Studio's chat view (and `useStream`) sends: a message with an id."""
    return {"messages": [{"type": "human", "content": text, "id": str(uuid.uuid4())}]}


async def streamed_messages(
    server: Server, thread_id: str, payload: dict[str, Any], *, subgraphs: bool
) -> list[Any]:
    """The message events a `messages-tuple` client receives for one run."""
    client = get_client(url=server.url)
    received = []
    async for part in client.runs.stream(
        thread_id,
        "agent",
        input=payload,
        stream_mode="messages-tuple",
        stream_subgraphs=subgraphs,
    ):
        if part.event.startswith("messages"):
            received.append(part.data[0])
    return received


@pytest.fixture(scope="module")
def remembering_thread(langgraph_dev: Server) -> str:
    """A thread whose memory has a summary and recent messages: worth leaking."""

    async def go() -> str:
        thread = await get_client(url=langgraph_dev.url).threads.create()
        for text in ("We decided to always use PostgreSQL.", "Second turn.") * 3:
            await wait_run(langgraph_dev, thread["thread_id"], {"message": text})
        return str(thread["thread_id"])

    return asyncio.run(go())


@pytest.mark.parametrize("subgraphs", [False, True])
def test_a_messages_stream_shows_the_answer_once_and_nothing_else(
    langgraph_dev: Server, remembering_thread: str, subgraphs: bool
) -> None:
    """Hardening 9: no prompt, no memory blocks, no memory messages; one answer."""

    async def go() -> tuple[list[Any], Any]:
        client = get_client(url=langgraph_dev.url)
        tid = remembering_thread
        payload = studio_input("And now?")
        received = await streamed_messages(langgraph_dev, tid, payload, subgraphs=subgraphs)
        return received, await client.threads.get_state(tid)

    received, state = asyncio.run(go())
    # one answer: chunks of one message (with subgraphs), or the message whole (without)
    assert {m["type"] for m in received} == ({"AIMessageChunk"} if subgraphs else {"ai"})
    assert len({m["id"] for m in received}) == 1
    final = state["values"]["messages"][-1]["content"]  # the thread keeps the answer there
    assert "".join(m["content"] for m in received) == final
    assert "We decided" in final  # the model did see the memory
    # the thread's state carries no memory context and no prompt either
    values = state["values"]
    assert "context" not in values and "memory_summary" not in values
    dumped = json.dumps(values)
    assert "helpful, precise assistant" not in dumped  # the system prompt
    assert "Summary of the earlier conversation" not in dumped
    assert values["turn_messages"] == []  # a working copy, emptied when the turn ends
    assert [m["type"] for m in values["messages"]] == ["human", "ai"]


def test_a_tool_turns_messages_stream_carries_the_call_the_result_and_the_answer(
    langgraph_dev: Server,
) -> None:
    """What docs/api.md says of Studio's message stream on a tool turn: the model's tool
    call, the tool's result, then the answer; no prompt, no memory."""

    async def go() -> tuple[list[Any], Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        tid = thread["thread_id"]
        received = await streamed_messages(
            langgraph_dev, tid, studio_input("what is 6*7?"), subgraphs=False
        )
        return received, await client.threads.get_state(tid)

    received, state = asyncio.run(go())
    assert [m["type"] for m in received] == ["ai", "tool", "ai"]
    assert received[0]["tool_calls"] and received[0]["tool_calls"][0]["name"] == "calculator"
    assert received[1]["content"] == "42"
    assert received[2]["content"] == state["values"]["messages"][-1]["content"]


def test_the_route_event_tells_the_truth(langgraph_dev: Server) -> None:
    """A tool turn announces one route, `tool`: the route the turn took."""

    async def go() -> list[Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        routes = []
        async for part in client.runs.stream(
            thread["thread_id"],
            "agent",
            input={"message": "what is 6*7?"},
            stream_mode=["custom", "values"],
        ):
            if part.event == "custom" and part.data.get("event") == "route":
                routes.append(part.data["route"])
            elif part.event == "values":
                final = part.data
        return [routes, final]

    routes, final = asyncio.run(go())
    assert final["route"] == "tool"
    assert routes == ["tool"]


def test_the_graph_status_agrees_while_a_review_is_pending(langgraph_dev: Server) -> None:
    """Hardening 11: `runs.wait` and `get_state` say `interrupted` during a review."""

    async def go() -> tuple[Any, Any]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        output = await wait_run(
            langgraph_dev, thread["thread_id"], {"message": "/tasklist Plan a small launch."}
        )
        return output, await client.threads.get_state(thread["thread_id"])

    output, state = asyncio.run(go())
    assert output["__interrupt__"] and output["status"] == "interrupted"
    assert state["values"]["status"] == "interrupted" and state["interrupts"]


def test_a_memory_said_over_http_is_recalled_in_a_studio_run(langgraph_dev: Server) -> None:
    """One long-term store for the HTTP app and the graph: an item added through the API is
    in a Studio run's context for the same session id (and in no other session's), and
    one said in a Studio run is listed over HTTP."""

    async def run(text: str, session: str) -> Any:
        thread = await get_client(url=langgraph_dev.url).threads.create()
        payload = {"message": text}
        context = {"session_id": session}
        return await wait_run(langgraph_dev, thread["thread_id"], payload, context=context)

    with api_client(langgraph_dev.url, timeout=30) as client:
        created = client.post("/api/memories", json={"text": "I am vegetarian", "kind": "fact"})
        assert created.status_code == 201, created.text
        session_id = client.cookies[COOKIE_NAME].partition(".")[0]
        mine = asyncio.run(run("what should I cook tonight?", session_id))
        theirs = asyncio.run(run("what should I cook tonight?", "someone-else"))
        assert "[fact] I am vegetarian" in mine["answer"]
        assert "vegetarian" not in theirs["answer"]
        said = asyncio.run(run("Please remember that I love jazz.", session_id))
        assert said["remembered"] == ["I love jazz"]
        listed = [m["text"] for m in client.get("/api/memories").json()["memories"]]
    assert sorted(listed) == ["I am vegetarian", "I love jazz"]
