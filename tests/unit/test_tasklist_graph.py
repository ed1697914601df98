"""The task-list subgraph on its own (as Studio and the SDK drive it) and the offline model."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent.offline import OfflineChatModel
from agent.offline.tasklist import plan_titles
from graphs.tasklist import MAX_TASKS, MIN_PLANNED_TASKS, TaskPlan, build_tasklist_graph
from tests.unit.tasklist_support import (
    GOAL,
    PASSED,
    done,
    invoke,
    plan,
    requests,
    scripted,
    start,
    summary,
    texts,
)

pytestmark = pytest.mark.sqlite_only  # graph logic: storage is tested on every backend elsewhere


# -- the subgraph on its own (as Studio and the SDK drive it) ------------------------------


def test_only_the_workflow_output_leaves_the_subgraph() -> None:
    model = scripted(plan("Set up CI"), done(), PASSED, summary())
    graph = build_tasklist_graph(
        model=model, background=lambda s, c: ("We use GitHub.", ["Always use ruff."])
    ).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    paused = invoke(graph, {"user_text": GOAL}, config)  # the ids: the run's (its thread)
    assert set(paused) == {"__interrupt__"}
    plan_request = requests(model, TaskPlan)[0]
    assert "We use GitHub." in plan_request and "1. Always use ruff." in plan_request
    out = invoke(graph, Command(resume={"action": "approve"}), config)
    assert set(out) == {"workflow_text", "workflow_status"}
    assert out["workflow_status"] == "completed"


def test_topology() -> None:
    drawn = build_tasklist_graph(model=OfflineChatModel()).compile().get_graph()
    edges = {(edge.source, edge.target) for edge in drawn.edges}
    assert edges == {
        ("__start__", "plan_tasks"),
        ("plan_tasks", "review_strategy"),
        ("plan_tasks", "__end__"),
        ("review_strategy", "plan_tasks"),
        ("review_strategy", "execute_tasks"),
        ("review_strategy", "__end__"),
        ("execute_tasks", "execute_tasks"),
        ("execute_tasks", "check_results"),
        ("execute_tasks", "__end__"),
        ("check_results", "review_revision"),
        ("check_results", "summarize"),
        ("check_results", "__end__"),
        ("review_revision", "execute_tasks"),
        ("review_revision", "summarize"),
        ("summarize", "__end__"),
    }


# -- the offline model ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("goal", "expected"),
    [
        ("Set up CI. Add linting. Write the docs.", ["Set up CI", "Add linting", "Write the docs"]),
        (
            "Research databases, compare Postgres and SQLite, then write it up",
            ["Research databases", "Compare Postgres and SQLite", "Write it up"],
        ),
        ("Write a blog post", ["Write a blog post", "Check the result against the goal"]),
        ("a. b. c. d. e. f. g. h.", ["A", "B", "C", "D", "E", "F", "Finish the rest: G; H"]),
        ("重构登录模块。添加测试。验证性能。", ["重构登录模块", "添加测试", "验证性能"]),
    ],
)
def test_offline_plans_follow_the_goal(goal: str, expected: list[str]) -> None:
    titles = plan_titles(goal)
    assert titles[: len(expected)] == expected
    assert MIN_PLANNED_TASKS <= len(titles) <= MAX_TASKS


def test_offline_feedback_adds_a_task_and_verify_goals_end_blocked(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, review = start(agent, "Deploy the app. Verify the deploy. Tell the team.")
    assert len(review["tasks"]) == 3
    again = agent.resume(
        {"action": "respond", "feedback": "Also write release notes"},
        session_id="s1",
        conversation_id=cid,
    )
    assert again.interrupt is not None
    assert (
        again.interrupt["tasks"][-1]["title"]
        == "Address the review feedback: Also write release notes"
    )
    revision = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert revision.interrupt is not None
    [issue] = revision.interrupt["issues"]
    assert issue["task_title"] == "Verify the deploy" and issue["blocking"] is True
    result = agent.resume({"action": "revise"}, session_id="s1", conversation_id=cid)
    assert (result.status, result.memory_written) == ("blocked", True)
    assert "Offline model" in result.text and "cannot verify" in result.text
    assert texts(agent, cid) == ["Deploy the app. Verify the deploy. Tell the team.", result.text]
