"""The task-list subgraph: reviews, execution, self-check, the memory boundary, bad decisions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent import ChatAgent, ConversationBusy, ConversationNotFound, InvalidRequest
from agent.offline import OfflineChatModel
from agent.offline_tasklist import plan_titles
from agent.settings import Settings
from graphs.tasklist import MIN_PLANNED_TASKS, build_tasklist_graph
from graphs.tasklist_prompts import (
    FAILED_TEXT,
    CheckIssue,
    PlannedTask,
    SelfCheck,
    TasklistSummary,
    TaskPlan,
    TaskResult,
)
from graphs.tasklist_reviews import (
    MAX_TASKS,
    REVISION_REVIEW,
    STRATEGY_REVIEW,
    validate_revision_decision,
    validate_strategy_decision,
)
from memory import assert_client_safe
from tests.conftest import SECRET
from tests.fakes import ScriptedModel

GOAL = "Set up CI. Add linting. Write the docs."
PASSED = SelfCheck(passed=True)
TASK_KEYS = {"id", "title", "acceptance_criteria", "status"}


def plan(*titles: str) -> TaskPlan:
    return TaskPlan(
        tasks=[
            PlannedTask(id=f"p{n}", title=title, acceptance_criteria=[f"{title} works"])
            for n, title in enumerate(titles, 1)
        ]
    )


def done(outcome: str = "done") -> TaskResult:
    return TaskResult(status="completed", outcome=outcome)


def summary(outcome: str = "All went well.") -> TasklistSummary:
    return TasklistSummary(outcome=outcome, done=["CI runs"], remaining=[], manual_checks=[])


def scripted(*structured: Any, replies: list[Any] | None = None) -> ScriptedModel:
    return ScriptedModel(structured=list(structured), replies=replies or [])


def calls(model: ScriptedModel) -> list[str]:
    return [call["schema"].__name__ for call in model.structured_calls]


def requests(model: ScriptedModel, schema: type) -> list[str]:
    found = [call for call in model.structured_calls if call["schema"] is schema]
    return [call["messages"][-1].text for call in found]


def texts(agent: ChatAgent, cid: str, session: str = "s1") -> list[str]:
    hydration = agent.hydrate(session_id=session, conversation_id=cid)
    assert_client_safe(hydration)
    return [message["text"] for message in hydration["messages"]]


@pytest.fixture
def open_agent(tmp_path: Path, db_url: str) -> Iterator[Any]:
    opened: list[ChatAgent] = []

    def factory(model: Any) -> ChatAgent:
        agent = ChatAgent(
            database_url=db_url, model=model, secret=SECRET, settings=Settings(data_dir=tmp_path)
        )
        opened.append(agent)
        return agent

    yield factory
    for agent in opened:
        agent.close()


def start(agent: ChatAgent, goal: str = GOAL, session: str = "s1") -> tuple[str, dict[str, Any]]:
    result = agent.send(goal, session_id=session, create_conversation=True, mode="tasklist")
    assert (result.status, result.route, result.memory_written) == (
        "interrupted",
        "tasklist",
        False,
    )
    assert result.interrupt is not None
    return result.conversation_id, result.interrupt


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
    assert calls(model) == ["TaskPlan", "TaskResult", "TaskResult", "SelfCheck", "TasklistSummary"]
    second = requests(model, TaskResult)[1]
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
    executed = requests(model, TaskResult)
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
    assert result.status == "completed" and len(requests(model, TaskResult)) == 3
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
    executed = requests(model, TaskResult)
    assert len(executed) == 3
    assert '"title": "Add linting"' in executed[2] and "Lint rules missing" in executed[2]
    assert calls(model).count("SelfCheck") == 2
    assert texts(agent, cid) == [GOAL, result.text]


def test_a_blocked_task_is_a_blocking_issue_even_if_the_check_passes(open_agent: Any) -> None:
    blocked = TaskResult(status="blocked", outcome="no access to the CI server")
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


def test_a_pending_review_is_only_in_the_run_thread(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, review = start(agent)
    hydration = agent.hydrate(session_id="s1", conversation_id=cid)
    assert_client_safe(hydration)
    assert hydration["messages"] == []
    assert not any(task["title"] in str(hydration) for task in review["tasks"])
    assert agent.memory.stored("s1", cid) is None
    assert agent.conversations(session_id="s1")["conversations"] == []
    run_thread = agent.memory.run_thread("s1", cid)
    assert agent.memory.threads.checkpoint_count(run_thread) >= 1


def test_chat_turns_around_a_task_list_see_its_goal_and_summary(open_agent: Any) -> None:
    model = scripted(
        plan("Set up CI"), done(), PASSED, summary("CI is set up."), replies=["hi", "noted"]
    )
    agent = open_agent(model)
    cid = agent.send("hello", session_id="s1", create_conversation=True, mode="chat")
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
        "hello",
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


# -- bad decisions -------------------------------------------------------------------------

VALID_TASK = {"title": "Do it", "acceptance_criteria": ["done"]}


@pytest.mark.parametrize(
    ("decision", "message"),
    [
        ({"action": "launch"}, "unknown action 'launch'.*approve, edit, reject, respond"),
        ({"action": "accept"}, "unknown action 'accept' for the strategy review"),
        ({}, "unknown action None"),
        ("approve", "must be an object"),
        ({"action": "approve", "tasks": []}, r"unexpected field\(s\) tasks"),
        ({"action": "reject"}, "'reject' needs a non-empty 'reason'"),
        ({"action": "respond", "feedback": "   "}, "'respond' needs a non-empty 'feedback'"),
        ({"action": "edit"}, "list of 1 to 7 tasks"),
        ({"action": "edit", "tasks": []}, "list of 1 to 7 tasks"),
        ({"action": "edit", "tasks": [VALID_TASK] * 8}, "list of 1 to 7 tasks"),
        ({"action": "edit", "tasks": ["Do it"]}, "task 1: .*valid dictionary"),
        ({"action": "edit", "tasks": [{"title": " "}]}, "task 1: title"),
        ({"action": "edit", "tasks": [{"title": "x"}]}, "task 1: acceptance_criteria"),
        (
            {"action": "edit", "tasks": [VALID_TASK, {**VALID_TASK, "status": "completed"}]},
            "task 2: status",
        ),
        ({"action": "edit", "tasks": [{**VALID_TASK, "owner": "me"}]}, "task 1: owner"),
        (
            {"action": "edit", "tasks": [{**VALID_TASK, "id": "a"}, {**VALID_TASK, "id": "a"}]},
            "duplicate task id 'a'",
        ),
    ],
)
def test_a_bad_decision_is_rejected_and_the_review_stays_resumable(
    open_agent: Any, decision: Any, message: str
) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)
    with pytest.raises(InvalidRequest, match=message):
        agent.resume(decision, session_id="s1", conversation_id=cid)
    assert texts(agent, cid) == []
    result = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert result.status == "completed" and texts(agent, cid) == [GOAL, result.text]


def test_bad_revision_decisions_are_rejected(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent, "Deploy the app. Verify the deploy. Tell the team.")
    review = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert review.interrupt is not None and review.interrupt["kind"] == REVISION_REVIEW
    for decision, message in (
        ({"action": "approve"}, "unknown action 'approve' for the revision review"),
        ({"action": "revise", "rounds": 3}, r"unexpected field\(s\) rounds"),
    ):
        with pytest.raises(InvalidRequest, match=message):
            agent.resume(decision, session_id="s1", conversation_id=cid)
    result = agent.resume({"action": "accept"}, session_id="s1", conversation_id=cid)
    assert (result.status, result.memory_written) == ("blocked", True)


def test_resume_without_a_review_or_for_someone_else_is_rejected(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)
    chat = agent.send("plain chat", session_id="s1", create_conversation=True).conversation_id
    approve = {"action": "approve"}
    with pytest.raises(InvalidRequest, match="no pending review"):
        agent.resume(approve, session_id="s1", conversation_id=chat)
    with pytest.raises(ConversationNotFound):
        agent.resume(approve, session_id="mallory", conversation_id=cid)
    with pytest.raises(ConversationNotFound):
        agent.resume(approve, session_id="s1", conversation_id="unknown")
    with pytest.raises(InvalidRequest):
        agent.resume(approve, session_id="s1", conversation_id="not valid!")
    assert texts(agent, chat) == ["plain chat", texts(agent, chat)[1]]
    result = agent.resume(approve, session_id="s1", conversation_id=cid)
    assert result.status == "completed" and texts(agent, cid) == [GOAL, result.text]


def test_concurrent_resumes_write_once(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())
    cid, _ = start(agent)

    async def both() -> list[Any]:
        resumes = [
            agent.aresume({"action": "approve"}, session_id="s1", conversation_id=cid)
            for _ in range(2)
        ]
        return await asyncio.gather(*resumes, return_exceptions=True)

    outcomes = asyncio.run(both())
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert all(isinstance(e, ConversationBusy | InvalidRequest) for e in errors), errors
    assert any(not isinstance(o, BaseException) and o.status == "completed" for o in outcomes)
    assert len(texts(agent, cid)) == 2


@pytest.mark.parametrize(
    ("validate", "decision"),
    [
        (validate_strategy_decision, {"action": "approve"}),
        (validate_strategy_decision, {"action": "reject", "reason": " No. "}),
        (validate_strategy_decision, {"action": "respond", "feedback": "Shorter."}),
        (validate_strategy_decision, {"action": "edit", "tasks": [VALID_TASK, VALID_TASK]}),
        (validate_revision_decision, {"action": "revise"}),
    ],
)
def test_validated_decisions_validate_to_themselves(validate: Any, decision: Any) -> None:
    # ChatAgent validates before resuming and the review node validates again
    once = validate({}, decision)
    assert validate({}, once) == once


# -- the subgraph on its own (as Studio and the SDK drive it) ------------------------------


def invoke(graph: Any, graph_input: Any, config: Any) -> dict[str, Any]:
    return dict(asyncio.run(graph.ainvoke(graph_input, config)))


def test_only_the_workflow_output_leaves_the_subgraph() -> None:
    model = scripted(plan("Set up CI"), done(), PASSED, summary())
    graph = build_tasklist_graph(model=model).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    background = {"memory_summary": "We use GitHub.", "memory_pins": ["Always use ruff."]}
    paused = invoke(graph, {"user_text": GOAL, **background}, config)
    assert set(paused) == {"__interrupt__"}
    plan_request = requests(model, TaskPlan)[0]
    assert "We use GitHub." in plan_request and "1. Always use ruff." in plan_request
    out = invoke(graph, Command(resume={"action": "approve"}), config)
    assert set(out) == {"workflow_text", "workflow_status"}
    assert out["workflow_status"] == "completed"


def test_an_unvalidated_bad_resume_asks_again_with_an_error() -> None:
    graph = build_tasklist_graph(model=OfflineChatModel()).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    first = invoke(graph, {"user_text": GOAL}, config)["__interrupt__"][0].value
    again = invoke(graph, Command(resume={"action": "launch"}), config)["__interrupt__"][0].value
    assert "unknown action 'launch'" in again["error"]
    assert {k: v for k, v in again.items() if k != "error"} == first
    out = invoke(graph, Command(resume={"action": "approve"}), config)
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
