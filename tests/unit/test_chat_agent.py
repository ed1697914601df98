"""`ChatAgent`: drafts, validation, ownership, one turn per conversation, cancellation."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

import pytest

from agent import ChatAgent, ConversationBusy, ConversationNotFound, InvalidRequest
from agent.offline import OfflineChatModel
from agent.settings import Settings
from memory import CompactionOutput
from tests.conftest import SECRET
from tests.fakes import PacedModel, ScriptedModel
from tests.gates import GATE_DIR_VARIABLE, GatedModel, gate_path, new_gate, open_gate
from tests.storage_support import iter_thread_ids


@pytest.fixture
def gates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the agent's model looks for the gates its held answers wait at."""
    monkeypatch.setenv(GATE_DIR_VARIABLE, str(tmp_path / "gates"))
    return tmp_path / "gates"


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], gates: Path) -> ChatAgent:
    return open_agent(GatedModel())


def stored_texts(agent: ChatAgent, session: str, cid: str) -> list[str]:
    return [m["text"] for m in agent.hydrate(session_id=session, conversation_id=cid)["messages"]]


def test_draft_becomes_a_conversation_when_its_first_message_is_accepted(agent: ChatAgent) -> None:
    assert agent.conversations(session_id="s1")["conversations"] == []
    result = agent.send("hello", session_id="s1", create_conversation=True)
    assert (result.status, result.route, result.memory_written) == ("completed", "chat", True)
    listed = agent.conversations(session_id="s1")
    assert [c["id"] for c in listed["conversations"]] == [result.conversation_id]
    assert listed["selectedConversationId"] == result.conversation_id
    follow = agent.send("again", session_id="s1", conversation_id=result.conversation_id)
    assert follow.conversation_id == result.conversation_id
    assert stored_texts(agent, "s1", result.conversation_id)[::2] == ["hello", "again"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"conversation_id": "c1", "create_conversation": True},
        {"conversation_id": ""},
        {"conversation_id": "not valid!"},
        {"create_conversation": True, "mode": "shell"},
    ],
)
def test_bad_requests_are_rejected_before_anything_runs(
    agent: ChatAgent, kwargs: dict[str, Any]
) -> None:
    with pytest.raises(InvalidRequest):
        agent.send("hello", session_id="s1", **kwargs)
    assert list(iter_thread_ids(agent.memory.threads)) == []


@pytest.mark.parametrize("message", ["", "   ", "x" * 16_001, 42, "hi \ud800 there"])
def test_bad_messages_are_rejected(agent: ChatAgent, message: Any) -> None:
    with pytest.raises(InvalidRequest):
        agent.send(message, session_id="s1", create_conversation=True)
    assert list(iter_thread_ids(agent.memory.threads)) == []
    assert agent.conversations(session_id="s1")["selectedConversationId"] is None


def test_a_lone_surrogate_is_bad_input_not_a_storage_failure(agent: ChatAgent) -> None:
    with pytest.raises(InvalidRequest, match="not valid Unicode"):
        agent.send("hi \ud800 there", session_id="s1", create_conversation=True)


def test_errors_name_python_parameters(agent: ChatAgent) -> None:
    with pytest.raises(InvalidRequest, match="conversation_id or create_conversation=True"):
        agent.send("hello", session_id="s1")


def test_unknown_and_foreign_conversations_are_not_found(agent: ChatAgent) -> None:
    mine = agent.send("mine", session_id="alice", create_conversation=True).conversation_id
    for session, cid in (("mallory", mine), ("alice", "unknown")):
        with pytest.raises(ConversationNotFound):
            agent.send("hi", session_id=session, conversation_id=cid)
        with pytest.raises(ConversationNotFound):
            agent.hydrate(session_id=session, conversation_id=cid)
        with pytest.raises(ConversationNotFound):
            agent.select(session_id=session, conversation_id=cid)
    assert stored_texts(agent, "alice", mine) == ["mine", "answer to: mine"]


def test_a_second_turn_in_a_running_conversation_is_busy(agent: ChatAgent, gates: Path) -> None:
    cid = agent.send("first", session_id="s1", create_conversation=True).conversation_id
    other = agent.send("other", session_id="s1", create_conversation=True).conversation_id
    gate = new_gate()
    held_message = f"held one gate-{gate}"

    async def scenario() -> tuple[Any, Any]:
        held = agent.astream(held_message, session_id="s1", conversation_id=cid)
        async for event in held:
            if event["event"] == "token":  # the held turn holds its conversation now
                break
        with pytest.raises(ConversationBusy):
            await agent.asend("overlap", session_id="s1", conversation_id=cid)
        parallel = await agent.asend("in parallel", session_id="s1", conversation_id=other)
        open_gate(gates, gate)
        rest = [event async for event in held]  # memory upkeep's events may follow done
        return next(e for e in rest if e["event"] == "done")["result"], parallel

    held, parallel = asyncio.run(scenario())
    assert held["status"] == parallel.status == "completed"
    assert "overlap" not in stored_texts(agent, "s1", cid)
    assert stored_texts(agent, "s1", cid)[-2] == held_message


def test_selection_mid_stream_cannot_redirect_the_write(agent: ChatAgent, gates: Path) -> None:
    first = agent.send("first", session_id="s1", create_conversation=True).conversation_id
    second = agent.send("second", session_id="s1", create_conversation=True).conversation_id
    gate = new_gate()
    held = f"held write gate-{gate}"

    async def scenario() -> list[Mapping[str, Any]]:
        events: list[Mapping[str, Any]] = []
        async for event in agent.astream(held, session_id="s1", conversation_id=first):
            events.append(event)
            if event["event"] == "token" and not gate_path(gates, gate).exists():
                # the turn waits at its gate, after its first token
                agent.select(session_id="s1", conversation_id=second)
                open_gate(gates, gate)
        return events

    events = asyncio.run(scenario())
    assert events[0] == {"event": "conversation", "conversationId": first}
    assert [e["event"] for e in events].count("done") == 1  # memory upkeep may follow it
    assert stored_texts(agent, "s1", first)[-2] == held
    assert held not in stored_texts(agent, "s1", second)
    assert agent.conversations(session_id="s1")["selectedConversationId"] == second


def test_closing_the_stream_mid_turn_cancels_it_and_writes_nothing(agent: ChatAgent) -> None:
    cid = agent.send("first", session_id="s1", create_conversation=True).conversation_id

    async def scenario() -> None:
        # its gate stays shut: only the cancellation can end the turn
        stream = agent.astream(f"abandoned gate-{new_gate()}", session_id="s1", conversation_id=cid)
        async for event in stream:
            if event["event"] == "token":
                break
        await stream.aclose()  # returns once the cancelled run has unwound

    asyncio.run(scenario())
    # the conversation is free at once (a run still going would hold it: busy)
    assert agent.send("next", session_id="s1", conversation_id=cid).status == "completed"
    assert stored_texts(agent, "s1", cid) == [
        "first",
        "answer to: first",
        "next",
        "answer to: next",
    ]


HELD_TURN = "held second turn gate-{gate}"


def deleted_mid_turn(agent: ChatAgent, cid: str, delete: Any, gates: Path) -> dict[str, Any]:
    """Run a turn in `cid` that waits at a gate after its first token, call `delete()`
    then, open the gate, and return the turn's `done` result."""
    gate = new_gate()

    async def scenario() -> list[Mapping[str, Any]]:
        events: list[Mapping[str, Any]] = []
        held = HELD_TURN.format(gate=gate)
        async for event in agent.astream(held, session_id="s1", conversation_id=cid):
            events.append(event)
            if event["event"] == "token" and sum(e["event"] == "token" for e in events) == 1:
                await asyncio.to_thread(delete)
                open_gate(gates, gate)
        return events

    events = asyncio.run(scenario())
    assert events[-1]["event"] == "done"
    return cast(dict[str, Any], events[-1]["result"])


def test_a_conversation_deleted_mid_turn_stays_deleted(agent: ChatAgent, gates: Path) -> None:
    cid = agent.send("private note", session_id="s1", create_conversation=True).conversation_id
    result = deleted_mid_turn(
        agent, cid, lambda: agent.delete_conversation(session_id="s1", conversation_id=cid), gates
    )
    # the user still gets the answer
    assert re.fullmatch("answer to: " + HELD_TURN.format(gate="[0-9a-f]+"), result["text"])
    assert (result["memoryWritten"], result["conversationDeleted"]) == (False, True)
    assert agent.conversations(session_id="s1")["conversations"] == []
    assert list(iter_thread_ids(agent.memory.threads)) == [agent.memory.ids.registry_thread("s1")]
    with pytest.raises(ConversationNotFound):
        agent.hydrate(session_id="s1", conversation_id=cid)


def test_a_conversation_pruned_mid_turn_stays_pruned(agent: ChatAgent, gates: Path) -> None:
    oldest = agent.send("oldest", session_id="s1", create_conversation=True).conversation_id
    for n in range(9):
        agent.send(f"conversation {n}", session_id="s1", create_conversation=True)
    result = deleted_mid_turn(
        agent,
        oldest,
        lambda: agent.send("eleventh", session_id="s1", create_conversation=True),
        gates,
    )
    assert (result["memoryWritten"], result["conversationDeleted"]) == (False, True)
    listed = [c["id"] for c in agent.conversations(session_id="s1")["conversations"]]
    assert len(listed) == 10 and oldest not in listed
    assert agent.memory.run_thread("s1", oldest) not in set(iter_thread_ids(agent.memory.threads))
    with pytest.raises(ConversationNotFound):
        agent.hydrate(session_id="s1", conversation_id=oldest)


def test_stream_events_in_order(agent: ChatAgent) -> None:
    async def scenario() -> list[Mapping[str, Any]]:
        # a trivial text owes no extraction: the stream ends at `done`
        return [e async for e in agent.astream("ok", session_id="s1", create_conversation=True)]

    events = asyncio.run(scenario())
    kinds = [e["event"] for e in events]
    assert kinds[0] == "conversation" and kinds[-1] == "done"
    assert "token" in kinds and "memory" in kinds
    tokens = "".join(e["text"] for e in events if e["event"] == "token")
    assert tokens == events[-1]["result"]["text"] == "answer to: ok"


def test_sync_send_works_inside_a_running_event_loop(agent: ChatAgent) -> None:
    async def notebook_cell() -> str:
        return agent.send("from a notebook", session_id="s1", create_conversation=True).status

    assert asyncio.run(notebook_cell()) == "completed"


def test_run_thread_keeps_one_checkpoint(agent: ChatAgent) -> None:
    cid = agent.send("one", session_id="s1", create_conversation=True).conversation_id
    for text in ("two", "three"):
        agent.send(text, session_id="s1", conversation_id=cid)
    run_thread = agent.memory.run_thread("s1", cid)
    assert agent.memory.threads.checkpoint_count(run_thread) == 1


def test_delete_removes_the_conversation(agent: ChatAgent) -> None:
    cid = agent.send("bye", session_id="s1", create_conversation=True).conversation_id
    agent.delete_conversation(session_id="s1", conversation_id=cid)
    assert list(iter_thread_ids(agent.memory.threads)) == [agent.memory.ids.registry_thread("s1")]
    with pytest.raises(ConversationNotFound):
        agent.send("again", session_id="s1", conversation_id=cid)


def test_model_failure_is_a_failed_turn_with_a_safe_message(tmp_path: Path) -> None:
    model = ScriptedModel(replies=[RuntimeError("provider exploded at /secret/path")])
    with ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
        model=model,
        secret=SECRET,
        settings=Settings(data_dir=tmp_path),
    ) as failing:
        result = failing.send("hi", session_id="s1", create_conversation=True)
        assert (result.status, result.memory_written) == ("failed", False)
        assert "/secret/path" not in result.text
        assert (
            failing.hydrate(session_id="s1", conversation_id=result.conversation_id)["messages"]
            == []
        )


def test_resume_without_a_pending_review_is_rejected(agent: ChatAgent) -> None:
    cid = agent.send("hi", session_id="s1", create_conversation=True).conversation_id
    with pytest.raises(InvalidRequest, match="no pending review"):
        agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    with pytest.raises(InvalidRequest):
        agent.resume("approve", session_id="s1", conversation_id=cid)  # type: ignore[arg-type]


def test_explicit_arguments_win_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_DATABASE_URL", f"sqlite:///{tmp_path / 'env.sqlite'}")
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    explicit = tmp_path / "explicit.sqlite"
    with ChatAgent(
        database_url=f"sqlite:///{explicit}", model=PacedModel(), secret=SECRET
    ) as chat_agent:
        chat_agent.send("hi", session_id="s1", create_conversation=True)
    assert explicit.exists() and not (tmp_path / "env.sqlite").exists()


def test_an_answer_survives_a_failed_final_checkpoint(
    agent: ChatAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storing the run's last checkpoint fails after the answer exists: the answer is
    delivered, marked degraded, by `send` (run in the caller's thread) and `astream`."""
    cid = agent.send("first", session_id="s1", create_conversation=True).conversation_id
    saver = type(agent.memory.threads.checkpointer)
    put = saver.put

    def failing_put(self: Any, config: Any, *args: Any, **kwargs: Any) -> Any:
        if config["configurable"]["thread_id"].startswith("agent-run"):
            raise RuntimeError("the database went away")
        return put(self, config, *args, **kwargs)

    monkeypatch.setattr(saver, "put", failing_put)
    result = agent.send("second", session_id="s1", conversation_id=cid)
    assert (result.status, result.text, result.degraded) == ("completed", "answer to: second", True)

    async def scenario() -> list[Mapping[str, Any]]:
        return [e async for e in agent.astream("third", session_id="s1", conversation_id=cid)]

    done = next(e for e in asyncio.run(scenario()) if e["event"] == "done")
    assert (done["result"]["text"], done["result"]["degraded"]) == ("answer to: third", True)
    assert stored_texts(agent, "s1", cid)[::2] == ["first", "second", "third"]


@pytest.mark.parametrize("history", ["latest", "all"])
def test_a_run_thread_holds_its_turn_never_the_memory(
    open_agent: Callable[..., ChatAgent], tmp_path: Path, history: str
) -> None:
    """Every checkpoint and pending write of a conversation's run thread, after its turns
    finished, holds only its own turn: never an earlier turn's words nor the summary."""
    summary = "The user plans zebraquill trips to Lisbon; the budget is discussed."
    model = ScriptedModel(
        replies=[f"reply {n}" for n in range(8)],
        structured=[CompactionOutput(summary=summary, pinned_decisions=[], retired_pins=[])],
    )
    settings = Settings(data_dir=tmp_path / "data", run_history=cast(Any, history))
    agent = open_agent(model, settings=settings, long_term_memory="off")
    first = agent.send("zebraquill plans for Lisbon", session_id="s1", create_conversation=True)
    cid = first.conversation_id
    for n in range(5):  # past eight messages: the summary is written
        agent.send(f"filler turn {n} about the budget", session_id="s1", conversation_id=cid)
        agent.wait_for_upkeep()
    assert agent.memory.read_memory("s1", cid).summary == summary
    agent.send("and the next step?", session_id="s1", conversation_id=cid)
    agent.wait_for_upkeep()
    config: Any = {"configurable": {"thread_id": agent.memory.run_thread("s1", cid)}}
    saver = agent.memory.threads.checkpointer
    assert "the next step" in repr(saver.get_tuple(config))
    markers = ["zebraquill", *(f"filler turn {n} " for n in range(5)), "the next step"]
    stored = list(saver.list(config))
    for checkpoint in stored:
        held = repr(checkpoint)
        assert sum(marker in held for marker in markers) == 1, held[:300]
        assert "budget is discussed" not in held
    assert len(stored) == (1 if history == "latest" else 7)


def test_a_workflow_run_keeps_the_conversations_background_out_of_its_checkpoints(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    """A delivery reads the conversation's summary and pins as background: they reach its
    stages, never a checkpoint or a pending write of its run thread."""
    settings = Settings(data_dir=tmp_path / "data", run_history="all")
    agent = open_agent(OfflineChatModel(), settings=settings, long_term_memory="off")
    cid = agent.send(
        "We use the quokkaform build system.", session_id="s1", create_conversation=True
    ).conversation_id
    for n in range(5):
        agent.send(f"note {n}: the budget is fixed", session_id="s1", conversation_id=cid)
        agent.wait_for_upkeep()
    summary = agent.memory.read_memory("s1", cid).summary
    assert "quokkaform" in summary
    report = agent.send(
        "/delivery Write a release checklist for the beta, with owners and dates",
        session_id="s1",
        conversation_id=cid,
    )
    assert report.status in ("completed", "blocked")
    config: Any = {"configurable": {"thread_id": agent.memory.run_thread("s1", cid)}}
    saver = agent.memory.threads.checkpointer
    namespaces = {c.config["configurable"]["checkpoint_ns"] for c in saver.list(config)}
    delivery = [ns for ns in namespaces if ns.startswith("delivery:")]
    held = [repr(c) for ns in delivery for c in saver.list(_in(config, ns))]
    # (the root's checkpoints hold the turns' own answers, which this model fills with
    # what it remembers: the workflow's own state is what must not copy the memory)
    assert held and all("release checklist" in text for text in held)
    assert not any("quokkaform" in text for text in held)


def _in(config: Any, namespace: str) -> Any:
    return {"configurable": {**config["configurable"], "checkpoint_ns": namespace}}


def test_closing_twice_is_harmless(tmp_path: Path) -> None:
    """A `with` block around an explicit `close()` (the README's snippet could end either
    way) closes once: the second call finds the loop already stopped and does nothing."""
    with ChatAgent(model=OfflineChatModel(), settings=Settings(data_dir=tmp_path)) as agent:
        agent.send("hello", session_id="s", create_conversation=True)
        agent.close()
    agent.close()
