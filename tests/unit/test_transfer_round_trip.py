"""Export and import (`ChatAgent.export`, `import_`) as a round trip: into a fresh
database on each backend with nothing of the first one's keys carried, from an earlier
release's document, and through the CLI's `/export` and `/import`."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent
from agent.cli.readers import echo_reader
from agent.cli.session import ChatSession
from memory.hydration import assert_client_safe
from tests.conftest import POSTGRES_ADMIN_URL
from tests.unit.cli_support import chat
from tests.unit.transfer_support import (
    MOVED,
    agent_on,
    document,
    extracting_agent,
    keys,
    sqlite_agent_on,
    talk,
    undated,
)

QUERIES = ("Lisbon trams", "live in Lisbon", "hiking trails", "sourdough", "bikes", "bees")


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], tmp_path: Path) -> ChatAgent:
    return extracting_agent(open_agent, tmp_path)


@pytest.fixture
def sqlite_agent(tmp_path: Path) -> Iterator[ChatAgent]:
    with sqlite_agent_on(tmp_path) as opened:
        yield opened


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
