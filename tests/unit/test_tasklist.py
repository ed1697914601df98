"""The task-list subgraph through ChatAgent: reviews, execution, self-check, the memory boundary."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent import InvalidRequest
from agent.offline import OfflineChatModel
from graphs.tasklist import (
    REVISION_REVIEW,
    STRATEGY_REVIEW,
    CheckIssue,
    SelfCheck,
    TasklistSummary,
    TasklistTaskResult,
    TaskPlan,
)
from graphs.tasklist.prompts import FAILED_TEXT
from memory import assert_client_safe
from tests.fakes import ScriptedModel
from tests.unit.tasklist_support import (
    GOAL,
    PASSED,
    done,
    plan,
    requests,
    scripted,
    start,
    summary,
    texts,
)

pytestmark = pytest.mark.sqlite_only  # graph logic: storage is tested on every backend elsewhere

TASK_KEYS = {"id", "title", "acceptance_criteria", "status"}


def calls(model: ScriptedModel) -> list[str]:
    return [call["schema"].__name__ for call in model.structured_calls]


# -- the approve, edit, respond and reject paths -------------------------------------------


def test_approve_runs_every_task_and_writes_goal_and_summary_once(open_agent: Any) -> None:
    model = scripted(plan("Set up CI", "Add linting"), done("CI green"), done("lint on"))
    model.structured += [PASSED, summary("CI and linting are in place.")]
    agent = open_agent(model)
    cid, review = start(agent)
    assert review["kind"] == STRATEGY_REVIEW and review["goal"] == GOAL
    assert review["actions"] == ["approve", "edit", "reject", "respond"]
    assert [task["id"] for task in review["tasks"]] == ["t1", "t2"]
    assert all(set(task) == TASK_KEYS and task["status"] == "pending" for task in review["tasks"])
    assert texts(agent, cid) == []

    result = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert (result.status, result.route, result.memory_written) == ("completed", "tasklist", True)
    assert result.text.startswith("### Outcome\nCompleted: CI and linting are in place.")
    for heading in ("What was done", "What remains", "Needs a manual check"):
        assert f"### {heading}" in result.text
    # planning ran once: the strategy review did not re-run it on resume
    assert calls(model) == [
        "TaskPlan",
        "TasklistTaskResult",
        "TasklistTaskResult",
        "SelfCheck",
        "TasklistSummary",
    ]
    second = requests(model, TasklistTaskResult)[1]
    assert '"title": "Add linting"' in second and "CI green" in second  # earlier results
    assert texts(agent, cid) == [GOAL, result.text]
    hydration = agent.hydrate(session_id="s1", conversation_id=cid)
    # drafts (task results) and the task list (acceptance criteria) stay in the run thread
    for internal in ("CI green", "Set up CI works", "acceptance_criteria", "strategy_review"):
        assert internal not in str(hydration)


def test_edit_executes_the_edited_tasks(open_agent: Any) -> None:
    model = scripted(plan("Planned one", "Planned two", "Planned three"), done(), done())
    model.structured += [PASSED, summary()]
    agent = open_agent(model)
    cid, _ = start(agent)
    edited = [
        {"title": "Write the CI config", "acceptance_criteria": "CI runs on push"},
        {"id": "t1", "title": "Pin the linter", "acceptance_criteria": ["ruff pinned"]},
    ]
    result = agent.resume({"action": "edit", "tasks": edited}, session_id="s1", conversation_id=cid)
    assert result.status == "completed"
    executed = requests(model, TasklistTaskResult)
    assert len(executed) == 2
    assert '"id": "t2", "title": "Write the CI config"' in executed[0]
    assert '"acceptance_criteria": ["CI runs on push"]' in executed[0]
    assert '"id": "t1", "title": "Pin the linter"' in executed[1]
    assert not any("Planned" in request for request in executed)


def test_respond_replans_and_asks_again(open_agent: Any) -> None:
    model = scripted(plan("Old one", "Old two"), plan("New one", "New two", "New three"))
    model.structured += [done(), done(), done(), PASSED, summary()]
    agent = open_agent(model)
    cid, _ = start(agent)
    again = agent.resume(
        {"action": "respond", "feedback": "Split the work into three steps."},
        session_id="s1",
        conversation_id=cid,
    )
    assert again.status == "interrupted" and again.interrupt is not None
    assert again.interrupt["kind"] == STRATEGY_REVIEW
    assert [task["title"] for task in again.interrupt["tasks"]] == [
        "New one",
        "New two",
        "New three",
    ]
    replan = requests(model, TaskPlan)[1]
    assert "Split the work into three steps." in replan and '"title": "Old two"' in replan
    assert texts(agent, cid) == []
    result = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert result.status == "completed" and len(requests(model, TasklistTaskResult)) == 3
    assert texts(agent, cid) == [GOAL, result.text]


def test_reject_writes_nothing_and_says_why(open_agent: Any) -> None:
    model = scripted(plan("Set up CI"))
    agent = open_agent(model)
    cid, _ = start(agent)
    result = agent.resume(
        {"action": "reject", "reason": "Too broad."}, session_id="s1", conversation_id=cid
    )
    assert result.text == "The plan was rejected: Too broad. Nothing was run."
    assert result.status == "cancelled" and result.memory_written is False
    assert calls(model) == ["TaskPlan"]
    assert texts(agent, cid) == []
    with pytest.raises(InvalidRequest, match="no pending review"):
        agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)


# -- self-check and the revision review ---------------------------------------------------


def short(task_id: str | None = "t2") -> SelfCheck:
    issue = CheckIssue(task_id=task_id, description="Lint rules missing", blocking=True)
    return SelfCheck(passed=False, issues=[issue])


def test_revision_review_accepted_as_is_ends_blocked_and_writes_once(open_agent: Any) -> None:
    model = scripted(plan("Set up CI", "Add linting"), done(), done(), short())
    model.structured.append(summary("Linting is not done."))
    agent = open_agent(model)
    cid, _ = start(agent)
    review = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert review.status == "interrupted" and review.interrupt is not None
    assert review.interrupt["kind"] == REVISION_REVIEW
    assert review.interrupt["actions"] == ["accept", "revise"]
    assert review.interrupt["issues"] == [
        {
            "task_id": "t2",
            "task_title": "Add linting",
            "description": "Lint rules missing",
            "blocking": True,
        }
    ]
    assert texts(agent, cid) == []
    result = agent.resume({"action": "accept"}, session_id="s1", conversation_id=cid)
    assert (result.status, result.memory_written) == ("blocked", True)
    assert result.text.startswith("### Outcome\nBlocked: Linting is not done.")
    assert '"status": "blocked"' in requests(model, TasklistSummary)[0]
    assert texts(agent, cid) == [GOAL, result.text]
    with pytest.raises(InvalidRequest, match="no pending review"):
        agent.resume({"action": "accept"}, session_id="s1", conversation_id=cid)
    assert texts(agent, cid) == [GOAL, result.text]


@pytest.mark.parametrize(("second_check", "status"), [(PASSED, "completed"), (short(), "blocked")])
def test_one_revision_round_reruns_the_flagged_task_only(
    open_agent: Any, second_check: SelfCheck, status: str
) -> None:
    model = scripted(plan("Set up CI", "Add linting"), done(), done(), short(), done("fixed"))
    model.structured += [second_check, summary()]
    agent = open_agent(model)
    cid, _ = start(agent)
    agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    result = agent.resume({"action": "revise"}, session_id="s1", conversation_id=cid)
    # at most one round: a second shortfall does not ask again, it ends blocked
    assert (result.status, result.memory_written) == (status, True)
    executed = requests(model, TasklistTaskResult)
    assert len(executed) == 3
    assert '"title": "Add linting"' in executed[2] and "Lint rules missing" in executed[2]
    assert calls(model).count("SelfCheck") == 2
    assert texts(agent, cid) == [GOAL, result.text]


def test_a_blocked_task_is_a_blocking_issue_even_if_the_check_passes(open_agent: Any) -> None:
    blocked = TasklistTaskResult(status="blocked", outcome="no access to the CI server")
    model = scripted(plan("Set up CI", "Add linting"), blocked, done(), PASSED, summary())
    agent = open_agent(model)
    cid, _ = start(agent)
    review = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert review.interrupt is not None and review.interrupt["kind"] == REVISION_REVIEW
    [issue] = review.interrupt["issues"]
    assert issue["task_id"] == "t1" and issue["blocking"] is True
    assert "no access to the CI server" in issue["description"]
    result = agent.resume({"action": "accept"}, session_id="s1", conversation_id=cid)
    assert result.status == "blocked"


# -- failures ------------------------------------------------------------------------------


def test_a_planning_failure_fails_the_turn_safely(open_agent: Any) -> None:
    agent = open_agent(scripted(RuntimeError("provider exploded at /secret/path")))
    result = agent.send(GOAL, session_id="s1", create_conversation=True, mode="tasklist")
    assert (result.status, result.text, result.memory_written) == ("failed", FAILED_TEXT, False)
    assert texts(agent, result.conversation_id) == []


def test_an_execution_failure_after_approval_writes_nothing(open_agent: Any) -> None:
    model = scripted(plan("Set up CI", "Add linting"), done(), RuntimeError("boom /secret"))
    agent = open_agent(model)
    cid, _ = start(agent)
    result = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert (result.status, result.text, result.memory_written) == ("failed", FAILED_TEXT, False)
    assert texts(agent, cid) == []
    with pytest.raises(InvalidRequest, match="no pending review"):
        agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)


# -- the memory boundary -------------------------------------------------------------------


def test_a_pending_review_is_listed_and_read_from_the_run_thread(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, review = start(agent)
    hydration = agent.hydrate(session_id="s1", conversation_id=cid)
    assert_client_safe(hydration)
    assert hydration["messages"] == []
    # the review is read from the run's pending interrupt; memory keeps nothing of it
    assert hydration["review"] == review
    assert agent.pending_review(session_id="s1", conversation_id=cid) == review
    assert agent.memory.documents.read("s1", cid).state is None
    listed = agent.conversations(session_id="s1")["conversations"]
    assert [(e["id"], e["title"], e["reviewPending"]) for e in listed] == [(cid, GOAL, True)]
    run_thread = agent.memory.run_thread("s1", cid)
    assert agent.memory.threads.checkpoint_count(run_thread) >= 1


def test_an_approved_review_is_no_longer_pending(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)
    agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert agent.hydrate(session_id="s1", conversation_id=cid)["review"] is None
    listed = agent.conversations(session_id="s1")["conversations"]
    assert [(e["id"], e["reviewPending"]) for e in listed] == [(cid, False)]


def test_a_rejected_plan_of_a_new_conversation_leaves_it_unlisted(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)
    result = agent.resume(
        {"action": "reject", "reason": "too broad"}, session_id="s1", conversation_id=cid
    )
    assert (result.status, result.memory_written) == ("cancelled", False)
    assert agent.conversations(session_id="s1")["conversations"] == []
    # still the session's: the next message continues it, and lists it under its own title
    assert agent.hydrate(session_id="s1", conversation_id=cid)["review"] is None
    agent.send("hello again", session_id="s1", conversation_id=cid, mode="chat")
    listed = agent.conversations(session_id="s1")["conversations"]
    assert [(e["id"], e["title"]) for e in listed] == [(cid, "hello again")]


def test_a_rejected_plan_keeps_an_earlier_conversation_listed(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid = agent.send("hello", session_id="s1", create_conversation=True).conversation_id
    agent.send("/tasklist " + GOAL, session_id="s1", conversation_id=cid)
    assert agent.conversations(session_id="s1")["conversations"][0]["reviewPending"] is True
    agent.resume({"action": "reject", "reason": "not now"}, session_id="s1", conversation_id=cid)
    listed = agent.conversations(session_id="s1")["conversations"]
    assert [(e["title"], e["reviewPending"]) for e in listed] == [("hello", False)]


def test_a_message_that_replaces_a_review_titles_the_conversation(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)
    agent.send("Something else entirely", session_id="s1", conversation_id=cid, mode="chat")
    assert agent.hydrate(session_id="s1", conversation_id=cid)["review"] is None
    listed = agent.conversations(session_id="s1")["conversations"]
    assert [(e["title"], e["reviewPending"]) for e in listed] == [
        ("Something else entirely", False)
    ]
    assert texts(agent, cid)[0] == "Something else entirely"


def test_chat_turns_around_a_task_list_see_its_goal_and_summary(open_agent: Any) -> None:
    model = scripted(
        plan("Set up CI"), done(), PASSED, summary("CI is set up."), replies=["hi", "noted"]
    )
    agent = open_agent(model)
    # "ok" owes no extraction, which would take the plan scripted for the task list
    cid = agent.send("ok", session_id="s1", create_conversation=True, mode="chat")
    cid_value = cid.conversation_id
    interrupted = agent.send("/tasklist " + GOAL, session_id="s1", conversation_id=cid_value)
    assert interrupted.status == "interrupted"
    plan_request = requests(model, TaskPlan)[0]
    assert "<goal>\n" + GOAL + "\n</goal>" in plan_request  # the prefix is stripped
    finished = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid_value)
    after = agent.send("what did we do?", session_id="s1", conversation_id=cid_value, mode="chat")
    assert after.status == "completed"
    seen = [message.text for message in model.calls[-1]]
    assert GOAL in seen and finished.text in seen
    assert not any("acceptance_criteria" in text for text in seen)
    assert texts(agent, cid_value) == [
        "ok",
        "hi",
        GOAL,
        finished.text,
        "what did we do?",
        "noted",
    ]


def test_a_new_message_during_a_review_abandons_it_and_writes_only_itself(
    open_agent: Any,
) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)
    chat = agent.send("never mind, hello", session_id="s1", conversation_id=cid, mode="chat")
    assert (chat.status, chat.route) == ("completed", "chat")
    assert texts(agent, cid)[0] == "never mind, hello" and len(texts(agent, cid)) == 2
    with pytest.raises(InvalidRequest, match="no pending review"):
        agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)


def test_progress_events_follow_each_task(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, review = start(agent)

    async def resume() -> list[dict[str, Any]]:
        stream = agent.astream_resume({"action": "approve"}, session_id="s1", conversation_id=cid)
        return [event async for event in stream]

    events = asyncio.run(resume())
    steps = [
        (e["taskId"], e["status"])
        for e in events
        if e["event"] == "status" and e.get("stage") == "tasklist" and e["step"] == "execute"
    ]
    ids = [task["id"] for task in review["tasks"]]
    assert steps == [(i, s) for i in ids for s in ("in_progress", "completed")]
    assert events[-1]["event"] == "done" and events[-1]["result"]["status"] == "completed"
