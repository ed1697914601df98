"""Compression fidelity on the real memory path, the offline model compacting.

Ten planted facts, then filler turns: each turn is answered by the offline model from
`build_context`, stored with `ConversationMemory.write_turn` and compacted with the
offline model on SQLite (`bench.fidelity_bench` runs the same scenarios and prints
the figures).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.offline.digest import Digest, quoted_sides
from agent.offline.salience import features, salience, sentences
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


def test_with_a_new_fact_every_turn_the_bound_holds_and_the_most_salient_stay(
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

    digest = Digest()
    digest.read(state.summary)
    assert digest.dropped > 0  # it had to drop, and says so
    kept = {text for line in state.summary.splitlines() for _, text in quoted_sides(line) or []}
    recent = {message.text for message in state.messages}
    salient = [s for text in said if text not in recent for s in sentences(text) if features(s)]
    dropped = [s for s in salient if s not in kept]
    assert dropped
    # every fact kept ranks at least as high as every salient sentence dropped
    assert min(salience(s, by_user=True) for s in kept) >= max(
        salience(s, by_user=True) for s in dropped
    )
    # and of equally salient facts, the newer stay
    tickets = [i for i in range(0, 100, 2) if contentful_filler(i) not in recent]
    kept_tickets = [i for i in tickets if contentful_filler(i) in kept]
    assert kept_tickets and kept_tickets == tickets[-len(kept_tickets) :]
