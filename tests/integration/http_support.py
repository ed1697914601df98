"""Helpers of the HTTP tests: requests, the event stream, the error shape."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from agent.api.sessions import NEW_SESSION, SESSION_HEADER

SDK_HEADERS = {SESSION_HEADER: NEW_SESSION}
"""What a client that is not a browser sends to start its session on any first request."""
LEAKS = ("Traceback", ".py", "sqlite", "/tmp", "/work", "Error(")


def api_client(url: str, **options: Any) -> httpx.Client:
    """A client of the HTTP API as a script holds one: its first request starts a session
    (`X-Agent-Session: new`), the following ones carry its cookie."""
    return httpx.Client(base_url=url, headers=SDK_HEADERS, **options)


def events_of(response: httpx.Response) -> list[dict[str, Any]]:
    """The events of an SSE response (keep-alive comments skipped)."""
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        if "event" in lines:
            events.append({"event": lines["event"], **json.loads(lines["data"])})
    return events


def chat(
    client: httpx.Client, message: str, *, follow_upkeep: bool = True, **body: Any
) -> httpx.Response:
    """A turn, read to the end of its stream: with `follow_upkeep`, the end of the memory
    upkeep after `done` (what the turn owed is then done), else `done`."""
    params = {"followUpkeep": "true"} if follow_upkeep else {}
    return client.post("/api/chat", params=params, json={"message": message, **body})


def new_conversation(client: httpx.Client, message: str = "hello") -> str:
    response = chat(client, message, createConversation=True)
    assert response.status_code == 200, response.text
    return response.headers["X-Conversation-Id"]


def assert_clean_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code
    assert body["error"]["message"]
    for leak in LEAKS:
        assert leak not in response.text


def listed(client: httpx.Client) -> list[str]:
    return [c["id"] for c in client.get("/api/conversations").json()["conversations"]]


def after_first_token(response: httpx.Response) -> Iterator[str]:
    """Read a streamed turn up to its first token (the turn certainly runs then: its
    model answers); returns the iterator of the lines that follow."""
    lines = response.iter_lines()
    for line in lines:
        if line == "event: token":
            return lines
    raise AssertionError("the stream ended without a token")


def chat_when_free(
    client: httpx.Client, message: str, timeout: float = 15, **body: Any
) -> httpx.Response:
    """`chat`, repeated while the conversation is busy (a 409 writes nothing) until
    `timeout`; returns the first other answer, or the last 409."""
    deadline = time.monotonic() + timeout
    while True:
        response = chat(client, message, **body)
        if response.status_code != 409 or time.monotonic() > deadline:
            return response
        time.sleep(0.05)
