"""Shared by the task-list tests: scripted stage answers, agents, starting a review."""

from __future__ import annotations

import asyncio
from typing import Any

from agent import ChatAgent
from graphs.tasklist import (
    PlannedTasklistTask,
    SelfCheck,
    TasklistSummary,
    TasklistTaskResult,
    TaskPlan,
)
from memory import assert_client_safe
from tests.fakes import ScriptedModel

GOAL = "Set up CI. Add linting. Write the docs."
PASSED = SelfCheck(passed=True)


def plan(*titles: str) -> TaskPlan:
    return TaskPlan(
        tasks=[
            PlannedTasklistTask(id=f"p{n}", title=title, acceptance_criteria=[f"{title} works"])
            for n, title in enumerate(titles, 1)
        ]
    )


def done(outcome: str = "done") -> TasklistTaskResult:
    return TasklistTaskResult(status="completed", outcome=outcome)


def summary(outcome: str = "All went well.") -> TasklistSummary:
    return TasklistSummary(outcome=outcome, done=["CI runs"], remaining=[], manual_checks=[])


def scripted(*structured: Any, replies: list[Any] | None = None) -> ScriptedModel:
    return ScriptedModel(structured=list(structured), replies=replies or [])


def requests(model: ScriptedModel, schema: type) -> list[str]:
    found = [call for call in model.structured_calls if call["schema"] is schema]
    return [call["messages"][-1].text for call in found]


def texts(agent: ChatAgent, cid: str, session: str = "s1") -> list[str]:
    hydration = agent.hydrate(session_id=session, conversation_id=cid)
    assert_client_safe(hydration)
    return [message["text"] for message in hydration["messages"]]


def start(agent: ChatAgent, goal: str = GOAL, session: str = "s1") -> tuple[str, dict[str, Any]]:
    result = agent.send(goal, session_id=session, create_conversation=True, mode="tasklist")
    assert (result.status, result.route, result.memory_written) == (
        "interrupted",
        "tasklist",
        False,
    )
    assert result.interrupt is not None
    return result.conversation_id, result.interrupt


def invoke(graph: Any, graph_input: Any, config: Any) -> dict[str, Any]:
    return dict(asyncio.run(graph.ainvoke(graph_input, config)))
