"""The context budget: every route's context fits, what must stay stays, memory is untouched."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately

from agent import ChatAgent, InvalidRequest
from agent.errors import MessageTooLong
from agent.offline import OfflineChatModel
from agent.settings import Settings
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.state import Mode
from memory import ThreadState
from memory.context import (
    CLIP_MARKER,
    LONG_TERM_BLOCK_ID,
    PINNED_BLOCK_ID,
    SUMMARY_BLOCK_ID,
    ContextBudget,
)
from memory.longterm import MemoryItem, MemoryKind
from memory.longterm.items import normalise
from memory.schema import ChatThreadMessage
from tests.context_support import build_context, overwrite_memory
from tests.fakes import ScriptedModel

pytestmark = pytest.mark.sqlite_only

NOW = datetime(2026, 11, 30, tzinfo=UTC)
LONG = 16_000
BUDGET = 8_000
PINS = ["We use PostgreSQL.", "Never deploy on Fridays."]


def long_text(n: int) -> str:
    return (f"message {n} begins. " + "lorem ipsum dolor sit amet " * 700)[
        : LONG - 20
    ] + f" {n} ends."


def heavy_state() -> ThreadState:
    messages = [
        ChatThreadMessage(
            id=f"m{n}",
            role="user" if n % 2 == 0 else "assistant",
            text=long_text(n),
            created_at=NOW,
        )
        for n in range(8)
    ]
    return ThreadState(messages=messages, summary="The user plans a launch.", pinned_decisions=PINS)


def item(text: str, kind: MemoryKind = "preference") -> MemoryItem:
    return MemoryItem(
        id=f"m_{abs(hash(text)) % 10**8}",
        kind=kind,
        text=text,
        importance=3,
        created_at=NOW,
        updated_at=NOW,
        key=normalise(text),
    )


def ids(context: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in context]


def test_a_context_that_fits_is_left_as_it_is() -> None:
    state = heavy_state().model_copy(update={"messages": heavy_state().messages[:1]})
    budget = ContextBudget(BUDGET)
    assert build_context(state, "hi", system_prompt="sys", budget=budget) == build_context(
        state, "hi", system_prompt="sys"
    )


def test_an_overfull_memory_is_fitted_and_memory_is_untouched() -> None:
    state = heavy_state()
    before = state.model_dump()
    budget = ContextBudget(BUDGET)
    items = [item("I prefer short answers"), item("I like tea")]
    latest = "x" * 12_000
    full = build_context(state, latest, system_prompt=AGENT_SYSTEM_PROMPT, long_term=items)
    fitted = build_context(
        state, latest, system_prompt=AGENT_SYSTEM_PROMPT, long_term=items, budget=budget
    )
    assert count_tokens_approximately(full) > 4 * BUDGET
    assert count_tokens_approximately(fitted) <= BUDGET
    # what always stays: the system prompt, the pins, the whole new input
    assert fitted[0] == SystemMessage(content=AGENT_SYSTEM_PROMPT)
    assert PINNED_BLOCK_ID in ids(fitted)
    assert fitted[-1] == HumanMessage(content=latest)
    # recent messages were clipped (head, marker, tail), the oldest left out first
    recent = [m for m in fitted if not isinstance(m, SystemMessage)][:-1]
    assert recent and recent[0].id is not None and recent[0].text.startswith("message ")
    assert all("characters left out" in m.text for m in recent)
    assert [m.id for m in recent] == [f"m{n}" for n in range(8 - len(recent), 8)]
    assert state.model_dump() == before  # memory keeps all eight messages, whole


def test_long_term_items_go_before_the_summary_and_pins_never() -> None:
    state = heavy_state().model_copy(update={"messages": []})
    items = [item(f"I like topic {n} " + "very much " * 20) for n in range(8)]
    budget = ContextBudget(4_000)
    # an input that leaves room for about three of the eight items
    base = count_tokens_approximately(build_context(state, "", system_prompt="sys"))
    latest = "y" * ((budget.tokens - base - 150) * 4)
    fitted = build_context(state, latest, system_prompt="sys", long_term=items, budget=budget)
    assert count_tokens_approximately(fitted) <= budget.tokens
    assert PINNED_BLOCK_ID in ids(fitted) and SUMMARY_BLOCK_ID in ids(fitted)
    block = next((m.text for m in fitted if m.id == LONG_TERM_BLOCK_ID), "")
    kept = [n for n in range(8) if f"topic {n} " in block]
    assert kept == list(range(len(kept))) and 0 < len(kept) < 8  # lowest ranked out first


def test_clip_keeps_head_and_tail() -> None:
    from memory.context import clip

    message = HumanMessage(content="HEAD" + "-" * 5000 + "TAIL", id="u1")
    clipped = clip(message, 1000)
    assert clipped.id == "u1" and clipped.text.startswith("HEAD") and clipped.text.endswith("TAIL")
    assert CLIP_MARKER.format(count=5008 - 1000) in clipped.text


@pytest.fixture
def budget_agent(
    open_agent: Callable[..., ChatAgent], tmp_path: Any
) -> tuple[ChatAgent, OfflineChatModel]:
    model = OfflineChatModel(record=True)
    settings = Settings(data_dir=tmp_path / "data", context_budget_tokens=BUDGET)
    # compaction always fails: memory keeps every message verbatim, to be checked after
    agent = open_agent(model, compaction_model=ScriptedModel(), settings=settings)
    return agent, model


@pytest.mark.parametrize(
    ("message", "mode"),
    [
        ("And now? " + "z" * 9_000, "chat"),
        ("what is 6*7?", "tool"),
        ("Plan the launch. Write the notes.", "tasklist"),
        ("Write a short launch report.", "delivery"),
    ],
)
def test_every_routes_context_fits_the_budget(
    budget_agent: tuple[ChatAgent, OfflineChatModel], message: str, mode: Mode
) -> None:
    agent, model = budget_agent
    cid = agent.send("hello", session_id="s", create_conversation=True).conversation_id
    agent.wait_for_upkeep()  # its upkeep would commit between the overwrite and this turn
    overwrite_memory(agent.memory, "s", cid, heavy_state())
    model.received.clear()
    result = agent.send(message, session_id="s", conversation_id=cid, mode=mode)
    assert result.status in ("completed", "interrupted", "blocked")
    assert model.calls
    for request in model.calls:
        assert count_tokens_approximately(request) <= BUDGET
    if mode in ("chat", "tool"):
        first = model.calls[0]
        assert first[0] == SystemMessage(content=AGENT_SYSTEM_PROMPT)
        assert PINNED_BLOCK_ID in ids(first)
        assert first[-1].text == message  # the new input, whole
        after = agent.memory.read_memory("s", cid)
        assert [m.text for m in after.messages[:8]] == [long_text(n) for n in range(8)]


def test_a_message_that_cannot_fit_is_refused_before_anything_is_stored(
    open_agent: Callable[..., ChatAgent], tmp_path: Any
) -> None:
    settings = Settings(data_dir=tmp_path / "data", context_budget_tokens=4_000)
    agent = open_agent(OfflineChatModel(), settings=settings)
    with pytest.raises(MessageTooLong, match="too long for the model's context"):
        agent.send("w" * 10_000, session_id="s", create_conversation=True)
    assert agent.conversations(session_id="s")["conversations"] == []
    assert isinstance(MessageTooLong("x"), InvalidRequest)
