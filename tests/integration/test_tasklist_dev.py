"""The task-list route for real: `langgraph dev` with `Command(resume=…)`, and a restart.

The server runs the offline model, whose plans follow the goal's sentences and whose
self-check flags tasks that ask to verify something (agent/offline/tasklist.py).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph_sdk import get_client

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.settings import Settings
from memory import assert_client_safe
from tests.conftest import SECRET
from tests.integration.conftest import REPO, Server, memory_of, server_env

pytestmark = pytest.mark.integration

GOAL = "Set up CI. Add linting. Write the docs."
VERIFY_GOAL = "Deploy the app. Verify the deploy. Tell the team."


async def start_run(server: Server, goal: str) -> tuple[str, dict[str, Any]]:
    client = get_client(url=server.url)
    thread = await client.threads.create()
    output = await client.runs.wait(
        thread["thread_id"], "agent", input={"message": f"/tasklist {goal}"}, raise_error=False
    )
    assert isinstance(output, dict)
    return thread["thread_id"], output


async def resume(server: Server, thread_id: str, decision: dict[str, Any]) -> dict[str, Any]:
    client = get_client(url=server.url)
    output = await client.runs.wait(
        thread_id, "agent", command={"resume": decision}, raise_error=False
    )
    assert isinstance(output, dict)
    assert "hydration" not in output  # a run holds its turn, not the memory
    return {**output, "hydration": await memory_of(server, thread_id)}


def pending(output: dict[str, Any]) -> dict[str, Any]:
    interrupts = output.get("__interrupt__") or []
    assert len(interrupts) == 1, output
    return dict(interrupts[0]["value"])


def stored(output: dict[str, Any]) -> list[str]:
    hydration = output["hydration"]
    assert_client_safe(hydration)
    return [message["text"] for message in hydration["messages"]]


def test_review_then_approve_with_command_resume(langgraph_dev: Server) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        thread_id, paused = await start_run(langgraph_dev, GOAL)
        return paused, await resume(langgraph_dev, thread_id, {"action": "approve"})

    paused, finished = asyncio.run(go())
    review = pending(paused)
    assert review["kind"] == "strategy_review" and review["goal"] == GOAL
    assert [task["title"] for task in review["tasks"]] == [
        "Set up CI",
        "Add linting",
        "Write the docs",
    ]
    assert not paused.get("hydration")  # an interrupted run has written nothing
    assert (finished["status"], finished["route"], finished["memory_written"]) == (
        "completed",
        "tasklist",
        True,
    )
    assert finished["answer"].startswith("### Outcome\nCompleted:")
    assert stored(finished) == [GOAL, finished["answer"]]
    assert "acceptance_criteria" not in json.dumps(finished["hydration"])
    assert "Blocking call" not in langgraph_dev.log.read_text()


def test_a_bad_decision_from_the_sdk_asks_again_then_reject_writes_nothing(
    langgraph_dev: Server,
) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        thread_id, _ = await start_run(langgraph_dev, GOAL)
        again = await resume(langgraph_dev, thread_id, {"action": "launch"})
        rejected = await resume(langgraph_dev, thread_id, {"action": "reject", "reason": "Not now"})
        return again, rejected

    again, rejected = asyncio.run(go())
    review = pending(again)
    assert review["kind"] == "strategy_review" and "unknown action 'launch'" in review["error"]
    assert rejected["answer"] == "The plan was rejected: Not now. Nothing was run."
    assert (rejected["status"], rejected["memory_written"]) == ("cancelled", False)
    assert stored(rejected) == []


def test_a_verify_goal_goes_through_the_revision_review_and_ends_blocked(
    langgraph_dev: Server,
) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any]]:
        thread_id, _ = await start_run(langgraph_dev, VERIFY_GOAL)
        revision = await resume(langgraph_dev, thread_id, {"action": "approve"})
        return revision, await resume(langgraph_dev, thread_id, {"action": "accept"})

    revision, finished = asyncio.run(go())
    review = pending(revision)
    assert review["kind"] == "revision_review" and review["actions"] == ["accept", "revise"]
    assert [issue["task_title"] for issue in review["issues"]] == ["Verify the deploy"]
    assert (finished["status"], finished["memory_written"]) == ("blocked", True)
    assert stored(finished) == [VERIFY_GOAL, finished["answer"]]


RESUME_SCRIPT = """
import json, sys
from pathlib import Path
from agent import ChatAgent, InvalidRequest
from agent.offline import OfflineChatModel
from agent.settings import Settings

db, data_dir, secret, cid = sys.argv[1:5]
with ChatAgent(database_url=db, model=OfflineChatModel(), secret=secret,
               settings=Settings(data_dir=Path(data_dir))) as agent:
    result = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    try:
        agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
        again = "resumed twice"
    except InvalidRequest as exc:
        again = str(exc)
    print(json.dumps({"result": result.to_dict(), "again": again}))
"""


def test_a_review_is_resumed_by_a_new_process_and_written_once(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'agent.sqlite'}"

    def open_agent() -> ChatAgent:
        return ChatAgent(
            database_url=db,
            model=OfflineChatModel(),
            secret=SECRET,
            settings=Settings(data_dir=tmp_path),
        )

    with open_agent() as agent:
        paused = agent.send(GOAL, session_id="s1", create_conversation=True, mode="tasklist")
        assert paused.status == "interrupted"
    cid = paused.conversation_id

    child = subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT, db, str(tmp_path), SECRET, cid],
        cwd=REPO,
        env=server_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert (report["result"]["status"], report["result"]["memoryWritten"]) == ("completed", True)
    assert "no pending review" in report["again"]

    with open_agent() as agent:
        hydration = agent.hydrate(session_id="s1", conversation_id=cid)
        assert_client_safe(hydration)
        assert [m["text"] for m in hydration["messages"]] == [GOAL, report["result"]["text"]]
        run_thread = agent.memory.run_thread("s1", cid)
        assert agent.memory.threads.checkpoint_count(run_thread) == 1
