"""Documents an import refuses with nothing written (`ChatAgent.import_`): past the item
limit, a transaction that fails, a tampered document named by what is wrong, what is no
export document at all, and one too large to read."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent, InvalidRequest
from memory.errors import StorageError
from memory.limits import MAX_EXPORT_BYTES, MAX_EXPORT_TEXT_CHARS
from tests.unit.transfer_support import (
    assert_nothing_written,
    document,
    extracting_agent,
    item,
    line,
    sqlite_agent_on,
)


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], tmp_path: Path) -> ChatAgent:
    return extracting_agent(open_agent, tmp_path)


@pytest.fixture
def sqlite_agent(tmp_path: Path) -> Iterator[ChatAgent]:
    with sqlite_agent_on(tmp_path) as opened:
        yield opened


def test_a_document_past_the_item_limit_is_refused_whole(agent: ChatAgent) -> None:
    agent.remember("I keep bees", session_id="bob")
    many = [item(f"I own {n} bikes", n) for n in range(100)]
    with pytest.raises(InvalidRequest, match=r"101 long-term items \(current\).*at most 100"):
        agent.import_(document(memories=many), session_id="bob")
    assert [m["text"] for m in agent.memories(session_id="bob")["memories"]] == ["I keep bees"]
    assert agent.conversations(session_id="bob")["conversations"] == []
    assert agent.memory.archive.count("bob") == 0


def test_an_import_whose_transaction_fails_writes_nothing(
    agent: ChatAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(store: object, ops: object) -> Callable[[object], None]:
        def step(cursor: object) -> None:
            raise RuntimeError("the disk is full")

        return step

    # the items go last in the transaction: the conversation and its lines were written
    monkeypatch.setattr("memory.transfer.items_step", failing)
    with pytest.raises(StorageError):
        agent.import_(document(), session_id="bob")
    assert_nothing_written(agent, "bob")


def tampered(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    sent = copy.deepcopy(document())
    change(sent)
    return sent


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    """A change setting the value at `a.0.b` (a key or a list index at each step)."""

    def change(sent: dict[str, Any]) -> None:
        *steps, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target: Any = sent
        for step in steps:
            target = target[step]
        target[last] = value

    return change


TAMPERED = {
    "wrong version": (_set("version", 2), "version"),
    "wrong format": (_set("format", "someone-else"), "format"),
    "a title that is no string": (_set("conversations.0.title", 5), "conversations.0.title"),
    "an extra key": (_set("owner", "alice"), "owner"),
    "an extra key in an item": (_set("memories.0.owner", "alice"), "memories.0.owner"),
    "an extra key in a memory": (
        _set("conversations.0.memory.threadId", "x"),
        "conversations.0.memory.threadId",
    ),
    "a message id with bad characters": (
        _set("conversations.0.memory.messages.0.id", "../m1"),
        "messages.0.id",
    ),
    "a line's message id with bad characters": (
        _set("archive.0.messageId", "m 1"),
        "archive.0.messageId",
    ),
    "an item id with bad characters": (_set("memories.0.id", "m/1"), "memories.0.id"),
    "a huge line": (_set("archive.0.text", "x" * (MAX_EXPORT_TEXT_CHARS + 1)), "archive.0.text"),
    "a huge message": (
        _set("conversations.0.memory.messages.1.text", "x" * (MAX_EXPORT_TEXT_CHARS + 1)),
        "conversations.0.memory",
    ),
    "a NUL in a text": (_set("archive.1.text", "a\x00b"), "cannot be stored"),
    "a time without its zone": (_set("archive.0.createdAt", "2025-03-01T10:00:00"), "createdAt"),
    "an unknown role": (_set("archive.0.role", "system"), "archive.0.role"),
    "eleven conversations": (
        lambda sent: sent.update(
            conversations=[{**sent["conversations"][0], "id": f"c{n}"} for n in range(11)]
        ),
        "conversations",
    ),
    "an item twice": (
        lambda sent: sent["memories"].append(sent["memories"][0]),
        "memory id appears once",
    ),
    "no archive": (lambda sent: sent.pop("archive"), "archive"),
}


@pytest.mark.parametrize("case", TAMPERED, ids=list(TAMPERED))
def test_a_tampered_document_is_refused_naming_what_is_wrong(
    sqlite_agent: ChatAgent, case: str
) -> None:
    change, named = TAMPERED[case]
    with pytest.raises(InvalidRequest) as refused:
        sqlite_agent.import_(tampered(change), session_id="bob")
    assert named in str(refused.value)
    assert_nothing_written(sqlite_agent, "bob")


@pytest.mark.parametrize(
    "sent",
    [b"{not json", b"[]", "null", b"\xff\xfe", b" " * (MAX_EXPORT_BYTES + 1)],
    ids=["not JSON", "a list", "null", "not UTF-8", "over 10 MB"],
)
def test_what_is_no_document_is_refused(sqlite_agent: ChatAgent, sent: bytes | str) -> None:
    with pytest.raises(InvalidRequest, match="export document"):
        sqlite_agent.import_(sent, session_id="bob")
    assert_nothing_written(sqlite_agent, "bob")


def test_an_oversized_document_is_refused_before_it_is_read(sqlite_agent: ChatAgent) -> None:
    lines = [line("c1", f"m{n}", "user", "x" * MAX_EXPORT_TEXT_CHARS) for n in range(170)]
    with pytest.raises(InvalidRequest, match="at most 10,485,760 bytes"):
        sqlite_agent.import_(document(archive=lines), session_id="bob")
    assert_nothing_written(sqlite_agent, "bob")
