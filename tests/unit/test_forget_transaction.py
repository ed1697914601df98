"""Forgetting a profile item is one transaction: the archive's rewrite, the session
memory's redaction and the item's deletion (for a revocation, the long-term write that
retires it) commit together or not at all, on both backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.settings import Settings
from memory import StorageError
from tests.unit.test_forget_redaction import RecordingModel, stored_values

ITEM = "I like green tea"


class Failure(Exception):
    """Stands for a step of the transaction failing after the steps before it ran."""


def spy(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, *, fail: bool = False) -> list[Any]:
    """Wrap `owner.name` to record the cursor of each call (its first argument), and with
    `fail`, raise once it has run; returns the recorded cursors."""
    original = getattr(owner, name)
    cursors: list[Any] = []

    def wrapped(cursor: Any, *args: Any, **kwargs: Any) -> Any:
        cursors.append(cursor)
        result = original(cursor, *args, **kwargs)
        if fail:
            raise Failure()
        return result

    monkeypatch.setattr(owner, name, wrapped)
    return cursors


def send(agent: ChatAgent, text: str, **where: Any) -> Any:
    """A turn, with the memory upkeep after it paid."""
    result = agent.send(text, **where)
    assert agent.wait_for_upkeep(30)
    return result


def archived(agent: ChatAgent, session: str, query: str) -> set[str]:
    return {hit["text"] for hit in agent.search_conversations(query, session_id=session)}


@pytest.mark.parametrize("forget_all", [False, True], ids=["forget", "forget_all"])
def test_a_failed_deletion_leaves_the_item_the_archive_and_the_memory_unredacted(
    open_agent: Callable[..., ChatAgent],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    forget_all: bool,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", long_term_memory="off")
    agent = open_agent(RecordingModel(), settings=settings)
    chat = agent.send(f"{ITEM}, with honey", session_id="s", create_conversation=True)
    item = agent.remember(ITEM, session_id="s")
    rewrites = spy(monkeypatch, agent.memory.archive.backend, "rewrite")
    deletions = spy(monkeypatch, agent.long_term.store, "put_in", fail=True)

    def forget() -> None:
        if forget_all:
            agent.forget_all(session_id="s")
        else:
            agent.forget(item["id"], session_id="s")

    with pytest.raises(StorageError):
        forget()

    # every step ran on one cursor, the deletion last, and none of them stuck
    assert rewrites and deletions and rewrites[0] is deletions[0]
    assert [m["id"] for m in agent.memories(session_id="s")["memories"]] == [item["id"]]
    # (the answer repeats the message: it is indexed without the repetition, not found)
    assert archived(agent, "s", "green tea") == {f"{ITEM}, with honey"}
    texts = [
        m["text"]
        for m in agent.hydrate(session_id="s", conversation_id=chat.conversation_id)["messages"]
    ]
    assert texts == [f"{ITEM}, with honey", f"answer to: {ITEM}, with honey"]
    assert ITEM.casefold() in stored_values(agent)

    monkeypatch.undo()  # forgetting again finishes the job, all of it
    forget()
    assert agent.memories(session_id="s")["memories"] == []
    assert archived(agent, "s", "green tea") == set()
    assert ITEM.casefold() not in stored_values(agent)


def test_a_forgetting_rewrites_the_archive_in_the_transaction_that_deletes_the_item(
    open_agent: Callable[..., ChatAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    send(agent, "Remember that I love spicy food", session_id="s", create_conversation=True)
    (item,) = agent.memories(session_id="s")["memories"]
    rewrites = spy(monkeypatch, agent.memory.archive.backend, "rewrite")
    retirements = spy(monkeypatch, agent.long_term.store, "put_in", fail=True)

    send(agent, "Forget that I love spicy food", session_id="s", create_conversation=True)

    # the deletion failed after the archive's rewrite ran on its cursor: neither stuck
    assert rewrites and retirements and rewrites[0] is retirements[0]
    assert [m["id"] for m in agent.memories(session_id="s")["memories"]] == [item["id"]]
    assert "Remember that I love spicy food" in archived(agent, "s", "spicy food")

    monkeypatch.undo()
    rewrites = spy(monkeypatch, agent.memory.archive.backend, "rewrite")
    retirements = spy(monkeypatch, agent.long_term.store, "put_in")
    send(agent, "Forget that I love spicy food", session_id="s", create_conversation=True)
    assert rewrites and retirements and rewrites[0] is retirements[0]
    assert agent.memories(session_id="s")["memories"] == []
    assert "Remember that I love spicy food" not in archived(agent, "s", "spicy food")
