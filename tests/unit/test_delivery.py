"""The delivery subgraph end to end: completed and blocked runs, the memory boundary, input."""

from __future__ import annotations

from typing import Any

import pytest

from agent import InvalidRequest
from agent.offline.delivery import tagged
from graphs.delivery import DeliveryPlan, DeliveryReport, ReviewVerdict, build_delivery_graph
from graphs.delivery.graph import REVIEW_NODES
from memory import assert_client_safe
from memory.conversations import ConversationMemory
from tests.fakes import ScriptedModel
from tests.storage_support import iter_thread_ids
from tests.unit.delivery_support import (
    ARTIFACT,
    NOTE,
    REPORT_SUMMARY,
    REQUEST,
    SCHEMAS,
    STAGES,
    StageModel,
    compile_agent,
    default_answers,
    progress,
    run,
    stored,
    verdict,
)

pytestmark = pytest.mark.sqlite_only  # graph logic: storage is tested on every backend elsewhere


def test_topology() -> None:
    drawn = build_delivery_graph(model=ScriptedModel(), tools=[]).compile().get_graph()
    assert set(drawn.nodes) == {"__start__", *STAGES, *REVIEW_NODES, "__end__"} - {
        "review_delivery"
    }
    assert {(e.source, e.target, e.conditional) for e in drawn.edges} == {
        ("__start__", "load_request", False),
        ("load_request", "plan_delivery", True),
        ("load_request", "__end__", True),
        ("plan_delivery", "execute_tasks", True),
        ("plan_delivery", "__end__", True),
        ("execute_tasks", "execute_tasks", True),
        *(("execute_tasks", node, True) for node in REVIEW_NODES),
        ("execute_tasks", "__end__", True),
        *((node, "synthesize_report", False) for node in REVIEW_NODES),
        ("synthesize_report", "__end__", False),
    }


def test_completed_run_writes_request_and_report_once(memory: ConversationMemory) -> None:
    model = StageModel()
    final, events = run(compile_agent(memory, model), f"/delivery {REQUEST}")
    assert (final["route"], final["status"], final["memory_written"]) == (
        "delivery",
        "completed",
        True,
    )
    report = final["answer"]
    assert report.startswith("# Delivery report") and REPORT_SUMMARY in report
    for heading in ("## Summary", "## Deliverables", "## Review findings", "## Open risks"):
        assert heading in report
    assert stored(memory) == [("user", REQUEST), ("assistant", report)]
    assert [len(model.seen(kind)) for kind in SCHEMAS] == [1, 2, 3, 1]
    assert [p for p in progress(events) if p[1] != "task_started"] == [
        ("load_request", "started"),
        ("load_request", "succeeded"),
        ("plan_delivery", "started"),
        ("plan_delivery", "succeeded"),
        ("execute_tasks", "started"),
        ("execute_tasks", "succeeded"),
        *[("review_delivery", "started")] * 3,
        *[("review_delivery", "succeeded")] * 3,
        ("synthesize_report", "started"),
        ("synthesize_report", "completed"),
    ]
    writes = [e["status"] for e in events if e.get("event") == "memory"]
    assert writes == ["started", "succeeded"]


def test_a_blocking_issue_blocks_the_run_and_writes_once(memory: ConversationMemory) -> None:
    def by_reviewer(text: str) -> ReviewVerdict:
        return verdict(["drops the orders table"] if tagged(text, "reviewer") == "risk" else [])

    model = StageModel(answers={**default_answers(), "ReviewVerdict": by_reviewer})
    final, _ = run(compile_agent(memory, model), REQUEST, mode="delivery")
    assert (final["status"], final["memory_written"]) == ("blocked", True)
    assert "**Risk review:** blocking: drops the orders table" in final["answer"]
    assert "**Quality review:** passed." in final["answer"]
    assert stored(memory) == [("user", REQUEST), ("assistant", final["answer"])]
    report_input = model.seen("DeliveryReport")[0][-1].text
    assert tagged(report_input, "status") == "blocked"


def test_a_thin_request_is_blocked_with_what_is_missing(memory: ConversationMemory) -> None:
    model = ScriptedModel()  # any model call would fail: nothing is scripted
    final, events = run(compile_agent(memory, model), "/delivery fix it")
    assert (final["status"], final["memory_written"]) == ("blocked", True)
    assert "## What is missing" in final["answer"] and "at least 3 words" in final["answer"]
    assert stored(memory) == [("user", "fix it"), ("assistant", final["answer"])]
    assert model.calls == model.structured_calls == []
    assert progress(events) == [("load_request", "started"), ("load_request", "blocked")]


def test_a_planner_that_cannot_act_blocks_with_its_questions(memory: ConversationMemory) -> None:
    missing = DeliveryPlan(deliverables=[], tasks=[], missing_information=["which database?"])
    model = ScriptedModel(structured=[missing])
    final, _ = run(compile_agent(memory, model), f"/delivery {REQUEST}")
    assert final["status"] == "blocked" and "- which database?" in final["answer"]
    assert len(stored(memory)) == 2


def test_a_long_report_is_cut_in_memory_but_delivered_whole(memory: ConversationMemory) -> None:
    long_summary = "".join(f"line {n:05d} of a very long delivery summary.\n" for n in range(500))
    answers = default_answers()
    answers["DeliveryReport"] = DeliveryReport(summary=long_summary, deliverables=["x"])
    final, _ = run(compile_agent(memory, StageModel(answers=answers)), f"/delivery {REQUEST}")
    report = final["answer"]
    assert len(report) > 20_000 and long_summary.strip() in report  # the user gets it all
    kept = stored(memory)[1][1]
    assert len(kept) <= 8_000
    head, marker = kept.rsplit("\n", 1)
    assert marker.startswith("[Report truncated:") and report.startswith(head)
    assert len(head) > 7_500


def test_runtime_state_never_reaches_memory_and_the_next_turn_sees_the_report(
    memory: ConversationMemory,
) -> None:
    model = StageModel(replies=["a chat answer"])
    graph = compile_agent(memory, model)
    delivered, _ = run(graph, f"/delivery {REQUEST}")
    final, _ = run(graph, "what did the delivery produce?", mode="chat")
    assert "hydration" not in final  # the run holds the turn, not the memory
    dto = memory.hydrate("s1", "c1")
    assert_client_safe(dto)
    hydration = str(dto)
    for runtime_text in (ARTIFACT, NOTE, "execute_tasks", "review_delivery", "verdict"):
        assert runtime_text not in hydration
    chat_input = model.seen("plain")[-1]
    assert [m.text for m in chat_input[-3:]] == [
        REQUEST,
        delivered["answer"],
        "what did the delivery produce?",
    ]
    assert not any(ARTIFACT in m.text or NOTE in m.text for m in chat_input)


# -- through ChatAgent ------------------------------------------------------------------


def test_chat_agent_writes_a_completed_delivery_once(open_agent: Any) -> None:
    agent = open_agent(StageModel())
    result = agent.send(f"/delivery {REQUEST}", session_id="s1", create_conversation=True)
    assert (result.route, result.status, result.memory_written) == ("delivery", "completed", True)
    hydration = agent.hydrate(session_id="s1", conversation_id=result.conversation_id)
    assert_client_safe(hydration)
    assert [m["text"] for m in hydration["messages"]] == [REQUEST, result.text]


@pytest.mark.parametrize(
    ("message", "mode", "error"),
    [
        ("/delivery   ", "auto", "needs a request"),
        ("/delivery", "auto", "needs a request"),
        ("   ", "delivery", "must not be empty"),
        ("x" * 16_001, "delivery", "too long"),
        ("/delivery " + "x" * 16_000, "auto", "too long"),
    ],
)
def test_bad_delivery_input_is_a_clear_error_and_writes_nothing(
    open_agent: Any, memory: ConversationMemory, message: str, mode: str, error: str
) -> None:
    model = StageModel()
    agent = open_agent(model)
    with pytest.raises(InvalidRequest, match=error):
        agent.send(message, session_id="s1", create_conversation=True, mode=mode)
    threads = list(iter_thread_ids(agent.memory.threads))
    assert not [t for t in threads if t.startswith("chat-conversation:")]
    assert agent.conversations(session_id="s1")["conversations"] == []
    # the same input straight into the graph: nothing stored at all
    with pytest.raises(InvalidRequest, match=error):
        run(compile_agent(memory, model), message, mode=mode)
    assert list(iter_thread_ids(memory.threads)) == [] and model.calls == []


def test_an_empty_prefix_request_leaves_no_thread_behind(open_agent: Any) -> None:
    agent = open_agent(StageModel())
    with pytest.raises(InvalidRequest):
        agent.send("/delivery   ", session_id="s1", create_conversation=True)
    assert list(iter_thread_ids(agent.memory.threads)) == []
