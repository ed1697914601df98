"""The task-list reviews refuse bad decisions: validation, resume errors, concurrent resumes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent import ConversationBusy, ConversationNotFound, InvalidRequest
from agent.offline import OfflineChatModel
from graphs.decisions import InvalidDecision, validate_decision
from graphs.tasklist import build_tasklist_graph
from graphs.tasklist.reviews import (
    REVIEWS,
    REVISION_REVIEW,
    STRATEGY_REVIEW,
    validate_revision_decision,
    validate_strategy_decision,
)
from tests.unit.tasklist_support import GOAL, invoke, start, texts

pytestmark = pytest.mark.sqlite_only  # graph logic: storage is tested on every backend elsewhere


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
        ({"action": "edit", "tasks": [42]}, "task 1: .*valid dictionary"),
        ({"action": "edit", "tasks": [{"title": " "}]}, "task 1: title"),
        ({"action": "edit", "tasks": [" "]}, "task 1: title"),
        (
            {"action": "edit", "tasks": [{"title": "x", "acceptance_criteria": []}]},
            "task 1: acceptance_criteria",
        ),
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


def test_a_decision_is_checked_by_the_validator_its_caller_passes_for_the_kind() -> None:
    strategy, approve = {"kind": STRATEGY_REVIEW}, {"action": "approve"}
    assert validate_decision(strategy, approve, REVIEWS) == approve
    with pytest.raises(InvalidDecision, match="unknown action 'accept'"):
        validate_decision(strategy, {"action": "accept"}, REVIEWS)
    with pytest.raises(InvalidDecision, match="cannot be resumed here"):
        validate_decision(strategy, approve, {})
    with pytest.raises(InvalidDecision, match="cannot be resumed here"):
        validate_decision({"kind": "delivery_review"}, approve, REVIEWS)


def test_an_unvalidated_bad_resume_asks_again_with_an_error() -> None:
    graph = build_tasklist_graph(model=OfflineChatModel()).compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "t"}}
    first = invoke(graph, {"user_text": GOAL}, config)["__interrupt__"][0].value
    again = invoke(graph, Command(resume={"action": "launch"}), config)["__interrupt__"][0].value
    assert "unknown action 'launch'" in again["error"]
    assert {k: v for k, v in again.items() if k != "error"} == first
    out = invoke(graph, Command(resume={"action": "approve"}), config)
    assert out["workflow_status"] == "completed"
