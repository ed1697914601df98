"""Batched extraction: a model extraction waits for its batch (four owed turns, a
compaction folding one, the conversation idle, another conversation's turn, `wait`,
`close`), explicit requests are applied at once, and owed turns are never given up;
on both backends."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from agent import ChatAgent
from agent.settings import Settings
from memory.limits import MAX_OWED_IN_ONE_CALL
from memory.longterm import ExtractionOutput
from tests.conftest import SECRET
from tests.fakes import ScriptedModel

WAIT = 30.0


def settings(tmp_path: Path, **options: Any) -> Settings:
    return Settings(data_dir=tmp_path / "data", **options)


def extractions(model: ScriptedModel) -> list[list[str]]:
    """The user texts of each extraction call the model was sent."""
    calls = [c for c in model.structured_calls if c["schema"] is ExtractionOutput]
    return [
        [turn["user"] for turn in json.loads(str(c["messages"][-1].content))["turns"]]
        for c in calls
    ]


def nothing(_: list[BaseMessage]) -> ExtractionOutput:
    return ExtractionOutput(operations=[])


def send(agent: ChatAgent, text: str, cid: str | None = None, session: str = "s") -> str:
    where: dict[str, Any] = (
        {"conversation_id": cid} if cid is not None else {"create_conversation": True}
    )
    result = agent.send(text, session_id=session, **where)
    assert agent.upkeep.wait(WAIT, flush=False)  # the turn's own upkeep, nothing flushed
    return result.conversation_id


def test_owed_turns_wait_for_a_batch_of_four_in_one_call(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    model = ScriptedModel(replies=["ok"] * 8, structured=[nothing] * 4)
    agent = open_agent(model, long_term_memory="model", settings=settings(tmp_path))
    cid = send(agent, "I have a dog named Rex.")
    send(agent, "I work nights.", cid)
    send(agent, "I live in Porto.", cid)
    assert extractions(model) == []
    assert agent.hydrate(session_id="s", conversation_id=cid)["upkeep"] == "done"
    send(agent, "I play chess.", cid)
    assert extractions(model) == [
        ["I have a dog named Rex.", "I work nights.", "I live in Porto.", "I play chess."]
    ]


def test_a_conversation_idle_for_the_set_seconds_is_extracted(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    model = ScriptedModel(replies=["ok"], structured=[nothing])
    options = settings(tmp_path, extraction_idle_seconds=0.2)
    agent = open_agent(model, long_term_memory="model", settings=options)
    send(agent, "I have a dog named Rex.")
    deadline = time.monotonic() + WAIT
    while not extractions(model) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert agent.upkeep.wait(WAIT, flush=False)
    assert extractions(model) == [["I have a dog named Rex."]]


def test_a_turn_in_another_conversation_starts_the_owed_batch_beside_it(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    model = ScriptedModel(replies=["ok"] * 2, structured=[nothing] * 2)
    agent = open_agent(model, long_term_memory="model", settings=settings(tmp_path))
    send(agent, "I have a dog named Rex.")
    assert extractions(model) == []
    send(agent, "What is my dog called?")  # a new conversation of the same user
    assert extractions(model) == [["I have a dog named Rex."]]  # its own turn still waits


def test_an_explicit_request_is_applied_in_its_turns_upkeep_without_a_model_call(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    model = ScriptedModel(replies=["ok"], structured=[nothing])
    agent = open_agent(model, long_term_memory="model", settings=settings(tmp_path))
    send(agent, "Remember that I am vegetarian.")
    texts = [m["text"] for m in agent.memories(session_id="s")["memories"]]
    assert texts and "vegetarian" in texts[0]
    assert extractions(model) == []
    assert agent.wait_for_upkeep(WAIT)  # the batch still sees the turn, and adds no twin
    assert extractions(model) == [["Remember that I am vegetarian."]]
    assert [m["text"] for m in agent.memories(session_id="s")["memories"]] == texts


def test_owed_turns_past_one_call_are_split_never_given_up(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    down = [True]

    def extract(_: list[BaseMessage]) -> ExtractionOutput:
        if down[0]:
            raise TimeoutError("the extraction model is down")
        return ExtractionOutput(operations=[])

    said = [f"I collect stamps from country {n}." for n in range(MAX_OWED_IN_ONE_CALL + 2)]
    model = ScriptedModel(replies=["ok"] * len(said), structured=[extract] * 40)
    agent = open_agent(model, long_term_memory="model", settings=settings(tmp_path))
    cid = None
    for text in said:
        cid = send(agent, text, cid)
    assert cid is not None
    failed = len(extractions(model))
    assert failed > 0  # every upkeep past the batch tried, and the turns stayed owed
    assert agent.memory.read_memory("s", cid).upkeep_owed  # still on the record
    down[0] = False
    assert agent.wait_for_upkeep(WAIT)
    paid = extractions(model)[failed:]
    assert [len(batch) for batch in paid] == [MAX_OWED_IN_ONE_CALL, 2]
    assert [text for batch in paid for text in batch] == said
    assert agent.memory.read_memory("s", cid).upkeep_owed == []


def test_turns_a_stopped_process_left_owed_are_paid_by_the_next_process(
    open_agent: Callable[..., ChatAgent], tmp_path: Path, db_url: str
) -> None:
    first = ScriptedModel(replies=["ok"] * 2, structured=[nothing])
    agent = ChatAgent(
        database_url=db_url,
        model=first,
        secret=SECRET,
        settings=settings(tmp_path),
        long_term_memory="model",
    )
    cid = send(agent, "I have a dog named Rex.")
    other = send(agent, "I live in Porto.")  # pays the first conversation's turn
    assert len(extractions(first)) == 1
    assert agent.memory.read_memory("s", other).upkeep_owed  # the debt is on record
    agent.upkeep._idle.clear()  # the process stops before its idle timer or close
    agent.close()

    model = ScriptedModel(replies=["ok"], structured=[nothing] * 2)
    agent = open_agent(model, long_term_memory="model", settings=settings(tmp_path))
    send(agent, "And what about lunch?", cid)  # the user's first turn in this process
    assert ["I live in Porto."] in extractions(model)  # the other conversation's, at once
    assert ["And what about lunch?"] not in extractions(model)  # its own waits
