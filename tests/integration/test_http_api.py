"""The HTTP API under a real uvicorn process, through httpx."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import pytest

from agent.api.sessions import COOKIE_NAME
from memory import assert_client_safe
from tests.gates import new_gate
from tests.integration.conftest import Server
from tests.integration.http_support import (
    after_first_token,
    api_client,
    assert_clean_error,
    chat,
    chat_when_free,
    events_of,
    listed,
    new_conversation,
)

pytestmark = pytest.mark.integration


def test_draft_promotion_cookie_and_header(client: httpx.Client) -> None:
    response = chat(client, "hi there", createConversation=True)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    cookie = response.headers["set-cookie"]
    assert COOKIE_NAME in cookie and "HttpOnly" in cookie and "samesite=lax" in cookie.lower()
    events = events_of(response)
    cid = response.headers["X-Conversation-Id"]
    assert events[0] == {"event": "conversation", "conversationId": cid}
    assert events[-1]["event"] == "done" and events[-1]["result"]["memoryWritten"] is True
    assert "".join(e["text"] for e in events if e["event"] == "token") == "answer to: hi there"
    assert listed(client) == [cid]
    hydration = client.get("/api/chat/thread", params={"conversationId": cid}).json()
    assert_client_safe(hydration)
    assert [m["text"] for m in hydration["messages"]] == ["hi there", "answer to: hi there"]


@pytest.mark.parametrize(
    "body",
    [
        {"message": "x"},
        {"message": "x", "conversationId": "abc", "createConversation": True},
        {"message": "x", "conversationId": ""},
        {"message": "x", "conversationId": "   "},
        {"message": "x", "createConversation": True, "mode": "shell"},
        {"message": 5, "createConversation": True},
        {"message": "x", "createConversation": "yes"},
        {"message": "x", "createConversation": True, "history": []},
        {"message": "", "createConversation": True},
    ],
)
def test_bad_chat_requests_are_400_and_write_nothing(
    client: httpx.Client, body: dict[str, Any]
) -> None:
    fresh = api_client(str(client.base_url))
    assert_clean_error(fresh.post("/api/chat", json=body), 400, "invalid_request")
    assert fresh.get("/api/conversations").json()["conversations"] == []


def test_invalid_json_and_oversized_input(client: httpx.Client) -> None:
    bad = client.post(
        "/api/chat", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert_clean_error(bad, 400, "invalid_json")
    too_long = chat(client, "x" * 16_001, createConversation=True)
    assert_clean_error(too_long, 413, "message_too_long")
    huge = client.post(
        "/api/chat", content=b"x" * 300_000, headers={"content-type": "application/json"}
    )
    assert_clean_error(huge, 413, "payload_too_large")


def test_unknown_and_foreign_ids_are_404(client: httpx.Client, http_server: Server) -> None:
    cid = new_conversation(client)
    with api_client(http_server.url) as stranger:
        for conversation in (cid, "unknown-id"):
            assert_clean_error(chat(stranger, "hi", conversationId=conversation), 404, "not_found")
            thread = stranger.get("/api/chat/thread", params={"conversationId": conversation})
            assert_clean_error(thread, 404, "not_found")
            select = stranger.post(
                "/api/conversations/select", json={"conversationId": conversation}
            )
            assert_clean_error(select, 404, "not_found")
            assert_clean_error(
                stranger.delete(f"/api/conversations/{conversation}"), 404, "not_found"
            )
    own = client.get("/api/chat/thread", params={"conversationId": cid}).json()
    assert own["messages"][0]["text"] == "hello"


def test_reads_without_a_cookie_see_an_empty_registry(http_server: Server) -> None:
    with api_client(http_server.url) as anonymous:
        response = anonymous.get("/api/conversations")
        assert response.status_code == 200
        assert response.json() == {"selectedConversationId": None, "conversations": [], "limit": 10}


def test_a_tampered_cookie_is_a_new_session(client: httpx.Client, http_server: Server) -> None:
    cid = new_conversation(client)
    value = client.cookies[COOKIE_NAME]
    session_id, _, signature = value.partition(".")
    forged = f"{session_id}.{'0' * len(signature)}"
    with api_client(http_server.url, cookies={COOKIE_NAME: forged}) as attacker:
        assert attacker.get("/api/conversations").json()["conversations"] == []
        assert_clean_error(
            attacker.get("/api/chat/thread", params={"conversationId": cid}), 404, "not_found"
        )


def test_eleven_conversations_keep_ten_and_selection_keeps_order(http_server: Server) -> None:
    with api_client(http_server.url, timeout=30) as session:
        ids = [new_conversation(session, f"conversation {n}") for n in range(11)]
        order = listed(session)
        assert order == list(reversed(ids[1:]))
        assert_clean_error(
            session.get("/api/chat/thread", params={"conversationId": ids[0]}), 404, "not_found"
        )
        selected = session.post("/api/conversations/select", json={"conversationId": ids[3]}).json()
        assert selected["selectedConversationId"] == ids[3]
        assert [c["id"] for c in selected["conversations"]] == order
        assert listed(session) == order


def test_the_eleventh_conversation_names_the_one_it_pruned(http_server: Server) -> None:
    with api_client(http_server.url, timeout=30) as session:
        for n in range(10):
            new_conversation(session, f"conversation {n}")
        events = events_of(chat(session, "the eleventh", createConversation=True))
        writes = [e for e in events if e["event"] == "memory" and e["stage"] == "write"]
        assert writes[-1]["status"] == "succeeded"  # the first says it started
        assert writes[-1]["pruned"] == ["conversation 0"]


def test_busy_conversation_is_409_while_another_proceeds(
    client: httpx.Client, http_server: Server
) -> None:
    busy_cid = new_conversation(client)
    other = new_conversation(client)
    gate = new_gate()
    held = f"a held answer please gate-{gate}"
    body = {"message": held, "conversationId": busy_cid}
    with client.stream("POST", "/api/chat", json=body) as response:
        rest = after_first_token(response)  # the held turn runs until its gate opens
        assert_clean_error(
            chat(client, "overlap", conversationId=busy_cid), 409, "conversation_busy"
        )
        assert chat(client, "meanwhile", conversationId=other).status_code == 200
        http_server.open_gate(gate)
        assert response.status_code == 200 and "event: done" in list(rest)
    texts = [
        m["text"]
        for m in client.get("/api/chat/thread", params={"conversationId": busy_cid}).json()[
            "messages"
        ]
    ]
    assert "overlap" not in texts and held in texts


def test_switching_selection_mid_stream_writes_to_the_starting_conversation(
    client: httpx.Client,
) -> None:
    start = new_conversation(client)
    other = new_conversation(client)
    with client.stream(
        "POST", "/api/chat", json={"message": "slow stream here", "conversationId": start}
    ) as response:
        switched = False
        for line in response.iter_lines():
            if line == "event: token" and not switched:
                client.post("/api/conversations/select", json={"conversationId": other})
                switched = True
        assert switched
    texts_start = [
        m["text"]
        for m in client.get("/api/chat/thread", params={"conversationId": start}).json()["messages"]
    ]
    texts_other = [
        m["text"]
        for m in client.get("/api/chat/thread", params={"conversationId": other}).json()["messages"]
    ]
    assert "slow stream here" in texts_start and "slow stream here" not in texts_other
    assert client.get("/api/conversations").json()["selectedConversationId"] == other


def test_a_disconnect_mid_stream_writes_nothing(client: httpx.Client, http_server: Server) -> None:
    cid = new_conversation(client)
    gate = new_gate()
    body = {"message": f"held and then gone gate-{gate}", "conversationId": cid}
    try:
        with client.stream("POST", "/api/chat", json=body) as response:
            after_first_token(response)  # leave before the answer is complete
        # the gate stays shut: only the server's cancelling the turn can free the
        # conversation, and a cancelled turn writes nothing
        still_usable = chat_when_free(client, "still usable", conversationId=cid)
    finally:
        http_server.open_gate(gate)
    assert still_usable.status_code == 200, still_usable.text
    texts = [
        m["text"]
        for m in client.get("/api/chat/thread", params={"conversationId": cid}).json()["messages"]
    ]
    assert texts == ["hello", "answer to: hello", "still usable", "answer to: still usable"]


def test_delete_and_resume_errors(client: httpx.Client) -> None:
    cid = new_conversation(client)
    resume = client.post(
        "/api/chat/resume", json={"conversationId": cid, "decision": {"action": "approve"}}
    )
    assert_clean_error(resume, 400, "invalid_request")
    after = client.delete(f"/api/conversations/{cid}")
    assert after.status_code == 200 and cid not in [c["id"] for c in after.json()["conversations"]]
    assert_clean_error(
        client.get("/api/chat/thread", params={"conversationId": cid}), 404, "not_found"
    )


def upkeep_of(client: httpx.Client, cid: str) -> str:
    """The conversation's upkeep once it is no longer pending (its thread DTO's field)."""
    for _ in range(300):
        dto = client.get("/api/chat/thread", params={"conversationId": cid}).json()
        if dto["upkeep"] != "pending":
            return str(dto["upkeep"])
        time.sleep(0.05)
    raise AssertionError("the upkeep stayed pending")


def test_a_stream_ends_at_done_and_the_upkeep_after_it_is_reachable(client: httpx.Client) -> None:
    cid = new_conversation(client)
    upkeep_of(client, cid)
    message = "Remember that I prefer short answers."
    response = chat(client, message, follow_upkeep=False, conversationId=cid)
    events = events_of(response)
    # the response ended at done: a client reading to the end is free at once
    assert events[-1]["event"] == "done" and events[-1]["result"]["upkeep"] == "pending"
    assert [e["event"] for e in events].count("done") == 1
    # the upkeep ran on without the stream: its outcome is the thread's `upkeep`
    assert upkeep_of(client, cid) == "done"
    items = client.get("/api/memories").json()["memories"]
    assert [item["text"] for item in items] == ["I prefer short answers"]


def test_a_follow_up_sent_at_done_is_accepted_and_upkeep_events_follow_done_on_request(
    client: httpx.Client,
) -> None:
    cid = new_conversation(client)
    events: list[dict[str, Any]] = []
    follow_up = None
    body = {"message": "Remember that I prefer short answers.", "conversationId": cid}
    with client.stream("POST", "/api/chat", params={"followUpkeep": "true"}, json=body) as response:
        name = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: ") and name is not None:
                events.append({"event": name, **json.loads(line.removeprefix("data: "))})
                if name == "done":  # the conversation is free: the next message is taken
                    follow_up = chat(
                        client, "and one more thing", follow_upkeep=False, conversationId=cid
                    )
    assert follow_up is not None and follow_up.status_code == 200, follow_up
    follow = events_of(follow_up)
    # not asked to follow its upkeep, the follow-up's stream ends at its done
    assert follow[-1]["event"] == "done"
    names = [(e["event"], e.get("stage"), e.get("status")) for e in events]
    done = names.index(("done", None, None))
    assert events[done]["result"]["upkeep"] == "pending"
    # asked to, the stream stayed open after done for the upkeep's memory events
    assert ("memory", "remember", "succeeded") in names[done:]
    assert names[-1] == ("memory", "upkeep", "done")
    items = client.get("/api/memories").json()["memories"]
    assert [item["text"] for item in items] == ["I prefer short answers"]
