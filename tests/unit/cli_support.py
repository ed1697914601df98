"""Shared by the CLI tests: review payloads, a conversation listing, a finished turn, a
scripted backend and a chat over it."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from agent.cli.readers import echo_reader
from agent.cli.session import ChatSession

STRATEGY = {
    "kind": "strategy_review",
    "goal": "Launch the beta",
    "tasks": [
        {
            "id": "t1",
            "title": "Write the docs",
            "acceptance_criteria": ["a quickstart exists", "every command is described"],
            "status": "pending",
        },
        {"id": "t2", "title": "Ship the build", "acceptance_criteria": ["it installs"]},
    ],
    "actions": ["approve", "edit", "reject", "respond"],
}
REVISION = {
    "kind": "revision_review",
    "issues": [
        {"task_id": "t2", "task_title": "Ship the build", "description": "No installer yet",
         "blocking": True},
        {"task_id": None, "description": "Check the wording", "blocking": False},
    ],
    "actions": ["accept", "revise"],
}  # fmt: skip

REGISTRY = {
    "selectedConversationId": "b" * 32,
    "conversations": [
        {"id": "a" * 32, "title": "another"},
        {"id": "b" * 32, "title": "hello"},
    ],
    "limit": 10,
}


def done(**result: Any) -> dict[str, Any]:
    return {"event": "done", "result": {"status": "completed", "text": "", **result}}


class FakeBackend:
    """Scripted turns: each call to astream/astream_resume plays the next script entry."""

    def __init__(self, *scripts: Sequence[dict[str, Any] | float] | Exception) -> None:
        self.scripts = list(scripts)
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    async def _play(
        self, name: str, arg: Any, kwargs: dict[str, Any]
    ) -> AsyncGenerator[dict[str, Any], None]:
        self.calls.append((name, arg, kwargs))
        script = self.scripts.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            if isinstance(event, float):  # a pause in the stream, in seconds
                await asyncio.sleep(event)
            else:
                yield event

    def astream(self, message: str, **kwargs: Any) -> AsyncGenerator[dict[str, Any], None]:
        return self._play("astream", message, kwargs)

    def astream_resume(
        self, decision: dict[str, Any], **kwargs: Any
    ) -> AsyncGenerator[dict[str, Any], None]:
        return self._play("resume", decision, kwargs)

    def hydrate(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        return {"conversationId": conversation_id, "messages": [], "pinnedDecisions": []}

    def pending_review(self, *, session_id: str, conversation_id: str) -> dict[str, Any] | None:
        return None

    def conversations(self, *, session_id: str) -> dict[str, Any]:
        return REGISTRY

    def select(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        return {**REGISTRY, "selectedConversationId": conversation_id}


def chat(backend: Any, *lines: str, conversation_id: str | None = None) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    session = ChatSession(
        backend,
        session_id="s1",
        conversation_id=conversation_id,
        read_line=echo_reader(io.StringIO("".join(f"{line}\n" for line in lines)), out),
        out=out,
        err=err,
    )
    code = session.run()
    return out.getvalue(), err.getvalue(), code
