"""A small offline subset of the memory evaluation, as a regression guard: no leakage,
deletion at once, and hit-rate / wrong-injection floors set from the measured figures."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, get_buffer_string

from agent.offline import OfflineChatModel
from agent.offline.summaries import summary_answer, summary_request
from evals.report import markdown, totals
from evals.runner import evaluate
from evals.scenario import Fact, Scenario, load_all

SUBSET = (
    "forget_steps",
    "preference_across_conversations",
    "secrets_stay_put",
    "two_users_similar",
)
HIT_FLOOR = 0.95
"""Measured: 96% (one probe of forget_steps shares no word with the fact it needs)."""
WRONG_CEILING = 0.0


@pytest.fixture(scope="module")
def scenarios() -> list[Scenario]:
    chosen = [s for s in load_all() if s.name in SUBSET]
    assert [s.name for s in chosen] == list(SUBSET)
    return chosen


def test_this_agent_never_leaks_and_forgets_at_once(
    scenarios: list[Scenario], tmp_path: Path
) -> None:
    outcomes = evaluate(scenarios, ["ours", "summarization"], OfflineChatModel, tmp_path,
                        progress=False)  # fmt: skip
    ours, peer = totals(outcomes)
    assert ours.system == "ours" and ours.leaks == 0
    assert ours.deletions_never == 0 and ours.deletion_turns == 0
    assert ours.hit_rate is not None and ours.hit_rate >= HIT_FLOOR
    assert ours.wrong_rate is not None and ours.wrong_rate <= WRONG_CEILING
    assert peer.leaks == 0
    table = markdown(outcomes)
    assert table.splitlines()[2].startswith("| ours | 96% | 0% |")


def test_facts_match_any_alternative_case_insensitively() -> None:
    fact = Fact.model_validate({"any": ["PostgreSQL 15", "pg15"], "why": "revoked"})
    assert fact.found_in("we run postgresql 15 here") and fact.found_in("PG15")
    assert not fact.found_in("PostgreSQL 16")
    assert Fact.model_validate("vegetarian").any == ["vegetarian"]


def test_the_offline_model_answers_summarization_requests_with_a_digest() -> None:
    history = [
        HumanMessage("Our database is PostgreSQL 15."),
        AIMessage("Noted."),
        HumanMessage("Thanks, that helps."),
    ]
    body = get_buffer_string(history, format="xml")
    prompt = f"Summarise.\n<messages>\nMessages to summarize:\n{body}\n</messages>"
    parsed = summary_request([HumanMessage(prompt)])
    assert parsed == [
        ("user", "Our database is PostgreSQL 15."),
        ("assistant", "Noted."),
        ("user", "Thanks, that helps."),
    ]
    answer = summary_answer(parsed)
    assert "PostgreSQL 15" in answer and "Thanks, that helps" not in answer
    assert OfflineChatModel().invoke(prompt).text == answer
    assert summary_request([HumanMessage("hello")]) is None
