"""Seed 003's checks of short-term state, each a test: a run killed mid-delivery
recovers from its last step without redoing finished work; compaction during a review
never re-runs a finished task; parallel reviewers' results all survive in the
checkpointed state; a revoked preference leaves no trace; idle conversations go by
policy (the last one in tests/unit/test_retention.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from agent import ChatAgent, InvalidRequest
from agent.offline import DEFAULT_HANDLERS, OfflineChatModel
from agent.settings import Settings
from tests.integration.conftest import REPO
from tests.integration.recovery_worker import REQUEST, SECRET, SESSION

pytestmark = pytest.mark.integration

STALL_TIMEOUT = 60.0


class CountingModel(OfflineChatModel):
    """The offline model, counting the structured calls it answers, by schema name."""

    @classmethod
    def counting(cls, counts: Counter[str]) -> CountingModel:
        def count(
            schema: type[BaseModel], answer: Callable[[Sequence[BaseMessage]], BaseModel]
        ) -> Callable[[Sequence[BaseMessage]], BaseModel]:
            def handler(messages: Sequence[BaseMessage]) -> BaseModel:
                counts[schema.__name__] += 1
                return answer(messages)

            return handler

        handlers = {schema: count(schema, answer) for schema, answer in DEFAULT_HANDLERS.items()}
        return cls(structured_handlers=handlers)


def kill_while_stalled(db_url: str, tmp_path: Path, stall_at: str) -> str:
    """Run a delivery in a worker process, SIGKILL it where it stalls; its conversation."""
    workdir = tmp_path / "worker"
    workdir.mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.recovery_worker",
            db_url,
            str(tmp_path / "data"),
            str(workdir),
            stall_at,
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + STALL_TIMEOUT
        while not (workdir / "stalled").exists():
            if process.poll() is not None:
                raise AssertionError(f"worker ended early: {process.stderr.read()!r}")  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "the worker never reached its stall point"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    return (workdir / "conversation").read_text()


def recovering_agent(db_url: str, tmp_path: Path, counts: Counter[str]) -> ChatAgent:
    return ChatAgent(
        database_url=db_url,
        model=CountingModel.counting(counts),
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
        turn = agent.open_turn(SESSION, cid, None)
        state = agent.graph.get_state(turn.config, subgraphs=True)
        delivery: Any = state.tasks[0].state
        verdicts = delivery.values["verdicts"]
        assert sorted(v["reviewer"] for v in verdicts) == ["boundary", "quality", "risk"]
        result = agent.recover(session_id=SESSION, conversation_id=cid)
        assert result.status == "completed"
        assert counts == Counter(DeliveryReport=1), counts
