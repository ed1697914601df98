"""Time travel on `ChatAgent`'s graph (state history, replay, forks) with
`AGENT_RUN_HISTORY=all`, and flat run threads with the default `latest`."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

from langgraph.types import Command, StateSnapshot

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.settings import Settings
from graphs.state import Context
from tests.unit.tasklist_support import PASSED, done, plan, scripted, start, summary, texts


def keeping(tmp_path: Path, history: str) -> dict[str, Any]:
    return {"settings": Settings(data_dir=tmp_path / "data", run_history=history)}


def run_config(agent: ChatAgent, cid: str) -> Any:
    return {"configurable": {"thread_id": agent.memory.run_thread("s1", cid)}}


def chat(agent: ChatAgent, session: str, *messages: str) -> str:
    cid = agent.send(messages[0], session_id=session, create_conversation=True).conversation_id
    for text in messages[1:]:
        agent.send(text, session_id=session, conversation_id=cid)
    return cid


def test_latest_keeps_one_checkpoint_all_keeps_every_turn(open_agent: Any, tmp_path: Path) -> None:
    flat = open_agent(OfflineChatModel(), **keeping(tmp_path / "flat", "latest"))
    cid = chat(flat, "s1", "one", "two", "three")
    thread = flat.memory.run_thread("s1", cid)
    assert flat.memory.threads.checkpoint_count(thread) == 1

    kept = open_agent(OfflineChatModel(), **keeping(tmp_path / "kept", "all"))
    cid = chat(kept, "s2", "one", "two", "three")
    config = {"configurable": {"thread_id": kept.memory.run_thread("s2", cid)}}
    history = list(kept.graph.get_state_history(config))
    # each entry's parent is the next one, back to the first turn
    for newer, older in itertools.pairwise(history):
        assert newer.parent_config is not None
        assert (
            newer.parent_config["configurable"]["checkpoint_id"]
            == (older.config["configurable"]["checkpoint_id"])
        )
    turn_ends = [state for state in history if not state.next]
    said = [state.values["messages"][0].content for state in turn_ends]
    assert said == ["three", "two", "one"]
    # an earlier turn's state reads back whole from its own checkpoint
    first = kept.graph.get_state(turn_ends[-1].config)
    assert first.values["messages"][0].content == "one" and first.values["messages"][1].content


def tasklist_agent(open_agent: Any, tmp_path: Path) -> tuple[ChatAgent, Any, str]:
    model = scripted(plan("Set up CI", "Add linting"), done("CI green"), done("lint on"))
    model.structured += [PASSED, summary("CI and linting are in place.")]
    agent = open_agent(model, **keeping(tmp_path, "all"))
    cid, _ = start(agent)
    result = agent.resume({"action": "approve"}, session_id="s1", conversation_id=cid)
    assert result.status == "completed"
    return agent, model, cid


def planned_checkpoint(agent: ChatAgent, cid: str) -> Any:
    """The run thread's checkpoint where the plan waited for its review."""
    history = list(agent.graph.get_state_history(run_config(agent, cid)))
    return next(state for state in history if state.next == ("tasklist",) and state.interrupts)


def test_replay_from_the_plan_checkpoint(open_agent: Any, tmp_path: Path) -> None:
    agent, model, cid = tasklist_agent(open_agent, tmp_path)
    stored = texts(agent, cid)
    calls = len(model.structured_calls)
    planned = planned_checkpoint(agent, cid)
    before = {
        s.config["configurable"]["checkpoint_id"]
        for s in agent.graph.get_state_history(run_config(agent, cid))
    }
    context = Context(session_id="s1", conversation_id=cid, upkeep="deferred")
    output = agent.graph.invoke(
        Command(resume={"action": "approve"}), planned.config, context=context
    )
    assert output["status"] == "completed"
    assert output["answer"].startswith("### Outcome\nCompleted: CI and linting are in place.")
    # the replay reused the recorded steps: no model call, the memory written once
    assert len(model.structured_calls) == calls
    assert texts(agent, cid) == stored
    after = list(agent.graph.get_state_history(run_config(agent, cid)))
    new_branch = [s for s in after if s.config["configurable"]["checkpoint_id"] not in before]
    assert new_branch and new_branch[0].next == ()
    assert before <= {s.config["configurable"]["checkpoint_id"] for s in after}


def test_update_state_forks_a_task_list_from_its_plan(open_agent: Any, tmp_path: Path) -> None:
    agent, _, cid = tasklist_agent(open_agent, tmp_path)
    planned = planned_checkpoint(agent, cid)
    latest = agent.graph.get_state(planned.config, subgraphs=True).tasks[0].state
    assert isinstance(latest, StateSnapshot)
    namespace = {key: latest.config["configurable"][key] for key in ("thread_id", "checkpoint_ns")}
    tasklist = next(
        state
        for state in agent.graph.get_state_history({"configurable": namespace})
        if state.next == ("review_strategy",)
    )
    tasks = tasklist.values["tasks"]
    assert [task["title"] for task in tasks] == ["Set up CI", "Add linting"]

    # the task list's routers are async: Studio and the server call `aupdate_state`
    fork = asyncio.run(agent.graph.aupdate_state(tasklist.config, {"tasks": tasks[1:]}))
    forked = agent.graph.get_state(fork)
    # the fork starts from the plan's state, with only the update changed
    assert [task["title"] for task in forked.values["tasks"]] == ["Add linting"]
    assert forked.values["user_text"] == tasklist.values["user_text"]
    assert {k: v for k, v in forked.values.items() if k != "tasks"} == {
        k: v for k, v in tasklist.values.items() if k != "tasks"
    }
    assert forked.next == ("review_strategy",)
    assert forked.parent_config is not None
    assert (
        forked.parent_config["configurable"]["checkpoint_id"]
        == (tasklist.config["configurable"]["checkpoint_id"])
    )
    # the original plan is still there to fork again
    again = agent.graph.get_state(tasklist.config)
    assert [task["title"] for task in again.values["tasks"]] == ["Set up CI", "Add linting"]
