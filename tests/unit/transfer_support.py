"""Shared by the export and import tests: a scripted extraction model and an agent over it,
conversations talked with each turn's upkeep paid, and a small valid export document with
its builders."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agent import ChatAgent
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.settings import Settings
from memory.longterm import ExtractionOutput, Operation
from memory.longterm.items import normalise
from tests.conftest import SECRET

T0 = "2025-03-01T10:00:00+00:00"
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


def extracting_agent(open_agent: Callable[..., ChatAgent], tmp_path: Path) -> ChatAgent:
    """An agent on the test's backend whose every turn's upkeep extracts: the documents
    compared hold each turn's items."""
    settings = Settings(data_dir=tmp_path / "data", extraction_batch_turns=1)
    return open_agent(model(), long_term_memory="model", settings=settings)


def sqlite_agent_on(tmp_path: Path) -> ChatAgent:
    """The same agent on a SQLite database of its own."""
    return agent_on(f"sqlite:///{tmp_path / 'a.sqlite'}", tmp_path / "data")


def talk(agent: ChatAgent, session: str, *messages: str) -> str:
    """A new conversation of `messages`, each turn's upkeep paid; its id."""
    conversation = agent.send(messages[0], session_id=session, create_conversation=True)
    for message in messages[1:]:
        agent.send(message, session_id=session, conversation_id=conversation.conversation_id)
    assert agent.wait_for_upkeep(30)
    return conversation.conversation_id


def undated(document: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in document.items() if k != "exportedAt"}


def keys(value: Any) -> Iterator[str]:
    """Every object key in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item)


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
