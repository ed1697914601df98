"""Export and import (`ChatAgent.export`, `import_`): a round trip into a fresh database
on each backend, idempotence, isolation, the rules of a merge, and documents refused
with nothing written."""

from __future__ import annotations

import copy
import io
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent, InvalidRequest
from agent.cli.session import ChatSession, echo_reader
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.settings import Settings
from memory.archive.lines import REDACTED
from memory.errors import StorageError
from memory.hydration import assert_client_safe
from memory.limits import MAX_EXPORT_BYTES, MAX_EXPORT_TEXT_CHARS
from memory.longterm import ExtractionOutput, Operation
from memory.longterm.items import normalise
from tests.conftest import POSTGRES_ADMIN_URL, SECRET
from tests.unit.cli_support import chat

T0 = "2025-03-01T10:00:00+00:00"
QUERIES = ("Lisbon trams", "live in Lisbon", "hiking trails", "sourdough", "bikes", "bees")
SECRET_TEXT = "my password is hunter2"
MOVED = "I moved to Porto."


def moving(messages: Any) -> ExtractionOutput:
    """A scripted extraction model: "I moved to Porto." updates the Lisbon item."""
    document = json.loads(str(messages[-1].content))
    homes = [m["id"] for m in document["current_memories"] if "Lisbon" in m["text"]]
    return ExtractionOutput(
        operations=[
            Operation(op="update", turn=n, quote=MOVED, id=homes[0], kind="fact", text=MOVED)
            for n, turn in enumerate(document["turns"], start=1)
            if turn["user"] == MOVED and homes
        ]
    )


def model() -> OfflineChatModel:
    return OfflineChatModel(structured_handlers={**DEFAULT_HANDLERS, ExtractionOutput: moving})


def agent_on(url: str, data: Path, secret: str = SECRET) -> ChatAgent:
    return ChatAgent(
        database_url=url,
        model=model(),
        secret=secret,
        settings=Settings(data_dir=data, extraction_batch_turns=1),
        long_term_memory="model",
    )


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], tmp_path: Path) -> ChatAgent:
    # each turn's upkeep extracts: the documents compared hold each turn's items
    settings = Settings(data_dir=tmp_path / "data", extraction_batch_turns=1)
    return open_agent(model(), long_term_memory="model", settings=settings)


@pytest.fixture
def fresh_url(db_url: str, tmp_path: Path) -> Iterator[str]:
    """Another, empty database on the test's backend."""
    if db_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'fresh.sqlite'}"
        return
    import psycopg

    name = f"agent_fresh_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield f"{POSTGRES_ADMIN_URL.rpartition('/')[0]}/{name}"
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def talk(agent: ChatAgent, session: str, *messages: str) -> str:
    """A new conversation of `messages`, each turn's upkeep paid; its id."""
    conversation = agent.send(messages[0], session_id=session, create_conversation=True)
    for message in messages[1:]:
        agent.send(message, session_id=session, conversation_id=conversation.conversation_id)
    assert agent.wait_for_upkeep(30)
    return conversation.conversation_id


def fill(agent: ChatAgent, session: str) -> None:
    """A session with a compacted conversation, long-term items and their history, a
    forgotten item, and a conversation pruned from the list (its lines archived still)."""
    talk(agent, session, "Tell me how to bake sourdough.", "And the starter?")
    for n in range(8):
        talk(agent, session, f"Chat number {n} about bikes")
    talk(agent, session, "Remember that I keep bees.")
    (bees,) = [m for m in agent.memories(session_id=session)["memories"] if "bees" in m["text"]]
    agent.forget(bees["id"], session_id=session)
    talk(
        agent,
        session,
        "Remember that I prefer short answers. Remember that I live in Lisbon.",
        *(f"Tell me about the Lisbon trams, line {n}" for n in range(8)),
    )
    talk(agent, session, MOVED, "Any hiking trails near Sintra?")


def without_ids(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # a line's id is its row in the database that holds it: renumbered by an import
    return [{k: v for k, v in hit.items() if k != "id"} for hit in results]


def views(agent: ChatAgent, session: str) -> dict[str, Any]:
    """What a client reads of the session: listing, every conversation, items, searches."""
    listing = agent.conversations(session_id=session)["conversations"]
    return {
        "listing": listing,
        "hydrate": [agent.hydrate(session_id=session, conversation_id=c["id"]) for c in listing],
        "memories": agent.memories(session_id=session, include_history=True),
        "search": {
            query: without_ids(agent.search_conversations(query, session_id=session, limit=50))
            for query in QUERIES
        },
    }


def undated(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "exportedAt"}


def test_a_round_trip_into_a_fresh_database_gives_the_same_memory_and_search(
    agent: ChatAgent, fresh_url: str, tmp_path: Path
) -> None:
    fill(agent, "alice")
    document = agent.export(session_id="alice")
    before = views(agent, "alice")
    # what the round trip has to carry is there
    assert len(before["listing"]) == len(document["conversations"]) == 10
    assert any(h["summaryVersion"] > 0 and h["summary"] for h in before["hydrate"])
    memories = before["memories"]
    assert len(memories["memories"]) + len(memories["history"]) == len(document["memories"])
    assert memories["history"] and memories["memories"]
    assert len(document["tombstones"]) == 1
    assert all(before["search"][query] for query in QUERIES[:-1])
    assert any(hit["superseded"] for hit in before["search"]["live in Lisbon"])
    listed = {c["id"] for c in before["listing"]}
    assert any(hit["conversationId"] not in listed for hit in before["search"]["sourdough"])
    assert any(line["role"] == "summary" for line in document["archive"])
    # another database, another server secret: nothing of the first one's keys carries
    text = json.dumps(document)
    for key in (agent.memory.ids.session_key("alice"), "alice", "thread", "session"):
        assert key not in text
    assert_client_safe(document)
    assert "_" not in "".join(keys(document))  # one key style, the API's

    with agent_on(fresh_url, tmp_path / "fresh-data", secret="t" * 40) as fresh:
        summary = fresh.import_(json.dumps(document).encode(), session_id="alice")
        assert summary == {
            "conversations": {"imported": 10, "skipped": 0, "pruned": 0},
            "memories": {"imported": len(document["memories"]), "skipped": 0},
            "archive": {"imported": len(document["archive"]), "skipped": 0, "redacted": 0},
        }
        assert views(fresh, "alice") == before
        assert undated(fresh.export(session_id="alice")) == undated(document)


def keys(value: Any) -> Iterator[str]:
    """Every object key in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item)


def test_an_export_of_an_earlier_release_with_snake_case_keys_imports_the_same(
    sqlite_agent: ChatAgent,
) -> None:
    earlier = (Path(__file__).parent / "snapshots" / "export_earlier_release.json").read_text()
    assert '"created_at"' in earlier and '"createdAt"' in earlier  # both spellings
    summary = sqlite_agent.import_(earlier, session_id="bob")
    assert summary["conversations"]["imported"] == summary["memories"]["imported"] == 1
    (item,) = sqlite_agent.memories(session_id="bob")["memories"]
    assert item["text"] == "I bake bread on Sundays"
    stated = json.loads(earlier)["memories"][0]["created_at"]
    assert datetime.fromisoformat(item["createdAt"]) == datetime.fromisoformat(stated)
    (listed,) = sqlite_agent.conversations(session_id="bob")["conversations"]
    hydrated = sqlite_agent.hydrate(session_id="bob", conversation_id=listed["id"])
    messages = json.loads(earlier)["conversations"][0]["memory"]["messages"]
    assert [m["text"] for m in hydrated["messages"]] == [m["text"] for m in messages]
    again = sqlite_agent.export(session_id="bob")
    assert "_" not in "".join(keys(again)) and again["memories"][0]["createdAt"]


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


def line(conversation: str, message: str, role: str, text: str, title: str = "t") -> dict[str, Any]:
    return {
        "conversationId": conversation,
        "title": title,
        "messageId": message,
        "role": role,
        "createdAt": T0,
        "text": text,
        "covers": None,
    }


def item(text: str, number: int = 1, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"m_{number:016x}",
        "kind": "fact",
        "text": text,
        "importance": 3,
        "createdAt": T0,
        "updatedAt": T0,
        "conversationId": None,
        "key": normalise(text),
        "subject": None,
        **fields,
    }


def message(mid: str, role: str, text: str) -> dict[str, Any]:
    return {"id": mid, "role": role, "text": text, "createdAt": T0}


def document(**parts: Any) -> dict[str, Any]:
    """A small valid document: one conversation, its two lines, one item."""
    return {
        "format": "langgraph-memory-agent.export",
        "version": 1,
        "exportedAt": T0,
        "conversations": [
            {
                "id": "c1",
                "title": "Sourdough",
                "createdAt": T0,
                "lastActiveAt": T0,
                "memory": {
                    "messages": [
                        message("m1-u", "user", "How do I bake sourdough?"),
                        message("m1-a", "assistant", "Slowly."),
                    ]
                },
            }
        ],
        "memories": [item("I bake bread on Sundays")],
        "archive": [
            line("c1", "m1-u", "user", "How do I bake sourdough?"),
            line("c1", "m1-a", "assistant", "Slowly."),
        ],
        "tombstones": [],
        **parts,
    }


def assert_nothing_written(agent: ChatAgent, session: str) -> None:
    assert agent.conversations(session_id=session)["conversations"] == []
    assert agent.memories(session_id=session)["memories"] == []
    assert agent.memory.archive.count(session) == 0


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


@pytest.fixture
def sqlite_agent(tmp_path: Path) -> Iterator[ChatAgent]:
    with agent_on(f"sqlite:///{tmp_path / 'a.sqlite'}", tmp_path / "data") as opened:
        yield opened


def test_the_cli_exports_to_a_private_file_and_imports_it_into_another_session(
    sqlite_agent: ChatAgent, tmp_path: Path
) -> None:
    talk(sqlite_agent, "s1", "Remember that I prefer short answers.", "Tell me about sourdough.")
    saved, bad = tmp_path / "export.json", tmp_path / "bad.json"
    bad.write_text(json.dumps({**document(), "version": 2}))
    said, errors, code = chat(
        sqlite_agent, f"/export {saved}", f"/import {tmp_path / 'missing.json'}", "/export", "/quit"
    )
    assert code == 0 and f"exported this session to {saved}" in said
    assert saved.stat().st_mode & 0o777 == 0o600
    assert undated(json.loads(saved.read_text())) == undated(sqlite_agent.export(session_id="s1"))
    assert errors.splitlines() == [
        f"error: cannot read {tmp_path / 'missing.json'}: No such file or directory",
        "error: usage: /export FILE",
    ]
    lines = f"/import {saved}\n/import {saved}\n/import {bad}\n"
    out, err = io.StringIO(), io.StringIO()
    reader = echo_reader(io.StringIO(lines), out)
    assert ChatSession(sqlite_agent, session_id="s2", read_line=reader, out=out, err=err).run() == 0
    first, second = out.getvalue().split("> /import")[1:3]
    assert "  conversations: 1 imported, 0 skipped, 0 pruned" in first
    assert "  memories: 1 imported, 0 skipped" in first
    assert "  conversations: 0 imported, 1 skipped, 0 pruned" in second
    assert err.getvalue().startswith("error: invalid export document: version: ")
    assert sqlite_agent.memories(session_id="s2") == sqlite_agent.memories(session_id="s1")
