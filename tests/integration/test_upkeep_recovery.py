"""A process killed (SIGKILL) after a turn was done and before its memory upkeep finished
loses nothing: the turn is stored, the upkeep it owed is on record, and the next turn
(or a read of the conversation, as after a restart) pays it, on both backends."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from agent import ChatAgent
from agent.settings import Settings
from memory.longterm import ExtractionOutput
from tests.integration.upkeep_worker import (
    CUE_TURN,
    KEPT,
    SECRET,
    SESSION,
    extracting,
    keeping_model,
    kill_in_upkeep,
)

pytestmark = pytest.mark.integration


def catching_up_agent(db_url: str, tmp_path: Path, calls: list[str]) -> ChatAgent:
    return ChatAgent(
        database_url=db_url,
        model=keeping_model(calls),
        secret=SECRET,
        settings=Settings(data_dir=tmp_path / "data", long_term_memory="model"),
    )


def test_an_extraction_killed_after_done_is_paid_by_the_next_turn(
    db_url: str, tmp_path: Path
) -> None:
    done = kill_in_upkeep(db_url, tmp_path, "extraction")
    assert done["upkeep"] == "pending"
    cid = done["conversation"]
    calls: list[str] = []
    with catching_up_agent(db_url, tmp_path, calls) as agent:
        stored = agent.memory.hydrate(SESSION, cid)  # the record, read without catching up
        assert stored["messages"][0]["text"] == CUE_TURN  # the turn is kept
        assert stored["upkeep"] == "pending"
        assert agent.memories(session_id=SESSION)["memories"] == []
        result = agent.send("And what about lunch?", session_id=SESSION, conversation_id=cid)
        assert (result.status, result.upkeep) == ("completed", "pending")  # the debt, not a cue
        assert agent.wait_for_upkeep(60)
        assert calls == ["extraction"]  # the killed turn's, once; the new turn has no cue
        texts = [m["text"] for m in agent.memories(session_id=SESSION)["memories"]]
        assert texts == [CUE_TURN]
        hydration = agent.hydrate(session_id=SESSION, conversation_id=cid)
        assert (hydration["upkeep"], len(hydration["messages"])) == ("done", 4)


def test_a_compaction_killed_after_done_is_paid_when_the_conversation_is_read(
    db_url: str, tmp_path: Path
) -> None:
    done = kill_in_upkeep(db_url, tmp_path, "compaction")
    assert (done["upkeep"], done["compaction"]) == ("pending", "pending")
    cid = done["conversation"]
    with catching_up_agent(db_url, tmp_path, []) as agent:
        first = agent.hydrate(session_id=SESSION, conversation_id=cid)  # starts the catch-up
        assert (first["upkeep"], len(first["messages"]), first["summaryVersion"]) == (
            "pending",
            10,
            0,
        )
        assert agent.wait_for_upkeep(60)
        caught_up = agent.hydrate(session_id=SESSION, conversation_id=cid)
        assert (caught_up["upkeep"], caught_up["summaryVersion"]) == ("done", 1)
        assert len(caught_up["messages"]) == 4
        assert caught_up["messages"] == first["messages"][-4:]  # no turn lost or repeated


def test_an_upkeep_waits_for_another_process_upkeep_of_the_conversation(
    db_url: str, tmp_path: Path
) -> None:
    """This process asks for the conversation's upkeep while the worker's upkeep of it
    holds the conversation's upkeep lock (stalled in its extraction call): it waits, and
    extracts only once the worker is gone."""
    seen: list[bool] = []  # per extraction here: whether the worker had ended by then
    tried = threading.Event()
    worker: list[subprocess.Popen[bytes]] = []

    def extract(messages: Sequence[BaseMessage]) -> BaseModel:
        seen.append(worker[0].poll() is not None)
        return ExtractionOutput(operations=[KEPT])

    agent = ChatAgent(
        database_url=db_url,
        model=extracting(extract),
        secret=SECRET,
        settings=Settings(data_dir=tmp_path / "data", long_term_memory="model"),
    )
    locks: Any = agent.memory.threads.locks
    hold = locks.hold

    def watched(key: str, *args: Any) -> Any:
        if key.startswith("upkeep:"):
            tried.set()
        return hold(key, *args)

    locks.hold = watched

    def ask_while_stalled(process: subprocess.Popen[bytes], cid: str) -> None:
        worker.append(process)
        assert agent.hydrate(session_id=SESSION, conversation_id=cid)["upkeep"] == "pending"
        assert tried.wait(30)  # this process's upkeep is at the lock the worker holds

    with agent:
        done = kill_in_upkeep(db_url, tmp_path, "extraction", before_kill=ask_while_stalled)
        assert agent.wait_for_upkeep(60)
        assert seen == [True]  # one extraction, after the worker's upkeep had ended
        texts = [m["text"] for m in agent.memories(session_id=SESSION)["memories"]]
        assert texts == [CUE_TURN]
        hydration = agent.hydrate(session_id=SESSION, conversation_id=done["conversation"])
        assert hydration["upkeep"] == "done"
