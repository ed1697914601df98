"""The access log of the HTTP app under a real uvicorn process holds no conversation id
in clear: each one in a request's path or query is a short keyed hash there."""

from __future__ import annotations

import time

import pytest

from tests.integration.conftest import Server
from tests.integration.http_support import api_client, new_conversation

pytestmark = pytest.mark.integration


def read_log(server: Server) -> str:
    return server.log.read_text(encoding="utf-8", errors="replace")


def test_the_access_log_names_no_conversation(http_server: Server) -> None:
    # this test's own lines: the server (and its log) serves other tests before it
    start = len(read_log(http_server))
    with api_client(http_server.url, timeout=30) as client:
        cid = new_conversation(client, "a line to find again")
        assert client.get("/api/chat/thread", params={"conversationId": cid}).status_code == 200
        found = client.get("/api/search", params={"q": "find again", "conversationId": cid})
        assert found.status_code == 200
        assert client.get(f"/api/conversations/{cid}").status_code == 200
        assert client.delete(f"/api/conversations/{cid}").status_code == 200
    deadline = time.monotonic() + 10
    while True:  # the log is written by another process
        log = read_log(http_server)[start:]
        lines = [line for line in log.splitlines() if "/api/conversations/" in line]
        if len(lines) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    requests = [line for line in log.splitlines() if '"GET /api/' in line or "DELETE" in line]
    assert len(lines) >= 2 and requests, log[-2000:]
    assert cid not in log
    assert "find again" not in log and "find+again" not in log  # nor what was searched
    # one conversation, one hash: its lines can still be told apart and followed
    hashes = {line.split("/api/conversations/")[1].split(" ")[0] for line in lines}
    assert len(hashes) == 1
