"""Studio's time travel under the real `langgraph dev` server, driven with `langgraph_sdk`:
a thread's history, a run from an earlier checkpoint, a task list forked from its plan."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import get_client

from tests.integration.conftest import Server
from tests.integration.test_tasklist_dev import GOAL, pending, resume, start_run

pytestmark = pytest.mark.integration


def checkpoint_id(state: Any) -> str:
    return str(state["checkpoint"]["checkpoint_id"])


def user_text(state: Any) -> Any:
    messages = dict(state["values"]).get("messages") or []
    return messages[0]["content"] if messages else None


def test_history_and_a_run_from_an_earlier_checkpoint(langgraph_dev: Server) -> None:
    async def go() -> tuple[list[Any], Any, list[Any]]:
        client = get_client(url=langgraph_dev.url)
        thread = await client.threads.create()
        tid = thread["thread_id"]
        for text in ("first message", "second message"):
            await client.runs.wait(tid, "agent", input={"message": text}, raise_error=False)
        history = await client.threads.get_history(tid, limit=100)
        first_end = next(
            state for state in history if not state["next"] and user_text(state) == "first message"
        )
        forked = await client.runs.wait(
            tid,
            "agent",
            input={"message": "another second message"},
            checkpoint_id=checkpoint_id(first_end),
            raise_error=False,
        )
        return history, (first_end, forked), await client.threads.get_history(tid, limit=100)

    history, (first_end, forked), after = asyncio.run(go())
    ends = [user_text(state) for state in history if not state["next"]]
    assert ends == ["second message", "first message"]
    assert forked["status"] == "completed"
    # the new run continues from the first turn's checkpoint: a branch beside the second
    head = after[0]
    assert user_text(head) == "another second message"
    parents = {checkpoint_id(state): state["parent_checkpoint"] for state in after}
    ancestry, current = [], head["parent_checkpoint"]
    while current is not None:
        ancestry.append(current["checkpoint_id"])
        current = parents.get(current["checkpoint_id"])
    assert checkpoint_id(first_end) in ancestry
    second_end = next(s for s in history if user_text(s) == "second message")
    assert checkpoint_id(second_end) not in ancestry
    assert checkpoint_id(second_end) in parents  # the other branch is still there


def test_a_task_list_is_forked_from_its_plan(langgraph_dev: Server) -> None:
    async def go() -> tuple[dict[str, Any], ...]:
        client = get_client(url=langgraph_dev.url)
        tid, paused = await start_run(langgraph_dev, GOAL)
        finished = await resume(langgraph_dev, tid, {"action": "approve"})
        history = await client.threads.get_history(tid, limit=100)
        plan = next(state for state in history if state["next"] == ["tasklist"])
        # Studio's fork: a copy of the checkpoint, without the writes recorded on it
        fork = await client.threads.update_state(
            tid, None, as_node="__copy__", checkpoint_id=checkpoint_id(plan)
        )
        replanned = await client.runs.wait(
            tid,
            "agent",
            input=None,
            checkpoint_id=fork["checkpoint"]["checkpoint_id"],
            raise_error=False,
        )
        assert isinstance(replanned, dict)
        rejected = await resume(langgraph_dev, tid, {"action": "reject", "reason": "Too broad."})
        return paused, finished, replanned, rejected

    paused, finished, replanned, rejected = asyncio.run(go())
    assert (finished["status"], finished["route"]) == ("completed", "tasklist")
    # the fork is back at the plan's review, and answers it differently this time
    assert pending(replanned)["tasks"] == pending(paused)["tasks"]
    assert (rejected["status"], rejected["route"]) == ("cancelled", "tasklist")
    assert rejected["answer"] == "The plan was rejected: Too broad. Nothing was run."
