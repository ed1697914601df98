"""Signed-in users on the HTTP app alone (uvicorn): API keys, tokens checked against a
JWKS served over HTTP, a trusted proxy's header, and the page's sign-in cookie.

With a mode configured nothing of `/api/…` answers without valid credentials, no
anonymous session is ever made, and each user's conversations, long-term items and
archive are theirs alone.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from agent.api.sessions import COOKIE_NAME as ANONYMOUS_COOKIE
from agent.api.sessions import NEW_SESSION, SESSION_HEADER
from agent.identity import COOKIE_NAME
from tests.identities import AUDIENCE, ISSUER, KEYS, Provider, key_entries
from tests.integration.conftest import Server, start_uvicorn, stop
from tests.integration.http_support import assert_clean_error, chat, new_conversation

pytestmark = pytest.mark.integration

PROXY_HEADER = "X-Forwarded-User"


@pytest.fixture(scope="module")
def provider() -> Provider:
    return Provider()


@pytest.fixture(scope="module")
def jwks_url(tmp_path_factory: pytest.TempPathFactory, provider: Provider) -> Iterator[str]:
    """The provider's JWKS, served over HTTP on 127.0.0.1."""
    root = tmp_path_factory.mktemp("idp")
    provider.write_jwks(root / "jwks.json")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    finally:
        server.shutdown()
        thread.join(timeout=5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, jwks_url: str) -> Iterator[Server]:
    running = start_uvicorn(
        "create",
        tmp_path_factory.mktemp("identity-http"),
        AGENT_API_KEYS=key_entries(),
        AGENT_JWT_ISSUER=ISSUER,
        AGENT_JWT_AUDIENCE=AUDIENCE,
        AGENT_JWKS=jwks_url,
        AGENT_PROXY_USER_HEADER=PROXY_HEADER,
        AGENT_TRUSTED_PROXIES="127.0.0.1",  # the tests' own address plays the proxy
    )
    try:
        yield running
    finally:
        stop(running.process)


@pytest.fixture(scope="module")
def headers(provider: Provider) -> dict[str, dict[str, str]]:
    """Each user's credentials, one mode each (bob's key travels as a bearer)."""
    return {
        "key:alice": {"x-api-key": KEYS["alice"]},
        "key:bob": {"authorization": f"Bearer {KEYS['bob']}"},
        "jwt:carol": {"authorization": f"Bearer {provider.token('carol')}"},
        "proxy:erin": {PROXY_HEADER: "erin"},
    }


def client_of(server: Server, headers: dict[str, str]) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


@pytest.mark.parametrize(
    "problem", ["none", "bad key", "new anonymous session", "expired", "wrong audience"]
)
def test_no_valid_credentials_no_session(server: Server, provider: Provider, problem: str) -> None:
    plain = {
        "none": {},
        "bad key": {"x-api-key": "not-a-key"},
        "new anonymous session": {SESSION_HEADER: NEW_SESSION},
    }
    token = {"authorization": f"Bearer {provider.refused_tokens().get(problem)}"}
    with client_of(server, plain.get(problem, token)) as client:
        for method, path in [
            ("GET", "/api/conversations"),
            ("POST", "/api/chat"),
            ("GET", "/api/memories"),
            ("GET", "/api/search?q=x"),
            ("POST", "/api/session"),
        ]:
            response = client.request(method, path, json={"message": "hi"})
            assert_clean_error(response, 401, "unauthenticated")
            assert response.headers["www-authenticate"] == "Bearer"
            assert ANONYMOUS_COOKIE not in response.headers.get("set-cookie", "")
        assert client.get("/api/health").status_code == 200


def test_each_users_data_is_theirs_alone(
    server: Server, headers: dict[str, dict[str, str]]
) -> None:
    conversations: dict[str, str] = {}
    for session, credentials in headers.items():
        user = session.partition(":")[2]
        with client_of(server, credentials) as client:
            conversations[session] = new_conversation(client, f"{user} says the boiler is red")
            added = client.post("/api/memories", json={"text": f"My name is {user}"})
            assert added.status_code == 201, added.text
    for session, credentials in headers.items():
        user = session.partition(":")[2]
        with client_of(server, credentials) as client:
            listed = [c["id"] for c in client.get("/api/conversations").json()["conversations"]]
            assert listed == [conversations[session]]
            names = [m["text"] for m in client.get("/api/memories").json()["memories"]]
            assert names == [f"My name is {user}"]
            hits = client.get("/api/search", params={"q": "boiler"}).json()["results"]
            assert {hit["conversationId"] for hit in hits} == {conversations[session]}
            for other, conversation in conversations.items():
                if other == session:
                    continue
                thread = client.get("/api/chat/thread", params={"conversationId": conversation})
                assert_clean_error(thread, 404, "not_found")
                assert client.delete(f"/api/conversations/{conversation}").status_code == 404
                turn = chat(client, "mine now", conversationId=conversation)
                assert_clean_error(turn, 404, "not_found")


def test_the_page_signs_in_with_a_key_and_keeps_a_cookie(
    server: Server, headers: dict[str, dict[str, str]]
) -> None:
    with client_of(server, headers["key:alice"]) as alice:
        signed = alice.post("/api/session", headers={"Sec-Fetch-Site": "same-origin"})
        assert signed.status_code == 200 and signed.json() == {"sessionId": "key:alice"}
        cookie = signed.headers["set-cookie"]
        assert all(flag in cookie for flag in ("HttpOnly", "SameSite=strict", "Path=/api/"))
        mine = [c["id"] for c in alice.get("/api/conversations").json()["conversations"]]
    with httpx.Client(
        base_url=server.url, cookies={COOKIE_NAME: signed.cookies[COOKIE_NAME]}, timeout=30
    ) as page:
        listed = page.get("/api/conversations")
        assert [c["id"] for c in listed.json()["conversations"]] == mine
        # the cookie rides along on another site's form post: refused as before
        foreign = page.post("/api/memories", json={"text": "x"}, headers={"Origin": "http://evil"})
        assert_clean_error(foreign, 403, "cross_site_request")
        out = page.delete("/api/session", headers={"Sec-Fetch-Site": "same-origin"})
        assert out.status_code == 204 and COOKIE_NAME in out.headers["set-cookie"]
        page.cookies.clear()
        assert_clean_error(page.get("/api/conversations"), 401, "unauthenticated")
    # a tampered cookie names nobody
    forged = signed.cookies[COOKIE_NAME].replace("key:alice", "key:bob")
    with httpx.Client(base_url=server.url, cookies={COOKIE_NAME: forged}, timeout=30) as page:
        assert_clean_error(page.get("/api/conversations"), 401, "unauthenticated")


def test_behind_the_proxy_no_cookie_is_needed(
    server: Server, headers: dict[str, dict[str, str]]
) -> None:
    with client_of(server, headers["proxy:erin"]) as erin:
        signed = erin.post("/api/session")
        assert signed.json() == {"sessionId": "proxy:erin"}
        assert "set-cookie" not in signed.headers


@pytest.fixture(scope="module")
def remote_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The proxy at 10.0.0.5, uvicorn run with its defaults (which take `X-Forwarded-For`
    from local peers)."""
    running = start_uvicorn(
        "create",
        tmp_path_factory.mktemp("remote-proxy"),
        AGENT_PROXY_USER_HEADER=PROXY_HEADER,
        AGENT_TRUSTED_PROXIES="10.0.0.5",
    )
    try:
        yield running
    finally:
        stop(running.process)


@pytest.mark.parametrize(
    "forwarded",
    [["10.0.0.5"], ["10.0.0.5:443"], ["203.0.113.9, 10.0.0.5"], ["198.51.100.1", "10.0.0.5"]],
)
def test_a_local_process_cannot_pose_as_the_proxy(
    remote_proxy: Server, forwarded: list[str]
) -> None:
    """Only the direct peer is the proxy: an `X-Forwarded-For` naming the proxy, however
    written, never makes a local process one."""
    headers = [(PROXY_HEADER, "mallory"), *(("X-Forwarded-For", value) for value in forwarded)]
    with httpx.Client(base_url=remote_proxy.url, timeout=30) as client:
        for method, path in [("GET", "/api/conversations"), ("POST", "/api/session")]:
            response = client.request(method, path, headers=headers)
            assert_clean_error(response, 401, "unauthenticated")


def test_an_unusable_identity_setting_refuses_to_start(tmp_path: Path) -> None:
    for env in (
        {"AGENT_API_KEYS": "alice:not-a-hash"},
        {"AGENT_JWT_ISSUER": ISSUER, "AGENT_JWT_AUDIENCE": AUDIENCE, "AGENT_JWKS": "missing.json"},
    ):
        with pytest.raises(RuntimeError, match=r"AGENT_(API_KEYS|JWKS)"):
            stop(start_uvicorn("create", tmp_path, port=None, args=(), **env).process)


def sign_in(server: Server, key: str) -> str:
    """A fresh sign-in cookie's value for `key`."""
    with httpx.Client(base_url=server.url, headers={"x-api-key": key}, timeout=30) as client:
        signed = client.post("/api/session", headers={"Sec-Fetch-Site": "same-origin"})
        assert signed.status_code == 200, signed.text
        return signed.cookies[COOKIE_NAME]


def status_with(server: Server, cookie: str) -> int:
    with httpx.Client(base_url=server.url, cookies={COOKIE_NAME: cookie}, timeout=30) as page:
        return page.get("/api/conversations").status_code


def test_signing_out_ends_the_cookie_in_every_worker(db_url: str, tmp_path: Path) -> None:
    """Two workers on one database: a cookie signed out on one is refused by both, a
    copy of it included; a key rotated or withdrawn ends the cookies it made."""
    keys = key_entries()
    first, second = (
        start_uvicorn("create", tmp_path, AGENT_DATABASE_URL=db_url, AGENT_API_KEYS=keys)
        for _ in range(2)
    )
    try:
        copied = sign_in(first, KEYS["alice"])
        bobs = sign_in(second, KEYS["bob"])
        assert status_with(second, copied) == 200
        with httpx.Client(base_url=first.url, cookies={COOKIE_NAME: copied}, timeout=30) as page:
            out = page.delete("/api/session", headers={"Sec-Fetch-Site": "same-origin"})
            assert out.status_code == 204
        for server in (first, second):
            assert status_with(server, copied) == 401
            assert status_with(server, bobs) == 200  # another user's stays signed in
        again = sign_in(second, KEYS["alice"])
        assert status_with(first, again) == 200
    finally:
        for server in (first, second):
            stop(server.process)
    rotated = {"alice": "alice-new-key-0123456789", "bob": KEYS["bob"]}
    after = start_uvicorn(
        "create", tmp_path, AGENT_DATABASE_URL=db_url, AGENT_API_KEYS=key_entries(rotated)
    )
    try:
        assert status_with(after, again) == 401  # alice's old key made it
        assert status_with(after, bobs) == 200
    finally:
        stop(after.process)
