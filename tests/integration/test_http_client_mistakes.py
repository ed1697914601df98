"""A client's mistake is answered 4xx on both backends, writes nothing, and its text never
reaches the server's log: NUL and unpaired surrogates in memory and chat text, a NUL in
a memory id."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.conftest import Server, start_uvicorn, stop
from tests.integration.http_support import api_client, assert_clean_error, new_conversation

pytestmark = pytest.mark.integration

MARKER = "Zebra7731 my private note"


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[Server]:
    started = start_uvicorn("create", tmp_path, AGENT_DATABASE_URL=db_url)
    try:
        yield started
    finally:
        stop(started.process)


def raw_json(client: httpx.Client, method: str, path: str, body: str) -> httpx.Response:
    """`body` sent as it is: JSON escapes (\\u0000, \\ud800) that a client library would
    refuse to produce from a Python string."""
    return client.request(
        method, path, content=body.encode(), headers={"content-type": "application/json"}
    )


def test_unstorable_text_and_ids_are_4xx_and_stay_out_of_the_log(server: Server) -> None:
    with api_client(server.url, timeout=30) as client:
        cid = new_conversation(client, "hello")
        for escape in ("\\u0000", "\\ud800"):
            text = json.dumps(MARKER)[1:-1] + escape + " end"
            refused = raw_json(client, "POST", "/api/memories", f'{{"text": "{text}"}}')
            assert_clean_error(refused, 400, "invalid_request")
            turn = raw_json(
                client, "POST", "/api/chat", f'{{"message": "{text}", "conversationId": "{cid}"}}'
            )
            assert_clean_error(turn, 400, "invalid_request")
        for memory_id in ("m_1%00", "%00", "m_%ED%A0%80", "x" * 65):
            assert_clean_error(client.delete(f"/api/memories/{memory_id}"), 404, "memory_not_found")
        assert client.get("/api/memories").json()["memories"] == []
        messages = client.get("/api/chat/thread", params={"conversationId": cid}).json()
        assert [m["text"] for m in messages["messages"]][::2] == ["hello"]
    log = server.log.read_text(errors="replace")
    assert "Zebra7731" not in log
    assert "storage_unavailable" not in log and "storage failed" not in log
