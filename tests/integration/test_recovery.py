"""Checks of short-term state, each a test: a run killed mid-delivery
recovers from its last step without redoing finished work; compaction during a review
never re-runs a finished task; parallel reviewers' results all survive in the
checkpointed state; a revoked preference leaves no trace; idle conversations go by
policy (the last one in tests/unit/test_retention.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent, InvalidRequest
from agent.settings import Settings
from tests.integration.recovery_worker import (
    REQUEST,
    SECRET,
    SESSION,
    TASKLIST_REQUEST,
    counting_model,
    kill_while_stalled,
)

pytestmark = pytest.mark.integration


def recovering_agent(db_url: str, tmp_path: Path, counts: Counter[str]) -> ChatAgent:
    return ChatAgent(
        database_url=db_url,
        model=counting_model(counts),
        secret=SECRET,
        settings=Settings(data_dir=tmp_path / "data", long_term_memory="off"),
    )


def stored_texts(agent: ChatAgent, cid: str) -> list[str]:
    hydration = agent.hydrate(session_id=SESSION, conversation_id=cid)
    return [m["text"] for m in hydration["messages"]]


def test_a_delivery_killed_at_task_3_recovers_without_redoing_tasks(
    db_url: str, tmp_path: Path
) -> None:
    cid = kill_while_stalled(db_url, tmp_path, "task:3")
    counts: Counter[str] = Counter()
    with recovering_agent(db_url, tmp_path, counts) as agent:
        listed = agent.conversations(session_id=SESSION)["conversations"]
        assert [(c["id"], c["unfinished"]) for c in listed] == [(cid, True)]
        result = agent.recover(session_id=SESSION, conversation_id=cid)
        assert (result.status, result.route, result.memory_written) == (
            "completed",
            "delivery",
            True,
        )
        # the plan and tasks 1-2 were done before the kill: only tasks 3-5 run again
        assert counts == Counter(DeliveryTaskResult=3, ReviewVerdict=3, DeliveryReport=1), counts
        texts = stored_texts(agent, cid)
        assert texts[2:] == [REQUEST.removeprefix("/delivery "), result.text]  # written once
        assert agent.conversations(session_id=SESSION)["conversations"][0]["unfinished"] is False
        with pytest.raises(InvalidRequest, match="no unfinished run"):
            agent.recover(session_id=SESSION, conversation_id=cid)
        assert stored_texts(agent, cid) == texts


def test_parallel_reviewers_all_survive_in_the_checkpoint_and_are_not_rerun(
    db_url: str, tmp_path: Path
) -> None:
    cid = kill_while_stalled(db_url, tmp_path, "report")
    counts: Counter[str] = Counter()
    with recovering_agent(db_url, tmp_path, counts) as agent:
        config: Any = {"configurable": {"thread_id": agent.memory.run_thread(SESSION, cid)}}
        state = agent.graph.get_state(config, subgraphs=True)
        delivery: Any = state.tasks[0].state
        verdicts = delivery.values["verdicts"]
        assert sorted(v["reviewer"] for v in verdicts) == ["boundary", "quality", "risk"]
        result = agent.recover(session_id=SESSION, conversation_id=cid)
        assert result.status == "completed"
        assert counts == Counter(DeliveryReport=1), counts


@pytest.mark.parametrize("stall_at", ["tasklist:2", "tasklist-first:2"])
def test_a_task_list_killed_after_its_review_was_approved_recovers(
    db_url: str, tmp_path: Path, stall_at: str
) -> None:
    cid = kill_while_stalled(db_url, tmp_path, stall_at)
    counts: Counter[str] = Counter()
    with recovering_agent(db_url, tmp_path, counts) as agent:
        listed = agent.conversations(session_id=SESSION)["conversations"]
        assert [(c["id"], c["unfinished"]) for c in listed] == [(cid, True)]
        result = agent.recover(session_id=SESSION, conversation_id=cid)
        assert (result.status, result.route) == ("completed", "tasklist")
        assert result.interrupt is None
        # the plan, its review and task 1 were done before the kill: not again
        assert counts["TaskPlan"] == 0 and counts["TasklistTaskResult"] == 2, counts
        texts = stored_texts(agent, cid)
        assert texts[-2:] == [TASKLIST_REQUEST.removeprefix("/tasklist "), result.text]
        assert agent.conversations(session_id=SESSION)["conversations"][0]["unfinished"] is False
        with pytest.raises(InvalidRequest, match="no unfinished run"):
            agent.recover(session_id=SESSION, conversation_id=cid)
