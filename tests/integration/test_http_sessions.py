"""Sessions over HTTP: only a safe request from the page's own origin (or a client that
asks with `X-Agent-Session: new`) starts one; no request from another site changes
anything or replaces a cookie; new sessions are bounded per client address; and every
response says `nosniff`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.api.sessions import COOKIE_NAME, NEW_SESSION, SESSION_HEADER
from tests.integration.conftest import Server, start_uvicorn, stop
from tests.integration.http_support import api_client, assert_clean_error, new_conversation

pytestmark = pytest.mark.integration

UNSAFE = [
    ("POST", "/api/health", None),
    ("POST", "/api/memories", {"text": "I like green tea"}),
    ("POST", "/api/chat", {"message": "hi", "createConversation": True}),
    ("DELETE", "/api/memories", None),
    ("POST", "/api/conversations/select", {"conversationId": "c"}),
]


def texts(client: httpx.Client) -> list[str]:
    return [item["text"] for item in client.get("/api/memories").json()["memories"]]


@pytest.fixture
def victim(http_server: Server) -> Iterator[httpx.Client]:
    """A browser-like session: its first request is the page's GET; it holds one item."""
    with httpx.Client(base_url=http_server.url, timeout=30) as client:
        first = client.get("/api/conversations", headers={"Sec-Fetch-Site": "same-origin"})
        assert first.status_code == 200 and COOKIE_NAME in first.cookies
        added = client.post(
            "/api/memories",
            json={"text": "I like green tea"},
            headers={"Sec-Fetch-Site": "same-origin", "Origin": http_server.url},
        )
        assert added.status_code == 201, added.text
        yield client


@pytest.mark.parametrize(("method", "path", "body"), UNSAFE)
def test_an_unsafe_request_without_a_session_is_refused_without_a_cookie(
    http_server: Server, method: str, path: str, body: object
) -> None:
    with httpx.Client(base_url=http_server.url, timeout=30) as anonymous:
        response = anonymous.request(method, path, json=body)
        assert_clean_error(response, 403, "session_required")
        assert "set-cookie" not in response.headers
        assert SESSION_HEADER in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "where",
    [
        {"Sec-Fetch-Site": "cross-site", "Origin": "http://127.0.0.2:9"},
        {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:9"},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
    ],
)
def test_a_request_from_another_origin_changes_nothing_and_sets_no_cookie(
    victim: httpx.Client, where: dict[str, str]
) -> None:
    cookie = victim.cookies[COOKIE_NAME]
    for method, path, body in UNSAFE:
        response = victim.request(method, path, json=body, headers=where)
        assert_clean_error(response, 403, "cross_site_request")
        assert "set-cookie" not in response.headers
    # nor can another site start a session, even with the header a script would send
    with httpx.Client(base_url=str(victim.base_url)) as stranger:
        for method in ("GET", "POST"):
            refused = stranger.request(
                method, "/api/memories", headers={**where, SESSION_HEADER: NEW_SESSION}
            )
            assert refused.status_code == 403 and "set-cookie" not in refused.headers
    assert victim.cookies[COOKIE_NAME] == cookie
    assert texts(victim) == ["I like green tea"]
    assert victim.get("/api/conversations").json()["conversations"] == []


def test_the_page_own_origin_passes(victim: httpx.Client, http_server: Server) -> None:
    # the page's fetches: Sec-Fetch-Site same-origin, or (older browsers, plain HTTP on a
    # remote host) an Origin equal to the host
    for headers in ({"Sec-Fetch-Site": "same-origin"}, {"Origin": http_server.url}):
        response = victim.post("/api/memories", json={"text": "I live in Lyon"}, headers=headers)
        assert response.status_code == 201, response.text
        assert "set-cookie" not in response.headers


def test_a_safe_first_request_or_the_header_starts_a_session(http_server: Server) -> None:
    with httpx.Client(base_url=http_server.url, timeout=30) as browser:
        health = browser.get("/api/health")  # needs no session: starts none
        assert health.status_code == 200 and "set-cookie" not in health.headers
        assert browser.get("/api/conversations").status_code == 200  # the page's first load
        assert COOKIE_NAME in browser.cookies
        assert browser.post("/api/memories", json={"text": "I like jazz"}).status_code == 201
        assert texts(browser) == ["I like jazz"]
    with api_client(http_server.url, timeout=30) as script:  # X-Agent-Session: new
        cid = new_conversation(script, "hello")
        assert COOKIE_NAME in script.cookies
        assert [c["id"] for c in script.get("/api/conversations").json()["conversations"]] == [cid]
        assert texts(script) == []  # its own session, not the browser's


@pytest.fixture
def bounded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_uvicorn(
        "create", tmp_path_factory.mktemp("bounded"), AGENT_NEW_SESSIONS_PER_MINUTE="3"
    )
    try:
        yield server
    finally:
        stop(server.process)


def test_new_sessions_are_bounded_per_client_address(bounded: Server) -> None:
    clients = [api_client(bounded.url, timeout=30) for _ in range(4)]
    try:
        for client in clients[:3]:
            assert client.post("/api/memories", json={"text": "I like tea"}).status_code == 201
        refused = clients[3].get("/api/conversations")
        assert_clean_error(refused, 429, "too_many_sessions")
        assert "set-cookie" not in refused.headers and refused.headers["retry-after"]
        # sessions already started go on
        assert texts(clients[0]) == ["I like tea"]
        assert clients[0].post("/api/memories", json={"text": "I like jazz"}).status_code == 201
    finally:
        for client in clients:
            client.close()


def test_every_response_says_nosniff(
    client: httpx.Client, http_server: Server, tmp_path: Path
) -> None:
    cid = new_conversation(client, "hello")
    responses = [
        client.get("/api/conversations"),
        client.get("/api/memories"),
        client.get("/api/health"),
        client.get("/api/chat/thread", params={"conversationId": cid}),
        client.get("/api/chat/thread", params={"conversationId": "unknown"}),
        client.post("/api/chat", json={"message": "hi", "conversationId": cid}),
        client.post("/api/chat", json={"message": ""}),
        client.post("/api/memories", content=b"x" * 300_000),
        client.get("/api/nothing-here"),
        client.get("/api/openapi.json"),
        httpx.post(f"{http_server.url}/api/memories", json={"text": "x"}),
        client.get("/"),
        client.get("/web/app.js"),
    ]
    statuses = {response.status_code for response in responses}
    assert {200, 400, 403, 404, 413} <= statuses
    for response in responses:
        assert response.headers.get_list("x-content-type-options") == ["nosniff"], response.url
