"""Retention by policy: idle conversations go, registry entry,
memory thread and run thread together; active ones stay; `python -m agent gc`."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage

from agent import ChatAgent
from agent.cli.main import main as cli_main
from agent.offline.local import ModelCall
from agent.settings import Settings
from memory.errors import MemoryNotFound
from memory.ids import REGISTRY_THREAD_PREFIX
from tests.fakes import PacedModel, StepClock
from tests.storage_support import iter_thread_ids

START = datetime(2026, 1, 1, tzinfo=UTC)


def threads_of(agent: ChatAgent, session: str, cid: str) -> set[str]:
    return {agent.memory.memory_thread(session, cid), agent.memory.run_thread(session, cid)}


def test_idle_conversations_go_by_policy_and_active_ones_stay(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", retention_days=1, long_term_memory="off")
    agent = open_agent(PacedModel(), settings=settings)
    clock = StepClock(START, step=timedelta(seconds=1))
    agent.memory.clock = clock
    old_a = agent.send("a1", session_id="alice", create_conversation=True).conversation_id
    old_b = agent.send("b1", session_id="bob", create_conversation=True).conversation_id
    clock.now += timedelta(days=2)  # two days later bob comes back; alice does not
    new_b = agent.send("b2", session_id="bob", create_conversation=True).conversation_id
    every = set(iter_thread_ids(agent.memory.threads))
    assert threads_of(agent, "alice", old_a) | threads_of(agent, "bob", old_b) <= every

    preview = agent.sweep(dry_run=True, now=clock.now)
    assert (preview["conversations"], preview["sessions"], preview["dryRun"]) == (2, 1, True)
    assert set(iter_thread_ids(agent.memory.threads)) == every  # a dry run deletes nothing

    removed = agent.sweep(now=clock.now)
    assert (removed["conversations"], removed["sessions"]) == (2, 1)
    left = set(iter_thread_ids(agent.memory.threads))
    assert not (threads_of(agent, "alice", old_a) | threads_of(agent, "bob", old_b)) & left
    assert threads_of(agent, "bob", new_b) <= left
    assert agent.memory.ids.registry_thread("alice") not in left  # the whole session went
    assert agent.conversations(session_id="alice")["conversations"] == []
    assert [c["id"] for c in agent.conversations(session_id="bob")["conversations"]] == [new_b]
    assert agent.hydrate(session_id="bob", conversation_id=new_b)["messages"][0]["text"] == "b2"
    assert agent.sweep(now=clock.now)["threads"] == 0  # nothing more to do


def test_zero_days_keeps_everything(open_agent: Callable[..., ChatAgent], tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data", retention_days=0)
    agent = open_agent(PacedModel(), settings=settings)
    agent.send("hello", session_id="s", create_conversation=True)
    every = set(iter_thread_ids(agent.memory.threads))
    assert agent.sweep(now=datetime.now(UTC) + timedelta(days=3650))["conversations"] == 0
    assert set(iter_thread_ids(agent.memory.threads)) == every


def test_expired_long_term_items_are_swept(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    agent = open_agent(PacedModel(), settings=Settings(data_dir=tmp_path / "data"))
    agent.remember("I like jazz", session_id="s")
    namespace = agent.long_term.namespace("s")
    agent.long_term.store.put(namespace, "m_old", {"stale": True}, ttl=-1)  # already expired
    assert agent.sweep()["memories"] == 1
    assert [m["text"] for m in agent.memories(session_id="s")["memories"]] == ["I like jazz"]


@pytest.mark.sqlite_only
def test_gc_command_says_what_it_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = f"sqlite:///{tmp_path / 'gc.sqlite'}"
    monkeypatch.setenv("AGENT_DATABASE_URL", db)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_RETENTION_DAYS", "1")
    with ChatAgent(model=PacedModel(), settings=Settings.from_env()) as agent:
        agent.memory.clock = StepClock(START)
        agent.send("long ago", session_id="s", create_conversation=True)
    assert cli_main(["gc", "--dry-run"]) == 0
    assert "would remove 1 conversation(s) idle for more than 1 day(s)" in capsys.readouterr().out
    assert cli_main(["gc"]) == 0
    assert "removed 1 conversation(s)" in capsys.readouterr().out
    with ChatAgent(model=PacedModel(), settings=Settings.from_env()) as agent:
        left = list(iter_thread_ids(agent.memory.threads))
    assert not [t for t in left if t.startswith(REGISTRY_THREAD_PREFIX)]


def test_an_expired_item_is_never_served_before_the_sweep(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    agent = open_agent(PacedModel(), settings=Settings(data_dir=tmp_path / "data"))
    agent.remember("I like jazz", session_id="s")
    (live,) = agent.long_term.items("s")
    stale = {**live.to_value(), "text": "I live in Lyon", "key": "i live in lyon"}
    # a valid item whose TTL ran out before the hourly sweep came round
    agent.long_term.store.put(agent.long_term.namespace("s"), "m_expired", stale, ttl=-1)
    assert [m["text"] for m in agent.memories(session_id="s")["memories"]] == ["I like jazz"]
    assert "m_expired" not in {item.id for item in agent.long_term.recall("s", "Lyon live")}
    with pytest.raises(MemoryNotFound):
        agent.forget("m_expired", session_id="s")
    assert agent.sweep()["memories"] == 1


ENTERED, RELEASE = threading.Event(), threading.Event()


class HeldModel(PacedModel):
    """Answers once `RELEASE` is set, after setting `ENTERED`: a turn held open mid-run."""

    def respond(self, call: ModelCall) -> AIMessage:
        if "held" in (call.messages[-1].text if call.messages else ""):
            ENTERED.set()
            assert RELEASE.wait(timeout=60)
        return super().respond(call)


def test_a_conversation_with_a_turn_running_is_active(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    ENTERED.clear()
    RELEASE.clear()
    settings = Settings(data_dir=tmp_path / "data", retention_days=1, long_term_memory="off")
    agent = open_agent(HeldModel(), settings=settings)
    clock = StepClock(START, step=timedelta(seconds=1))
    agent.memory.clock = clock
    cid = agent.send("long ago", session_id="s", create_conversation=True).conversation_id
    clock.now += timedelta(days=2)  # idle past retention; then a turn starts in it
    with ThreadPoolExecutor(1) as pool:
        running = pool.submit(agent.send, "held turn", session_id="s", conversation_id=cid)
        assert ENTERED.wait(timeout=60)
        try:
            removed = agent.sweep(now=clock.now)
        finally:
            RELEASE.set()
        result = running.result(timeout=60)
    assert (removed["conversations"], removed["sessions"], removed["threads"]) == (0, 0, 0)
    assert result.conversation_deleted is False
    assert [m["text"] for m in agent.hydrate(session_id="s", conversation_id=cid)["messages"]][
        -2:
    ] == ["held turn", "answer to: held turn"]
    # once the turn is over the conversation is active again: nothing to sweep
    assert agent.sweep(now=clock.now)["conversations"] == 0


def test_a_session_that_never_chatted_does_not_outlive_retention(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", retention_days=1, long_term_memory="off")
    agent = open_agent(PacedModel(), settings=settings)
    for session in ("lurker-1", "lurker-2", "chatter"):
        agent.remember("I like green tea", session_id=session)
    later = datetime.now(UTC) + timedelta(days=2)
    agent.memory.clock = StepClock(later)  # the chatter's turn is recent at sweep time
    agent.send("hello", session_id="chatter", create_conversation=True)

    assert agent.sweep()["memories"] == 0  # added today: within retention
    preview = agent.sweep(now=later, dry_run=True)
    assert (preview["sessions"], preview["memories"]) == (2, 2)
    assert agent.memories(session_id="lurker-1")["memories"] != []
    removed = agent.sweep(now=later)
    assert (removed["sessions"], removed["memories"], removed["conversations"]) == (2, 2, 0)
    for lurker in ("lurker-1", "lurker-2"):
        assert agent.memories(session_id=lurker)["memories"] == []
    assert [m["text"] for m in agent.memories(session_id="chatter")["memories"]] == [
        "I like green tea"
    ]
    assert agent.sweep(now=later)["memories"] == 0


def test_the_longest_allowed_periods_still_sweep(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    settings = Settings.from_env(
        {
            "AGENT_DATA_DIR": str(tmp_path / "data"),
            "AGENT_RETENTION_DAYS": "36500",
            "AGENT_MEMORY_TTL_DAYS": "36500",
        }
    )
    agent = open_agent(PacedModel(), settings=settings)
    agent.remember("I like jazz", session_id="s")  # the store computes its expiry
    agent.send("hello", session_id="s", create_conversation=True)
    removed = agent.sweep()
    assert (removed["conversations"], removed["memories"]) == (0, 0)
    assert [m["text"] for m in agent.memories(session_id="s")["memories"]] == ["I like jazz"]
