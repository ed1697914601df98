"""Compression fidelity on the real memory path, the offline model compacting.

Ten planted facts, then filler turns: each turn is answered by the offline model from
`build_context`, stored with `ConversationMemory.write_turn` and compacted with the
offline model on SQLite (`bench.fidelity_bench` runs the same scenarios and prints
the figures).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.fidelity_bench import (
    CHECKPOINTS,
    ENGLISH_FACTS,
    SCENARIOS,
    SECRET,
    Conversation,
    Scenario,
    contentful_filler,
    run,
)
from memory import ThreadIds
from memory.conversations import ConversationMemory
from memory.limits import MAX_SUMMARY_CHARS
from memory.storage import open_thread_store

CONTENT_FREE = [scenario for scenario in SCENARIOS if scenario.filler is not contentful_filler]


@pytest.mark.parametrize("scenario", CONTENT_FREE, ids=lambda scenario: scenario.name)
def test_planted_facts_survive_content_free_filler(scenario: Scenario, tmp_path: Path) -> None:
    points = run(scenario, f"sqlite:///{tmp_path / 'fidelity.sqlite'}")
    assert [point.filler_turns for point in points] == list(CHECKPOINTS)
    for point in points:
        assert len(point.in_context) >= 9, point
        # in the summary and pins themselves, not only in the recent messages
        assert len(point.in_summary_or_pins) >= 9, point
        assert point.summary_chars <= MAX_SUMMARY_CHARS
    assert points[-1].summary_version > points[0].summary_version


def test_with_a_new_fact_every_turn_the_bound_holds_and_lines_with_values_stay(
    tmp_path: Path,
) -> None:
    store = open_thread_store(f"sqlite:///{tmp_path / 'fidelity.sqlite'}")
    conversation = Conversation(ConversationMemory(store, ThreadIds(SECRET)), "c1")
    said = [fact.said for fact in ENGLISH_FACTS] + [contentful_filler(i) for i in range(100)]
    try:
        for text in said:
            state = conversation.say(text)
            assert len(state.summary) <= MAX_SUMMARY_CHARS
    finally:
        store.close()

    recent = {message.text for message in state.messages}
    kept = [i for i in range(100) if json.dumps(contentful_filler(i)) in state.summary]
    tickets = [i for i in range(0, 100, 2) if contentful_filler(i) not in recent]
    kept_tickets = [i for i in kept if i % 2 == 0]
    # the bound made it drop; the newest lines holding values stay, plain lines go first
    assert kept_tickets and kept_tickets == tickets[-len(kept_tickets) :] != tickets
    assert all(i % 2 == 0 for i in kept if i < kept_tickets[0])
