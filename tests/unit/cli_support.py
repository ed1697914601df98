"""Shared by the CLI tests: review payloads, a conversation listing, a finished turn."""

from __future__ import annotations

from typing import Any

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
