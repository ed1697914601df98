"""What bounds a write: new items per turn, the session's items and its history (the
least important and oldest go first), and the extraction prompt fitting a small window."""

from __future__ import annotations

import json
from datetime import timedelta

from memory.limits import MAX_HISTORY_ITEMS, MAX_MEMORY_ITEMS, MAX_NEW_MEMORIES_PER_TURN
from memory.longterm.extraction import PROMPT_ASSISTANT_CHARS, PROMPT_ITEMS, extraction_prompt
from memory.longterm.gate import Reason
from tests.unit.longterm_support import NOW, item, modelled, op, reasons, turn


def test_thirty_proposals_at_once_keep_at_most_the_limit_per_turn() -> None:
    text = ". ".join(f"I like topic{n}" for n in range(30))
    ops = [
        op("add", f"I like topic{n}", text=f"I like topic{n}", kind="preference") for n in range(30)
    ]
    result = modelled([], [turn(text)], *ops)
    assert len(result.added) == MAX_NEW_MEMORIES_PER_TURN
    assert reasons(result) == [Reason.TURN_LIMIT] * (30 - MAX_NEW_MEMORIES_PER_TURN)


def test_past_the_session_limit_the_least_important_then_oldest_go() -> None:
    current = [
        item(f"I like topic number {n}", importance=5 if n % 2 else 3, age_days=n, item_id=f"m_{n}")
        for n in range(MAX_MEMORY_ITEMS)
    ]
    said = [turn("I prefer window seats")]
    result = modelled(
        current, said, op("add", "I prefer window seats", text="I prefer window seats")
    )
    assert len(result.added) == 1
    # the oldest of the least important (importance 3, even numbers) goes
    assert result.evicted == ("m_98",)


def test_history_keeps_its_newest_items_within_its_own_limit() -> None:
    history = [
        item(f"I lived in town {n}", kind="fact", item_id=f"h_{n}").model_copy(
            update={"invalid_at": NOW - timedelta(days=n + 1)}
        )
        for n in range(MAX_HISTORY_ITEMS)
    ]
    current = item("I live in Oslo", kind="fact", item_id="m_oslo")
    said = [turn("I moved to Bergen")]
    moved = op("update", "I moved to Bergen", id="m_oslo", text="I live in Bergen", kind="fact")
    result = modelled([*history, current], said, moved)
    assert [i.id for i in result.changed] == ["m_oslo"]
    assert result.evicted == (f"h_{MAX_HISTORY_ITEMS - 1}",)  # the longest-changed goes


def test_the_extraction_input_fits_a_small_window() -> None:
    """The items nearest the batch (with few, all), the assistant's lines cut to their end."""
    many = [item(f"I collect stamps from country {n}", item_id=f"m_{n}") for n in range(200)]
    boat = item("My boat is called Marisol", item_id="m_boat")
    said = [turn("The boat needs paint.", assistant="x" * 5000 + " What colour is it?")]
    document = json.loads(str(extraction_prompt(said, [*many, boat])[-1].content))
    shown = [shown["id"] for shown in document["current_memories"]]
    assert len(shown) == PROMPT_ITEMS and "m_boat" in shown
    before = document["turns"][0]["assistant_before"]
    assert len(before) == PROMPT_ASSISTANT_CHARS and before.endswith("What colour is it?")
    few = json.loads(str(extraction_prompt(said, many[:3])[-1].content))
    assert [shown["id"] for shown in few["current_memories"]] == ["m_0", "m_1", "m_2"]
