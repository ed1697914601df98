"""Hardening regressions, each against a real uvicorn process (issue: hardening 1-15).

Deleted and pruned conversations stay gone, bodies are limited as they stream,
every response has the one error shape, settings are checked before anything is
opened, files are private, cookies can be `Secure`, and the agent is closed on
shutdown.
"""

from __future__ import annotations

import socket
import stat
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gates import new_gate
from tests.integration.conftest import (
    Server,
    free_port,
    launch_uvicorn,
    server_env,
    start_uvicorn,
    stop,
)
from tests.integration.http_support import (
    api_client,
    assert_clean_error,
    chat,
    events_of,
    listed,
    new_conversation,
)

pytestmark = pytest.mark.integration


def stream_until_first_token(
    server: Server, client: httpx.Client, cid: str, then: Any
) -> list[dict[str, Any]]:
    """Stream a turn in `cid` that waits at a gate after its first token, call `then()`
    while it waits, open the gate, return the turn's events."""
    gate = new_gate()
    body = {"message": f"a turn in flight gate-{gate}", "conversationId": cid}
    with client.stream("POST", "/api/chat", json=body) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        before = []
        for line in lines:
            before.append(line)
            if line == "event: token":
                break
        else:
            raise AssertionError("the turn streamed no token")
        then()
        server.open_gate(gate)
        text = "\n".join([*before, *lines])
    return events_of(httpx.Response(200, text=text))


def thread_texts(client: httpx.Client, cid: str) -> list[str]:
    response = client.get("/api/chat/thread", params={"conversationId": cid})
    return [m["text"] for m in response.json()["messages"]]


# -- 1, 2: a deleted or pruned conversation never comes back ----------------------------


def test_delete_during_a_turn_keeps_the_conversation_deleted(http_server: Server) -> None:
    with api_client(http_server.url, timeout=30) as client:
        cid = new_conversation(client, "private note")

        def delete() -> None:
            assert client.delete(f"/api/conversations/{cid}").status_code == 200

        events = stream_until_first_token(http_server, client, cid, delete)
        done = events[-1]
        assert done["event"] == "done"
        assert done["result"]["memoryWritten"] is False
        assert done["result"]["conversationDeleted"] is True
        assert cid not in listed(client)
        assert_clean_error(
            client.get("/api/chat/thread", params={"conversationId": cid}), 404, "not_found"
        )


def test_pruning_during_a_turn_keeps_the_conversation_pruned(http_server: Server) -> None:
    with api_client(http_server.url, timeout=30) as client:
        oldest = new_conversation(client, "the oldest")
        for n in range(9):
            new_conversation(client, f"conversation {n}")
        created: list[str] = []

        def create_eleventh() -> None:
            created.append(new_conversation(client, "the eleventh"))

        events = stream_until_first_token(http_server, client, oldest, create_eleventh)
        result = events[-1]["result"]
        assert (result["memoryWritten"], result["conversationDeleted"]) == (False, True)
        ids = listed(client)
        assert len(ids) == 10 and oldest not in ids and created[0] in ids
        assert_clean_error(
            client.get("/api/chat/thread", params={"conversationId": oldest}), 404, "not_found"
        )


# -- 4: the body limit counts streamed bytes ------------------------------------------


def test_a_chunked_body_past_the_limit_is_413_without_reading_it_all(
    http_server: Server,
) -> None:
    host, port = http_server.url.removeprefix("http://").split(":")
    chunk = b'{"message": "hi", "createConversation": true, "padding": "' + b"x" * 65536
    sent = 0
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /api/chat HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        try:
            for _ in range(3200):  # up to 200 MiB, unless the server answers first
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                sent += len(chunk)
                sock.settimeout(0)
                try:
                    if sock.recv(1, socket.MSG_PEEK):
                        break
                except BlockingIOError:
                    pass
                finally:
                    sock.settimeout(10)
        except (BrokenPipeError, ConnectionResetError):
            pass
        received = b""
        try:
            while piece := sock.recv(65536):  # the server closes the connection after its 413
                received += piece
        except ConnectionResetError:  # closed with our unread upload still in flight
            pass
        reply = received.decode(errors="replace")
    assert reply.startswith("HTTP/1.1 413"), reply[:200]
    assert '"payload_too_large"' in reply
    assert sent < 8 * 1024 * 1024  # it answered long before the 200 MiB were sent
    with api_client(http_server.url) as after:
        assert after.get("/api/health").status_code == 200


# -- 5, 6, 7: bad input, one error shape, HTTP field names -----------------------------


def test_a_lone_surrogate_is_400_and_leaves_no_draft(http_server: Server) -> None:
    with api_client(http_server.url, timeout=30) as client:
        body = rb'{"message": "hi \ud800 there", "createConversation": true}'
        response = client.post(
            "/api/chat", content=body, headers={"content-type": "application/json"}
        )
        assert_clean_error(response, 400, "invalid_request")
        assert client.get("/api/conversations").json() == {
            "selectedConversationId": None,
            "conversations": [],
            "limit": 10,
        }


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("POST", "/api/chat", b"\xff\xfe\x00garbage", 400, "invalid_json"),
        ("POST", "/api/chat", b"[" * 5000 + b"]" * 5000, 400, "invalid_json"),
        (
            "POST",
            "/api/chat/resume",
            b'{"conversationId": "c1", "decision": {"a": ' + b"[" * 5000 + b"]" * 5000 + b"}}",
            400,
            "invalid_json",
        ),
        ("GET", "/api/no-such-route", None, 404, "not_found"),
        ("PUT", "/api/conversations", None, 405, "method_not_allowed"),
        ("DELETE", "/api/conversations/..%2F..%2Fx", None, 404, "not_found"),
    ],
)
def test_every_error_has_the_one_shape(
    client: httpx.Client, method: str, path: str, body: bytes | None, status: int, code: str
) -> None:
    headers = {"content-type": "application/json"}
    request = client.build_request(method, path, content=body, headers=headers)
    request.url = request.url.copy_with(raw_path=path.encode())
    assert_clean_error(client.send(request), status, code)


def test_a_decision_nested_too_deeply_is_invalid(client: httpx.Client) -> None:
    cid = new_conversation(client)
    nested: Any = "x"
    for _ in range(40):
        nested = [nested]
    response = client.post(
        "/api/chat/resume", json={"conversationId": cid, "decision": {"action": nested}}
    )
    assert_clean_error(response, 400, "invalid_request")
    assert "nested too deeply" in response.json()["error"]["message"]


def test_errors_name_the_http_fields(client: httpx.Client) -> None:
    response = chat(client, "hi")
    assert_clean_error(response, 400, "invalid_request")
    message = response.json()["error"]["message"]
    assert "conversationId" in message and "createConversation" in message
    assert "conversation_id" not in message and "create_conversation" not in message


# -- 12, 13, 15: start-up checks, private files, a clean shutdown ----------------------


def test_a_short_secret_refuses_to_start_and_creates_nothing(tmp_path: Path) -> None:
    database = tmp_path / "store" / "agent.sqlite"
    env = server_env(
        tmp_path, AGENT_SESSION_SECRET="short", AGENT_DATABASE_URL=f"sqlite:///{database}"
    )
    process, log = launch_uvicorn(["agent.server:app"], tmp_path, port=free_port(), env=env)
    try:
        assert process.wait(timeout=60) != 0
    finally:
        stop(process)
    output = log.read_text()
    assert "AGENT_SESSION_SECRET must be at least 32 characters" in output
    assert not database.parent.exists()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_files_are_private_and_the_database_is_closed_on_shutdown(tmp_path: Path) -> None:
    store = tmp_path / "store"
    server = start_uvicorn(
        "agent.server:app",
        tmp_path,
        AGENT_SESSION_SECRET="",  # generated, into the data directory
        AGENT_DATA_DIR=str(store / "data"),
        AGENT_DATABASE_URL=f"sqlite:///{store / 'agent.sqlite'}",
    )
    try:
        with api_client(server.url, timeout=30) as client:
            new_conversation(client)
        database = store / "agent.sqlite"
        wal = store / "agent.sqlite-wal"
        assert wal.exists()  # written and still open
        files = [database, wal, store / "agent.sqlite-shm", store / "agent.sqlite.locks"]
        files.append(store / "data" / "session-secret")
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
        assert mode(store) == mode(store / "data") == 0o700
    finally:
        stop(server.process)
    log = server.log.read_text()
    assert "Application shutdown complete" in log and "Traceback" not in log
    # the lifespan closed the agent: SQLite folded the WAL back and removed it
    assert not (store / "agent.sqlite-wal").exists()


# -- 14: Secure cookies -------------------------------------------------------------------


def cookie_of(server: Server, **headers: str) -> str:
    with api_client(server.url) as fresh:
        return fresh.get("/api/conversations", headers=headers).headers["set-cookie"]


def test_cookies_are_secure_when_configured_or_over_https(tmp_path: Path) -> None:
    plain = start_uvicorn(
        "agent.server:app",
        tmp_path,
        args=("--proxy-headers", "--forwarded-allow-ips", "127.0.0.1"),
    )
    try:
        assert "Secure" not in cookie_of(plain)
        assert "Secure" in cookie_of(plain, **{"X-Forwarded-Proto": "https"})
    finally:
        stop(plain.process)
    secure = start_uvicorn("agent.server:app", tmp_path, AGENT_SECURE_COOKIES="true")
    try:
        cookie = cookie_of(secure)
        assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    finally:
        stop(secure.process)


def test_concurrent_deletes_and_turns_never_resurrect(http_server: Server) -> None:
    """Many rounds of a turn racing a delete: a deleted conversation is never listed."""
    with api_client(http_server.url, timeout=30) as client:
        for _ in range(5):
            cid = new_conversation(client)

            def turn(cid: str = cid) -> None:
                chat(client, "a quick turn", conversationId=cid)

            worker = threading.Thread(target=turn)
            worker.start()
            client.delete(f"/api/conversations/{cid}")
            worker.join()
            assert cid not in listed(client)
            assert_clean_error(
                client.get("/api/chat/thread", params={"conversationId": cid}), 404, "not_found"
            )
