"""The delivery stages: failures and timeouts, parallel reviewers, task sub-agents, offline."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.offline.delivery import BLOCKING_MARKERS, offline_plan, offline_verdict, tagged
from agent.tools import BUILTIN_TOOLS
from graphs.delivery import ReviewVerdict
from memory.conversations import ConversationMemory
from tests.unit.delivery_support import (
    ARTIFACT,
    REQUEST,
    STAGES,
    StageModel,
    compile_agent,
    default_answers,
    plan,
    progress,
    run,
    stored,
    verdict,
)

pytestmark = pytest.mark.sqlite_only  # graph logic: storage is tested on every backend elsewhere


def texts(agent: ChatAgent, cid: str) -> list[str]:
    return [m["text"] for m in agent.hydrate(session_id="s1", conversation_id=cid)["messages"]]


@pytest.mark.parametrize(
    ("kind", "reviewer"),
    [
        ("DeliveryPlan", None),
        ("DeliveryTaskResult", None),
        ("ReviewVerdict", "risk"),
        ("DeliveryReport", None),
    ],
)
def test_a_failing_stage_writes_nothing(
    memory: ConversationMemory, kind: str, reviewer: str | None
) -> None:
    boom = RuntimeError("provider exploded at /secret/path")

    def fail_one(text: str) -> ReviewVerdict:
        if tagged(text, "reviewer") == reviewer:
            raise boom
        return verdict()

    answers = {**default_answers(), kind: fail_one if reviewer else boom}
    final, events = run(compile_agent(memory, StageModel(answers=answers)), f"/delivery {REQUEST}")
    assert (final["status"], final["memory_written"]) == ("failed", False)
    assert final["answer"].startswith("The delivery could not finish")
    assert "Nothing was saved" in final["answer"] and "/secret/path" not in str(final)
    assert stored(memory) == []
    assert any(status == "failed" for _, status in progress(events))


def test_a_stage_timeout_fails_the_run(memory: ConversationMemory) -> None:
    model = StageModel(pauses={"DeliveryPlan": 5.0})
    final, _ = run(compile_agent(memory, model, stage_timeout=0.05), f"/delivery {REQUEST}")
    assert final["status"] == "failed" and "took longer than 0.05 seconds" in final["answer"]
    assert stored(memory) == [] and model.seen("DeliveryTaskResult") == []


def test_reviewers_run_in_parallel(memory: ConversationMemory) -> None:
    model = StageModel()
    final, _ = run(compile_agent(memory, model), f"/delivery {REQUEST}")
    assert final["status"] == "completed"
    reviewers = {tagged(m[-1].text, "reviewer") for m in model.seen("ReviewVerdict")}
    assert reviewers == {"quality", "risk", "boundary"}
    assert model.max_in_flight == 3


def test_tasks_are_capped_at_max_tasks(memory: ConversationMemory) -> None:
    model = StageModel(answers={**default_answers(), "DeliveryPlan": plan(tasks=7)})
    final, _ = run(compile_agent(memory, model, max_tasks=2), f"/delivery {REQUEST}")
    assert len(model.seen("DeliveryTaskResult")) == 2
    assert "5 planned task(s) beyond the limit of 2 were not run" in final["answer"]


def test_task_sub_agents_use_tools_and_see_earlier_results(memory: ConversationMemory) -> None:
    call = AIMessage(
        content="", tool_calls=[{"name": "calculator", "args": {"expression": "6*7"}, "id": "t1"}]
    )
    model = StageModel(replies=[call, "it is 42", "second task done"])
    graph = compile_agent(memory, model, tools=BUILTIN_TOOLS)
    final, _ = run(graph, f"/delivery {REQUEST}")
    assert final["status"] == "completed"
    first, second = model.seen("DeliveryTaskResult")
    assert any(isinstance(m, ToolMessage) and m.text == "42" for m in first)
    assert ARTIFACT in tagged(second[1].text, "earlier_results")
    assert "42" not in str(stored(memory))  # tool results stay in the run thread


def test_closing_the_stream_mid_delivery_cancels_it_and_writes_nothing(open_agent: Any) -> None:
    model = StageModel(pauses={"DeliveryTaskResult": 1.0})
    agent = open_agent(model)
    cid = agent.send("hello", session_id="s1", create_conversation=True).conversation_id

    async def scenario() -> None:
        stream = agent.astream(f"/delivery {REQUEST}", session_id="s1", conversation_id=cid)
        async for event in stream:
            if event.get("stage") == "execute_tasks" and event.get("status") == "task_started":
                break
        await stream.aclose()  # returns once the cancelled run has unwound

    asyncio.run(scenario())
    assert texts(agent, cid) == ["hello", "echo: hello"]
    assert model.seen("ReviewVerdict") == model.seen("DeliveryReport") == []
    assert agent.send("next", session_id="s1", conversation_id=cid).status == "completed"


def test_offline_model_runs_the_chain_deterministically(open_agent: Any) -> None:
    agent = open_agent(OfflineChatModel())

    async def stream(message: str) -> list[dict[str, Any]]:
        return [e async for e in agent.astream(message, session_id="s1", create_conversation=True)]

    events = asyncio.run(stream(f"/delivery {REQUEST}; what is 6*7?"))
    result = next(e["result"] for e in events if e["event"] == "done")
    assert (result["status"], result["memoryWritten"]) == ("completed", True)
    assert "[offline model]" in result["text"] and "token" not in [e["event"] for e in events]
    stages = {e["stage"] for e in events if e.get("workflow") == "delivery"}
    assert stages == set(STAGES)
    again = agent.send(
        f"/delivery {REQUEST}; what is 6*7?", session_id="s1", create_conversation=True
    )
    assert again.text == result["text"]
    blocked = agent.send(
        "/delivery migrate the Production  Database with no tests",
        session_id="s1",
        create_conversation=True,
    )
    assert (blocked.status, blocked.memory_written) == ("blocked", True)
    assert "**Risk review:** blocking:" in blocked.text
    assert all(issue in blocked.text for issue in BLOCKING_MARKERS.values())
    stored_text = " ".join(texts(agent, blocked.conversation_id))
    assert "Offline work product" not in stored_text and "Offline risk note" not in stored_text


def test_offline_handlers_follow_their_rules() -> None:
    request = "<request>\nadd a column, backfill it; then drop the production database\n</request>"
    first, second = offline_plan([HumanMessage(request)]), offline_plan([HumanMessage(request)])
    assert first == second
    assert [t.title for t in first.tasks][:3] == [
        "Produce: add a column",
        "Produce: backfill it",
        "Produce: drop the production database",
    ]
    review = "<reviewer>{}</reviewer>\n" + request + "\n<results>\n[]\n</results>"
    risk = offline_verdict([HumanMessage(review.format("risk"))])
    assert risk.verdict == "fail" and risk.blocking_issues == [
        BLOCKING_MARKERS["production database"]
    ]
    assert offline_verdict([HumanMessage(review.format("boundary"))]).verdict == "pass"
