"""What the terminal chat says after a turn: the memory upkeep's lines as they arrive
(before the prompt comes back, or with the next command when the upkeep outlasts the
wait), and a rejected plan in one line that says what was kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent
from agent.cli import upkeep
from agent.offline import OfflineChatModel
from agent.settings import Settings
from tests.unit.cli_support import FakeBackend, chat, done

REMEMBERED = {"event": "memory", "stage": "remember", "status": "succeeded", "remembered": 1}
UPKEEP_DONE = {"event": "memory", "stage": "upkeep", "status": "done"}
TURN = {"event": "conversation", "conversationId": "c1"}


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[ChatAgent]:
    with ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
        model=OfflineChatModel(),
        secret="s" * 40,
        settings=Settings(data_dir=tmp_path / "data"),
    ) as opened:
        yield opened


def test_the_upkeeps_lines_print_before_the_prompt_comes_back(agent: ChatAgent) -> None:
    out, err, _ = chat(agent, "Remember that I am vegetarian.", "/list")
    turn, listing = out.split("> /list\n")
    assert turn.rstrip().endswith("[long-term memory: remembered 1]")
    assert "long-term memory" not in listing and "upkeep" not in out
    assert err == ""


def test_an_upkeep_that_outlasts_the_wait_says_so_and_prints_with_the_next_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(upkeep, "UPKEEP_WAIT", 0.05)
    slow: list[dict[str, Any] | float] = [TURN, done(route="chat", text="Noted.")]
    slow += [0.5, REMEMBERED, UPKEEP_DONE]  # the upkeep's lines come half a second later
    out, err, _ = chat(FakeBackend(slow), "I am vegetarian.", "/list")
    turn, listing = out.split("> /list\n")
    assert turn.rstrip().endswith(upkeep.UPKEEP_LATER)
    assert listing.startswith("[long-term memory: remembered 1]\nconversations (2 of 10):")
    assert err == ""


def test_a_rejected_plan_says_so_in_one_line(agent: ChatAgent) -> None:
    out, err, _ = chat(
        agent, "hello", "/tasklist Set up CI. Add linting.", "reject too vague", "/list"
    )
    after = out.split("> reject too vague\n")[1].split("> /list")[0].splitlines()
    assert after == [
        "The plan was rejected: too vague. Nothing was run.",
        "[plan rejected: nothing was run, and nothing of it was kept]",
    ]
    assert err == ""
    (entry,) = agent.conversations(session_id="s1")["conversations"]
    texts = [
        m["text"] for m in agent.hydrate(session_id="s1", conversation_id=entry["id"])["messages"]
    ]
    assert texts[0] == "hello" and len(texts) == 2  # nothing of the plan was kept


def test_a_rejected_plan_that_memory_noted_says_so() -> None:
    rejected = [
        TURN,
        {"event": "memory", "stage": "write", "status": "succeeded"},
        done(route="tasklist", text="Rejected.", status="cancelled", memoryWritten=True),
    ]
    out, _, _ = chat(FakeBackend(rejected), "/tasklist go")
    assert out.splitlines()[-2:] == [
        "Rejected.",
        "[plan rejected: nothing was run; memory keeps a note of it]",
    ]
