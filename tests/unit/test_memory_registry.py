"""The conversation registry: drafts, at most ten, ordering, selection, pruning, foreign ids."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from agent import ChatAgent
from memory import ConversationNotFound, InvalidInput, new_conversation_id
from memory.conversations import ConversationMemory
from memory.registry import make_title
from memory.turns import chat_turn
from tests.fakes import ScriptedModel
from tests.storage_support import iter_thread_ids


def listed(memory: ConversationMemory, session: str = "s1") -> list[str]:
    return [c["id"] for c in memory.conversations(session)["conversations"]]


def start(memory: ConversationMemory, cid: str, text: str = "hello", session: str = "s1") -> None:
    memory.accept_draft(session, cid)
    memory.write_turn(session, cid, chat_turn(text, f"re: {text}"))


def test_a_draft_stores_nothing(memory: ConversationMemory) -> None:
    cid = new_conversation_id()
    assert memory.conversations("s1") == {
        "selectedConversationId": None,
        "conversations": [],
        "limit": 10,
    }
    assert list(iter_thread_ids(memory.threads)) == []
    with pytest.raises(ConversationNotFound):
        memory.hydrate("s1", cid)


def test_accepted_draft_is_owned_but_listed_only_after_its_first_turn(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft("s1", "c1")
    assert listed(memory) == []
    assert memory.conversations("s1")["selectedConversationId"] == "c1"
    assert memory.hydrate("s1", "c1")["restored"] is False
    memory.write_turn("s1", "c1", chat_turn("  Plan   the\nlaunch  ", "ok"))
    entry = memory.conversations("s1")["conversations"][0]
    assert (entry["id"], entry["title"]) == ("c1", "Plan the launch")
    assert set(entry) == {"id", "title", "createdAt", "lastActiveAt", "reviewPending"}


def test_title_is_first_message_collapsed_and_at_most_80_chars() -> None:
    assert make_title("a\n\tb   c") == "a b c"
    long = make_title("word " * 40)
    assert len(long) == 80 and long.endswith("…")


def test_title_does_not_change_on_later_turns(memory: ConversationMemory) -> None:
    start(memory, "c1", "first")
    memory.write_turn("s1", "c1", chat_turn("second", "ok"))
    assert memory.conversations("s1")["conversations"][0]["title"] == "first"


def test_ordered_by_last_activity_and_selection_does_not_reorder(
    memory: ConversationMemory,
) -> None:
    for cid in ("c1", "c2", "c3"):
        start(memory, cid)
    assert listed(memory) == ["c3", "c2", "c1"]
    memory.select("s1", "c1")
    assert listed(memory) == ["c3", "c2", "c1"]
    assert memory.conversations("s1")["selectedConversationId"] == "c1"
    memory.write_turn("s1", "c1", chat_turn("again", "sure"))
    assert listed(memory) == ["c1", "c3", "c2"]


def test_eleventh_conversation_prunes_the_least_recent_and_its_threads(
    memory: ConversationMemory,
) -> None:
    for n in range(10):
        start(memory, f"c{n}")
    memory.write_turn("s1", "c0", chat_turn("keep c0 alive", "ok"))  # c1 is now the oldest
    run_thread = memory.run_thread("s1", "c1")
    memory.threads.put(run_thread, {"turn": "state"})  # stands in for the agent's run thread
    memory.threads.put(memory.run_thread("s1", "c2"), {"turn": "state"})
    start(memory, "c10")
    ids = listed(memory)
    assert len(ids) == 10 and "c1" not in ids and ids[0] == "c10" and "c0" in ids
    threads = set(iter_thread_ids(memory.threads))
    assert memory.memory_thread("s1", "c1") not in threads
    assert run_thread not in threads
    assert memory.run_thread("s1", "c2") in threads
    with pytest.raises(ConversationNotFound):
        memory.hydrate("s1", "c1")
    with pytest.raises(ConversationNotFound):
        memory.select("s1", "c1")


def test_the_pruned_conversation_is_named_by_the_write_that_pruned_it(
    memory: ConversationMemory,
) -> None:
    for n in range(10):
        start(memory, f"c{n}", text=f"topic {n}")
    memory.accept_draft("s1", "c10")
    write = memory.write_turn("s1", "c10", chat_turn("the eleventh", "ok"))
    assert write.pruned == ("c0",) and write.pruned_titles == ("topic 0",)


def test_a_review_lists_a_conversation_and_prunes_past_ten(memory: ConversationMemory) -> None:
    for n in range(10):
        start(memory, f"c{n}", text=f"topic {n}")
    memory.accept_draft("s1", "c10")
    assert memory.await_review("s1", "c10", "Plan the launch") == ("topic 0",)
    entries = memory.conversations("s1")["conversations"]
    assert (entries[0]["id"], entries[0]["title"], entries[0]["reviewPending"]) == (
        "c10",
        "Plan the launch",
        True,
    )
    assert "c0" not in listed(memory)
    with pytest.raises(ConversationNotFound):
        memory.await_review("s1", "c0", "gone")


def test_unknown_and_foreign_ids_are_not_found(memory: ConversationMemory) -> None:
    start(memory, "c1", session="alice")
    for call in (
        memory.hydrate,
        memory.select,
        memory.delete_conversation,
        memory.require_conversation,
    ):
        with pytest.raises(ConversationNotFound):
            call("mallory", "c1")
        with pytest.raises(ConversationNotFound):
            call("alice", "nope")
    assert listed(memory, "alice") == ["c1"]
    assert memory.conversations("mallory")["conversations"] == []


def test_same_conversation_id_in_two_sessions_is_isolated(memory: ConversationMemory) -> None:
    start(memory, "c1", "alice secret", session="alice")
    start(memory, "c1", "bob text", session="bob")
    alice = memory.hydrate("alice", "c1")["messages"]
    bob = memory.hydrate("bob", "c1")["messages"]
    assert [m["text"] for m in alice] == ["alice secret", "re: alice secret"]
    assert [m["text"] for m in bob] == ["bob text", "re: bob text"]


def test_delete_removes_listing_selection_and_threads(memory: ConversationMemory) -> None:
    start(memory, "c1")
    start(memory, "c2")
    memory.threads.put(memory.run_thread("s1", "c2"), {"turn": "state"})
    result = memory.delete_conversation("s1", "c2")
    assert [c["id"] for c in result["conversations"]] == ["c1"]
    assert result["selectedConversationId"] is None
    remaining = set(iter_thread_ids(memory.threads))
    assert memory.memory_thread("s1", "c2") not in remaining
    assert memory.run_thread("s1", "c2") not in remaining
    with pytest.raises(ConversationNotFound):
        memory.delete_conversation("s1", "c2")


def test_pending_drafts_are_bounded(memory: ConversationMemory) -> None:
    for n in range(12):
        memory.accept_draft("s1", f"d{n}")
    registry = memory.registry("s1")
    assert registry.pending == [f"d{n}" for n in range(2, 12)]
    with pytest.raises(ConversationNotFound):
        memory.require_conversation("s1", "d0")


@pytest.mark.parametrize("bad", ["", "x" * 121, "../etc", "a b", "ä"])
def test_bad_ids_are_refused_at_the_boundary_and_write_nothing(
    open_agent: Callable[..., ChatAgent], bad: str
) -> None:
    agent = open_agent(ScriptedModel(replies=["ok"]))
    for call in (agent.select, agent.hydrate, agent.delete_conversation, agent.recover):
        with pytest.raises(InvalidInput):
            call(session_id="s1", conversation_id=bad)
    with pytest.raises(InvalidInput):
        agent.send("q", session_id="s1", conversation_id=bad)
    with pytest.raises(InvalidInput):
        agent.send("q", session_id=bad, create_conversation=True)
    assert list(iter_thread_ids(agent.memory.threads)) == []


def test_dtos_carry_no_session_or_thread_ids(memory: ConversationMemory) -> None:
    session = "session-XYZ"
    start(memory, "c1", session=session)
    session_hash = memory.ids.registry_thread(session).split(":")[1]
    for dto in (memory.conversations(session), memory.hydrate(session, "c1")):
        text = json.dumps(dto)
        assert session not in text and session_hash not in text
        assert "chat-conversation" not in text and "agent-run" not in text


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("**Plan** the `deploy` for _Friday_", "Plan the deploy for Friday"),
        ("# Release notes\n- item one", "Release notes item one"),
        ("see [the docs](https://example.com/x) first", "see the docs first"),
        ("> quoted ask", "quoted ask"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("**", "**"),
    ],
)
def test_a_title_is_plain_text(text: str, title: str) -> None:
    assert make_title(text) == title
