"""Memory upkeep after `done`: the record `finalize` writes, the next turn while upkeep
runs, one upkeep at a time per conversation, compaction rebasing onto turns that
landed meanwhile, and the local fallback's bound when upkeep falls behind."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from agent import ChatAgent
from agent.settings import Settings
from memory import CompactionOutput
from memory.compaction import QuotedItem
from memory.conversations import ConversationMemory
from memory.limits import HARD_MESSAGE_CAP
from memory.longterm import ExtractionOutput, Operation
from memory.turns import chat_turn
from tests.fakes import ScriptedModel

WAIT = 30.0


def each_turn(tmp_path: Path) -> Settings:
    """Settings under which every turn's upkeep extracts (no batch to wait for)."""
    return Settings(data_dir=tmp_path / "data", extraction_batch_turns=1)


class Gate:
    """Holds the model calls it answers until opened, counting how many run at once."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()
        self._lock = threading.Lock()
        self.active = 0
        self.peak = 0

    def answer(self, output: Any) -> Callable[[list[BaseMessage]], Any]:
        def held(_: list[BaseMessage]) -> Any:
            with self._lock:
                self.active += 1
                self.peak = max(self.peak, self.active)
            self.entered.set()
            try:
                assert self.opened.wait(WAIT), "the test never opened the gate"
            finally:
                with self._lock:
                    self.active -= 1
            return output

        return held


def keep(text: str) -> ExtractionOutput:
    add = Operation(op="add", turn=1, quote=text, kind="preference", text=text, importance=3)
    return ExtractionOutput(operations=[add])


def stored(agent: ChatAgent, cid: str) -> dict[str, Any]:
    """The conversation's hydration DTO as stored (without starting a catch-up)."""
    return agent.memory.hydrate("s", cid)


def test_the_turn_records_what_its_upkeep_owes_and_settling_clears_it(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft("s1", "c1")
    first = memory.write_turn("s1", "c1", chat_turn("I prefer tea", "ok"), owe_remember=True)
    assert first.state.upkeep == "pending"
    assert [m.text for m in first.state.upkeep_owed] == ["I prefer tea"]
    second = memory.write_turn("s1", "c1", chat_turn("hello", "hi"))
    assert [m.text for m in second.state.upkeep_owed] == ["I prefer tea"]  # still owed
    paid = [m.id for m in first.state.upkeep_owed]
    settled = memory.settle_upkeep("s1", "c1", paid, failed=False)
    assert settled is not None and (settled.upkeep, settled.upkeep_owed) == ("done", [])
    for n in range(3):  # ten messages: a compaction is owed
        memory.write_turn("s1", "c1", chat_turn(f"q{n}", "a"))
    assert memory.hydrate("s1", "c1")["upkeep"] == "pending"
    left = memory.settle_upkeep("s1", "c1", [], failed=False)
    assert left is not None and left.upkeep == "pending"  # still more than eight messages
    failed = memory.settle_upkeep("s1", "c1", [], failed=True)
    assert failed is not None and memory.hydrate("s1", "c1")["upkeep"] == "failed"


def test_a_next_turn_runs_while_upkeep_runs_and_upkeeps_never_overlap(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    gate = Gate()
    model = ScriptedModel(
        replies=["ok"] * 4,
        structured=[gate.answer(keep("I prefer tea")), gate.answer(keep("I prefer jazz"))],
    )
    agent = open_agent(model, long_term_memory="model", settings=each_turn(tmp_path))
    first = agent.send("I prefer tea", session_id="s", create_conversation=True)
    cid = first.conversation_id
    assert (first.status, first.upkeep, first.remembered) == ("completed", "pending", ())
    assert gate.entered.wait(WAIT)  # its upkeep is in the extraction call
    # the conversation is free: the next turn runs, reading the memory as committed
    second = agent.send("I prefer jazz", session_id="s", conversation_id=cid)
    assert (second.status, second.upkeep) == ("completed", "pending")
    assert [m.text for m in model.calls[-1]][-3:] == ["I prefer tea", "ok", "I prefer jazz"]
    record = stored(agent, cid)
    assert (record["upkeep"], len(record["messages"])) == ("pending", 4)
    assert agent.memories(session_id="s")["memories"] == []  # not remembered yet
    gate.opened.set()
    assert agent.wait_for_upkeep(WAIT)
    assert gate.peak == 1  # the second turn's upkeep waited for the first's
    assert len(model.structured_calls) == 2  # each owed extraction paid once
    texts = {m["text"] for m in agent.memories(session_id="s")["memories"]}
    assert texts == {"I prefer tea", "I prefer jazz"}
    assert stored(agent, cid)["upkeep"] == "done"


def test_compaction_rebases_onto_a_turn_that_landed_while_it_ran(
    open_agent: Callable[..., ChatAgent],
) -> None:
    gate = Gate()
    pin = QuotedItem(text="Keep q0 short.", quote="keep q0 short")
    summary = CompactionOutput(summary="S1", pinned_decisions=[pin], retired_pins=[])
    model = ScriptedModel(replies=["ok"] * 6, structured=[gate.answer(summary)])
    agent = open_agent(model, long_term_memory="off")
    said = "q0: keep q0 short"
    cid = agent.send(said, session_id="s", create_conversation=True).conversation_id
    for n in range(1, 4):
        assert agent.send(f"q{n}", session_id="s", conversation_id=cid).upkeep == "done"
    fifth = agent.send("q4", session_id="s", conversation_id=cid)  # ten messages
    assert (fifth.upkeep, fifth.compaction) == ("pending", "pending")
    assert gate.entered.wait(WAIT)
    sixth = agent.send("q5", session_id="s", conversation_id=cid)
    assert sixth.status == "completed"
    gate.opened.set()
    assert agent.wait_for_upkeep(WAIT)
    record = stored(agent, cid)
    assert (record["summaryPreview"], record["pinnedDecisions"]) == ("S1", ["Keep q0 short."])
    # the four messages compaction kept, then the turn that landed while it ran
    assert [m["text"] for m in record["messages"]] == ["q3", "ok", "q4", "ok", "q5", "ok"]
    assert record["upkeep"] == "done"
    assert len(model.structured_calls) == 1


def test_the_local_fallback_bounds_memory_while_upkeep_is_stuck(
    open_agent: Callable[..., ChatAgent],
) -> None:
    gate = Gate()
    summary = CompactionOutput(summary="late", pinned_decisions=[], retired_pins=[])
    model = ScriptedModel(replies=["ok"] * 12, structured=[gate.answer(summary)])
    agent = open_agent(model, long_term_memory="off")
    cid = agent.send("q0", session_id="s", create_conversation=True).conversation_id
    sizes = []
    for n in range(1, 12):  # the compaction owed from the fifth turn on never finishes
        agent.send(f"q{n}", session_id="s", conversation_id=cid)
        sizes.append(len(stored(agent, cid)["messages"]))
    assert gate.entered.is_set() and max(sizes) == HARD_MESSAGE_CAP
    assert sizes[-1] < HARD_MESSAGE_CAP  # the fallback folded the oldest turns
    assert "q0" in stored(agent, cid)["summaryPreview"]
    gate.opened.set()
    assert agent.wait_for_upkeep(WAIT)
    assert len(stored(agent, cid)["messages"]) <= HARD_MESSAGE_CAP


@pytest.mark.sqlite_only
def test_a_stream_follows_upkeep_after_done(open_agent: Callable[..., ChatAgent]) -> None:
    summary = CompactionOutput(summary="S1", pinned_decisions=[], retired_pins=[])
    model = ScriptedModel(replies=["ok"] * 5, structured=[summary])
    agent = open_agent(model, long_term_memory="off")
    cid = agent.send("q0", session_id="s", create_conversation=True).conversation_id
    for n in range(1, 4):
        agent.send(f"q{n}", session_id="s", conversation_id=cid)

    async def turn() -> list[Mapping[str, Any]]:
        return [e async for e in agent.astream("q4", session_id="s", conversation_id=cid)]

    events = asyncio.run(turn())
    kinds = [(e["event"], e.get("stage"), e.get("status")) for e in events]
    done = kinds.index(("done", None, None))
    result = events[done]["result"]
    assert (result["upkeep"], result["compaction"]) == ("pending", "pending")
    assert kinds[done + 1 :] == [
        ("memory", "compact", "started"),
        ("memory", "compact", "succeeded"),
        ("memory", "upkeep", "done"),
    ]
    assert events[done + 2]["summaryVersion"] == 1


def test_a_stream_told_pending_ends_with_upkeep_done_when_an_earlier_upkeep_paid_it(
    open_agent: Callable[..., ChatAgent], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gate = Gate()
    model = ScriptedModel(replies=["ok"] * 2, structured=[gate.answer(keep("I prefer tea"))])
    agent = open_agent(model, long_term_memory="model", settings=each_turn(tmp_path))
    cid = agent.send("I prefer tea", session_id="s", create_conversation=True).conversation_id
    assert gate.entered.wait(WAIT)  # the first turn's upkeep is in its extraction
    start = agent.upkeep.start

    async def start_once_idle(session_id: str, conversation_id: str, **kw: Any) -> Any:
        # the interleaving a slow client sees: between the turn's write (which found
        # the first upkeep's record still owed) and its own upkeep's start, the first
        # upkeep pays the record and ends
        gate.opened.set()
        await agent.upkeep.idle()
        return await start(session_id, conversation_id, **kw)

    monkeypatch.setattr(agent.upkeep, "start", start_once_idle)

    async def turn() -> list[Mapping[str, Any]]:
        return [e async for e in agent.astream("ok", session_id="s", conversation_id=cid)]

    events = asyncio.run(turn())
    kinds = [(e["event"], e.get("stage"), e.get("status")) for e in events]
    done = kinds.index(("done", None, None))
    assert events[done]["result"]["upkeep"] == "pending"
    assert kinds[done + 1 :] == [("memory", "upkeep", "done")]
    assert stored(agent, cid)["upkeep"] == "done"


def test_an_exchange_that_compacts_commits_once_in_its_turn_and_once_in_its_upkeep(
    open_agent: Callable[..., ChatAgent],
) -> None:
    summary = CompactionOutput(summary="S1", pinned_decisions=[], retired_pins=[])
    agent = open_agent(
        ScriptedModel(replies=["ok"] * 5, structured=[summary]), long_term_memory="off"
    )
    cid = agent.send("q0", session_id="s", create_conversation=True).conversation_id
    for n in range(1, 4):
        agent.send(f"q{n}", session_id="s", conversation_id=cid)
    assert agent.wait_for_upkeep(WAIT)
    threads, counted = agent.memory.threads, {"read": 0, "commit": 0}
    get_many, put_many = threads.get_many, threads.put_many

    def read(*args: Any, **kwargs: Any) -> Any:
        counted["read"] += 1
        return get_many(*args, **kwargs)

    def commit(*args: Any, **kwargs: Any) -> Any:
        counted["commit"] += 1
        return put_many(*args, **kwargs)

    threads.get_many, threads.put_many = read, commit  # type: ignore[method-assign]
    assert agent.send("q4", session_id="s", conversation_id=cid).compaction == "pending"
    assert agent.wait_for_upkeep(WAIT)
    assert counted["commit"] == 2  # the turn's write; the compaction with the upkeep's end
    assert counted["read"] == 3  # the turn's; the upkeep's and its compare-and-set
    record = stored(agent, cid)
    assert (record["summaryPreview"], record["upkeep"]) == ("S1", "done")


def test_a_compaction_answer_of_the_wrong_form_ends_the_upkeep_done_with_the_fallback(
    open_agent: Callable[..., ChatAgent],
) -> None:
    model = ScriptedModel(replies=["ok"] * 5, structured=['{"summary": "cut at max_to'])
    agent = open_agent(model, long_term_memory="off")
    cid = agent.send("q0", session_id="s", create_conversation=True).conversation_id
    for n in range(1, 5):
        agent.send(f"q{n}", session_id="s", conversation_id=cid)
    assert agent.wait_for_upkeep(WAIT)
    record = stored(agent, cid)
    assert record["upkeep"] == "done"
    assert record["summaryVersion"] == 1 and "q0" in record["summaryPreview"]
    assert len(record["messages"]) < 10
