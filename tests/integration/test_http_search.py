"""The archive over HTTP: `GET /api/search` (the session's own lines only),
`DELETE /api/search-history`, and a deleted conversation gone from search at once."""

from __future__ import annotations

import httpx
import pytest

from tests.integration.http_support import assert_clean_error, new_conversation

pytestmark = pytest.mark.integration

HIT_FIELDS = {
    "id",
    "conversationId",
    "title",
    "messageId",
    "role",
    "createdAt",
    "text",
    "superseded",
}


def found(client: httpx.Client, query: str) -> list[dict[str, object]]:
    response = client.get("/api/search", params={"q": query})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["query"] == query.strip()
    return list(body["results"])


def test_search_finds_the_sessions_own_lines_only(alice: httpx.Client, bob: httpx.Client) -> None:
    boat = new_conversation(alice, "My boat Marisol is moored in Vigo")
    new_conversation(bob, "My boat Marisol is moored in Porto")
    hits = found(alice, "Marisol")
    assert hits and all(set(hit) == HIT_FIELDS for hit in hits)
    assert {hit["conversationId"] for hit in hits} == {boat}
    user = [hit for hit in hits if hit["role"] == "user"]
    assert [hit["text"] for hit in user] == ["My boat Marisol is moored in Vigo"]
    assert user[0]["title"] == "My boat Marisol is moored in Vigo"
    assert all("Porto" not in str(hit["text"]) for hit in found(alice, "Marisol Porto"))


@pytest.mark.parametrize("query", ["", "   ", "x" * 501])
def test_an_empty_or_over_long_query_is_refused(alice: httpx.Client, query: str) -> None:
    assert_clean_error(alice.get("/api/search", params={"q": query}), 422, "invalid_query")


@pytest.mark.parametrize("limit", ["0", "51", "-3", "ten", "2.5", "1e3", "", "9" * 40])
def test_a_limit_that_is_no_integer_in_range_is_refused(alice: httpx.Client, limit: str) -> None:
    response = alice.get("/api/search", params={"q": "boat", "limit": limit})
    assert_clean_error(response, 422, "invalid_query")
    assert "limit" in response.json()["error"]["message"]


def test_the_limit_applied_is_the_one_returned(alice: httpx.Client) -> None:
    """Without `limit`, at most 10 lines, and the body's `limit` says 10 (eleven user
    lines: the offline answers that echo them are not indexed by the echo)."""
    for n in range(11):
        new_conversation(alice, f"Anchor chain number {n} is rusty")
    body = alice.get("/api/search", params={"q": "anchor chain"}).json()
    assert (body["limit"], len(body["results"])) == (10, 10)
    body = alice.get("/api/search", params={"q": "anchor chain", "limit": 3}).json()
    assert (body["limit"], len(body["results"])) == (3, 3)


def test_a_search_in_one_conversation(alice: httpx.Client, bob: httpx.Client) -> None:
    first = new_conversation(alice, "The dinghy is orange")
    second = new_conversation(alice, "The dinghy leaks a little")
    response = alice.get("/api/search", params={"q": "dinghy", "conversationId": second})
    assert response.status_code == 200, response.text
    hits = response.json()["results"]
    assert hits and {hit["conversationId"] for hit in hits} == {second}
    assert {hit["conversationId"] for hit in found(alice, "dinghy")} == {first, second}
    # another session's conversation id finds nothing of it
    assert (
        bob.get("/api/search", params={"q": "dinghy", "conversationId": second}).json()["results"]
        == []
    )
    bad = alice.get("/api/search", params={"q": "dinghy", "conversationId": "../x"})
    assert_clean_error(bad, 422, "invalid_query")


def test_deleting_the_conversation_or_the_history_empties_search(alice: httpx.Client) -> None:
    kept = new_conversation(alice, "My bike is blue and has a basket")
    gone = new_conversation(alice, "The bike is blue and called Rocinante")
    assert {hit["conversationId"] for hit in found(alice, "Rocinante")} == {gone}
    assert alice.delete(f"/api/conversations/{gone}").status_code == 200
    assert found(alice, "Rocinante") == []
    assert {hit["conversationId"] for hit in found(alice, "bike blue")} == {kept}
    response = alice.delete("/api/search-history")
    assert response.status_code == 200 and response.json()["removed"] >= 2
    assert found(alice, "bike blue") == []
