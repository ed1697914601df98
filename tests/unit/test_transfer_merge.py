"""The rules of an import's merge (`ChatAgent.import_`): importing twice changes nothing
and never touches another session, a conversation the session has is kept, imported
conversations are listed by activity and pruned past ten, secrets are redacted and
forgotten items skipped, and tombstones and the history clearing join the session's."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent import ChatAgent
from memory.archive.lines import REDACTED
from tests.unit.transfer_support import document, extracting_agent, item, line, talk, undated

SECRET_TEXT = "my password is hunter2"


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], tmp_path: Path) -> ChatAgent:
    return extracting_agent(open_agent, tmp_path)


def test_importing_twice_changes_nothing_and_never_touches_another_session(
    agent: ChatAgent,
) -> None:
    talk(agent, "alice", "Remember that I prefer short answers.", "Tell me about sourdough.")
    talk(agent, "alice", "Remember that I live in Lisbon.")
    document = agent.export(session_id="alice")
    first = agent.import_(document, session_id="bob")
    assert first["conversations"]["imported"] == 2
    assert first["memories"]["imported"] == len(document["memories"]) == 2
    bob = agent.export(session_id="bob")
    again = agent.import_(document, session_id="bob")
    assert again == {
        "conversations": {"imported": 0, "skipped": 2, "pruned": 0},
        "memories": {"imported": 0, "skipped": 2},
        "archive": {"imported": 0, "skipped": len(document["archive"]), "redacted": 0},
    }
    assert undated(agent.export(session_id="bob")) == undated(bob)
    # importing into the session it came from adds nothing either
    assert agent.import_(document, session_id="alice")["archive"]["imported"] == 0
    assert undated(agent.export(session_id="alice")) == undated(document)
    # the copies are bob's own: forgetting and deleting there leaves alice's as they were
    agent.forget_all(session_id="bob")
    for conversation in bob["conversations"]:
        agent.delete_conversation(session_id="bob", conversation_id=conversation["id"])
    agent.forget_history(session_id="bob")
    assert undated(agent.export(session_id="alice")) == undated(document)
    assert agent.export(session_id="bob")["conversations"] == []


def test_a_conversation_the_session_has_is_kept_and_the_documents_copy_skipped(
    agent: ChatAgent,
) -> None:
    conversation = talk(agent, "alice", "Tell me about sourdough.")
    document = agent.export(session_id="alice")
    agent.import_(document, session_id="bob")
    agent.send("And rye bread?", session_id="bob", conversation_id=conversation)
    kept = agent.hydrate(session_id="bob", conversation_id=conversation)
    summary = agent.import_(document, session_id="bob")
    assert summary["conversations"] == {"imported": 0, "skipped": 1, "pruned": 0}
    assert agent.hydrate(session_id="bob", conversation_id=conversation) == kept
    assert len(kept["messages"]) == 4


def test_imported_conversations_are_listed_by_activity_and_pruned_past_ten(
    agent: ChatAgent,
) -> None:
    for n in range(3):
        talk(agent, "alice", f"Old talk {n} about bikes")
    document = agent.export(session_id="alice")
    newer = [talk(agent, "bob", f"Newer talk {n}") for n in range(9)]
    summary = agent.import_(document, session_id="bob")
    # the two oldest imported ones are pruned at once; their lines are archived still
    assert summary["conversations"] == {"imported": 1, "skipped": 0, "pruned": 2}
    assert summary["archive"]["imported"] == 6
    listing = agent.conversations(session_id="bob")["conversations"]
    assert len(listing) == 10 and {c["id"] for c in listing} >= set(newer)
    assert [c["title"] for c in listing if c["id"] not in newer] == ["Old talk 2 about bikes"]
    found = agent.search_conversations("bikes", session_id="bob", limit=50)
    assert {hit["title"] for hit in found if hit["role"] == "user"} == {
        f"Old talk {n} about bikes" for n in range(3)
    }


def test_a_secret_in_a_line_or_a_title_is_redacted_and_a_forgotten_item_skipped(
    agent: ChatAgent,
) -> None:
    sent = document(
        archive=[
            line("c1", "m1-u", "user", f"hello\n{SECRET_TEXT}"),
            line("old", "m2-u", "user", "sourdough again", title=SECRET_TEXT),
        ],
        memories=[
            item("I bake bread on Sundays", 2),
            item("I forgot this one", 3),  # named by a tombstone
        ],
        tombstones=["m_" + "0" * 15 + "3"],
    )
    summary = agent.import_(sent, session_id="bob")
    assert summary["memories"] == {"imported": 1, "skipped": 1}
    assert summary["archive"] == {"imported": 2, "skipped": 0, "redacted": 1}
    assert [m["text"] for m in agent.memories(session_id="bob")["memories"]] == [
        "I bake bread on Sundays"
    ]
    lines = agent.memory.archive.lines("bob")
    assert [(row.text, row.title) for row in lines] == [
        (f"hello\n{REDACTED}", "t"),
        ("sourdough again", REDACTED),
    ]
    assert "hunter2" not in json.dumps(agent.export(session_id="bob"))


def test_tombstones_join_the_sessions_and_the_later_clearing_holds(agent: ChatAgent) -> None:
    talk(agent, "bob", "hello")  # a session keeps tombstones in its registry
    agent.forget_history(session_id="bob")
    cleared = agent.export(session_id="bob")["historyClearedAt"]
    assert cleared is not None
    agent.remember("I keep bees", session_id="bob")
    (bees,) = agent.memories(session_id="bob")["memories"]
    agent.forget(bees["id"], session_id="bob")
    sent = document(tombstones=["m_1", bees["id"]], historyClearedAt="2025-01-01T00:00:00+00:00")
    sent["memories"].append({**sent["memories"][0], "id": bees["id"], "text": "I keep bees"})
    summary = agent.import_(sent, session_id="bob")
    assert summary["memories"] == {"imported": 1, "skipped": 1}
    exported = agent.export(session_id="bob")
    assert exported["tombstones"] == [bees["id"], "m_1"]
    assert exported["historyClearedAt"] == cleared  # the earlier clearing changes nothing
    later = agent.memory.clock().isoformat()
    agent.import_(document(historyClearedAt=later, conversations=[]), session_id="bob")
    assert agent.export(session_id="bob")["historyClearedAt"] == later
