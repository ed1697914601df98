"""Run checkpoints hold no raw session or conversation id (their thread ids are HMACs):
the ids reach the graph through its context only, on SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from langchain_core.runnables import RunnableConfig

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.run_ids import SCRUBBED
from tests.fakes import ScriptedModel

SESSION = "session-7f3a9c2b"
TASKS = "/tasklist Set up CI. Add linting."


def checkpointed(db_url: str) -> bytes:
    """Everything the savers' tables hold (SQLite read through its WAL), as bytes."""
    rows: list[tuple[object, ...]]
    if db_url.startswith("sqlite"):
        with sqlite3.connect(db_url.removeprefix("sqlite:///")) as conn:
            rows = conn.execute("SELECT * FROM checkpoints").fetchall()
            rows += conn.execute("SELECT * FROM writes").fetchall()
    else:
        import psycopg

        with psycopg.connect(db_url) as conn:
            rows = []
            for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
                rows += conn.execute(f"SELECT * FROM {table}").fetchall()
    return b"\n".join(
        value if isinstance(value, bytes) else str(value).encode() for row in rows for value in row
    )


def test_a_finished_runs_checkpoint_holds_the_users_text_and_the_answer_once(
    open_agent: Callable[..., ChatAgent], db_url: str
) -> None:
    """`message`, `user_text` and `turn_messages` are working copies and `answer` is the
    run's output only: the run's last checkpoint keeps the user's text and the answer in
    `messages` (Studio's chat view), once each."""
    agent = open_agent(OfflineChatModel())
    text = "my zebra-quartz ledger"
    result = agent.send(text, session_id=SESSION, create_conversation=True)
    agent.wait_for_upkeep(30)
    answer = result.text  # the API's response still carries the answer
    assert answer
    config: RunnableConfig = {
        "configurable": {"thread_id": agent.memory.run_thread(SESSION, result.conversation_id)}
    }
    values = agent.graph.get_state(config).values
    assert (values["message"], values["user_text"], values["turn_messages"]) == (None, "", [])
    assert "answer" not in values
    assert [m.content for m in values["messages"]] == [text, answer]
    stored = checkpointed(db_url)
    assert (stored.count(b"zebra-quartz"), stored.count(answer.encode())) == (1, 1)


def test_run_checkpoints_hold_no_raw_ids(
    open_agent: Callable[..., ChatAgent], db_url: str, tmp_path: Path
) -> None:
    agent = open_agent(OfflineChatModel())
    chatted = agent.send("hello there", session_id=SESSION, create_conversation=True)
    paused = agent.send(TASKS, session_id=SESSION, create_conversation=True)
    assert paused.status == "interrupted"
    agent.wait_for_upkeep(30)
    stored = checkpointed(db_url)
    assert stored  # the runs were checkpointed
    for raw in (SESSION, chatted.conversation_id, paused.conversation_id):
        assert raw.encode() not in stored, raw
    if db_url.startswith("sqlite"):  # nor the file and its WAL (documents are HMAC-keyed)
        path = Path(db_url.removeprefix("sqlite:///"))
        files = [path, path.with_name(path.name + "-wal")]
        assert not any(SESSION.encode() in f.read_bytes() for f in files if f.exists())
    # the review still resumes: its ids come from the run's context again
    done = agent.resume(
        {"action": "approve"}, session_id=SESSION, conversation_id=paused.conversation_id
    )
    assert done.status == "completed" and done.conversation_id == paused.conversation_id
    assert paused.conversation_id.encode() not in checkpointed(db_url)


def as_an_earlier_release_wrote_it(agent: ChatAgent, conversation_id: str) -> None:
    """Put the raw ids back into the run thread's state, in its newest checkpoint and in
    a write of the one before, as an earlier release kept them; and no scrub recorded."""
    saver = agent.memory.threads.checkpointer
    thread = agent.memory.run_thread(SESSION, conversation_id)
    latest = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    assert latest is not None and latest.parent_config is not None
    ids = {"session_id": SESSION, "conversation_id": conversation_id}
    checkpoint = copy.deepcopy(latest.checkpoint)
    checkpoint["channel_values"].update(ids)
    versions = {channel: saver.get_next_version(None, None) for channel in ids}
    checkpoint["channel_versions"].update(versions)
    saver.put(latest.parent_config, checkpoint, latest.metadata, versions)
    saver.put_writes(latest.parent_config, list(ids.items()), task_id="load_memory-task")
    agent.memory.threads.delete(SCRUBBED)


def test_an_earlier_releases_run_threads_are_scrubbed_and_a_review_still_resumes(
    open_agent: Callable[..., ChatAgent], db_url: str
) -> None:
    first = open_agent(OfflineChatModel())
    paused = first.send(TASKS, session_id=SESSION, create_conversation=True)
    cid = paused.conversation_id
    as_an_earlier_release_wrote_it(first, cid)
    assert SESSION.encode() in checkpointed(db_url) and cid.encode() in checkpointed(db_url)
    again = open_agent(OfflineChatModel())  # its start-up scrubs
    stored = checkpointed(db_url)
    assert SESSION.encode() not in stored and cid.encode() not in stored
    assert again.pending_review(session_id=SESSION, conversation_id=cid) is not None
    done = again.resume({"action": "approve"}, session_id=SESSION, conversation_id=cid)
    assert done.status == "completed" and done.conversation_id == cid


def test_a_failed_turn_logs_no_conversation_id_in_clear(
    open_agent: Callable[..., ChatAgent], caplog: pytest.LogCaptureFixture
) -> None:
    agent = open_agent(ScriptedModel(replies=[RuntimeError("the model broke")]))
    with caplog.at_level(logging.ERROR, logger="agent.runs"):
        result = agent.send("hello", session_id=SESSION, create_conversation=True)
    assert result.status == "failed"
    logged = [record.getMessage() for record in caplog.records]
    assert any("turn failed" in line for line in logged), logged
    assert not any(result.conversation_id in line for line in logged), logged
