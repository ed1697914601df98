"""Export and import over HTTP: `GET /api/export` (a download), `POST /api/import` (its
own body limit, 10 MB), each on the caller's session only."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from memory.limits import MAX_EXPORT_BYTES
from tests.integration.http_support import assert_clean_error, new_conversation

pytestmark = pytest.mark.integration

T0 = "2025-03-01T10:00:00+00:00"


def exported(client: httpx.Client) -> dict[str, Any]:
    response = client.get("/api/export")
    assert response.status_code == 200, response.text
    assert response.headers["content-disposition"].startswith("attachment;")
    assert response.headers["cache-control"] == "no-store"
    document: dict[str, Any] = response.json()
    assert (document["format"], document["version"]) == ("langgraph-memory-agent.export", 1)
    return {k: v for k, v in document.items() if k != "exportedAt"}


def search(client: httpx.Client, query: str) -> list[dict[str, Any]]:
    results = client.get("/api/search", params={"q": query}).json()["results"]
    return [{k: v for k, v in hit.items() if k != "id"} for hit in results]


def test_an_export_is_a_download_another_session_imports_once(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    conversation = new_conversation(alice, "My boat Marisol is moored in Vigo")
    assert alice.post("/api/memories", json={"text": "I sail on weekends"}).status_code == 201
    document = exported(alice)
    assert [c["id"] for c in document["conversations"]] == [conversation]
    body = json.dumps({**document, "exportedAt": T0})
    first = bob.post("/api/import", content=body)
    assert first.status_code == 200, first.text
    assert first.json()["conversations"] == {"imported": 1, "skipped": 0, "pruned": 0}
    assert bob.get("/api/memories").json() == alice.get("/api/memories").json()
    assert search(bob, "Marisol") == search(alice, "Marisol") != []
    bobs = bob.get(f"/api/conversations/{conversation}").json()
    assert bobs == alice.get(f"/api/conversations/{conversation}").json()
    again = bob.post("/api/import", content=body).json()
    assert again["conversations"] == {"imported": 0, "skipped": 1, "pruned": 0}
    assert again["archive"]["imported"] == 0
    # alice's session is as it was; bob's copy is bob's
    assert exported(alice) == document
    assert bob.delete(f"/api/conversations/{conversation}").status_code == 200
    assert exported(alice) == document


def test_a_tampered_document_is_refused_and_nothing_written(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    new_conversation(alice, "My boat Marisol is moored in Vigo")
    document = exported(alice)
    for body, named in (
        ({**document, "version": 2}, "version"),
        ({**document, "owner": "alice"}, "owner"),
        ({**document, "archive": [{**document["archive"][0], "messageId": "a/b"}]}, "messageId"),
    ):
        response = bob.post("/api/import", json={**body, "exportedAt": T0})
        assert_clean_error(response, 400, "invalid_request")
        assert named in response.json()["error"]["message"]
    assert_clean_error(bob.post("/api/import", content=b"{not json"), 400, "invalid_request")
    assert bob.get("/api/conversations").json()["conversations"] == []
    assert search(bob, "Marisol") == []


def test_the_import_takes_up_to_10_mb_and_every_other_body_keeps_its_limit(
    bob: httpx.Client,
) -> None:
    lines = [
        {
            "conversationId": "c1",
            "title": "Long answers",
            "messageId": f"m{n}",
            "role": "assistant",
            "createdAt": T0,
            "text": "sailing " * 7_000,
            "covers": None,
        }
        for n in range(20)
    ]
    document = {
        "format": "langgraph-memory-agent.export",
        "version": 1,
        "exportedAt": T0,
        "conversations": [],
        "memories": [],
        "archive": lines,
        "tombstones": [],
    }
    taken = bob.post("/api/import", json=document)  # about 1 MB: four times a message's limit
    assert taken.status_code == 200, taken.text
    assert taken.json()["archive"] == {"imported": 20, "skipped": 0, "redacted": 0}
    too_large = bob.post("/api/import", content=b" " * (MAX_EXPORT_BYTES + 1))
    assert_clean_error(too_large, 413, "payload_too_large")
    assert "10,485,760 bytes" in too_large.json()["error"]["message"]
    other = bob.post("/api/memories", content=b" " * (300 * 1024))
    assert_clean_error(other, 413, "payload_too_large")
