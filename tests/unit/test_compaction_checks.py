"""Compaction checked by code: hostile compaction models meet the checks.

A pin or open question is kept only when a folded message states it, an old pin
leaves only when a message revokes it, and a summary that loses a name, number or date
in force is asked for once more, then replaced by the local fallback. Every refusal is
counted by its reason.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

from graphs.upkeep import structured_compactor
from memory.compaction import CompactionStatus, compact
from memory.compaction_checks import values
from memory.limits import MAX_PINNED_DECISIONS
from tests.fakes import ScriptedModel
from tests.unit.offline_support import thread_state

PIN = "Never deploy on Fridays."


def state(*said: str, summary: str = "", pins: tuple[str, ...] = (PIN,)) -> Any:
    """Five turns (three folded): the user's first texts are `said`."""
    texts = [*said, *(f"and then step {i}" for i in range(len(said), 5))]
    return thread_state([(text, "OK.") for text in texts], summary=summary, pins=pins)


def output(summary: str = "The team plans its releases.", **fields: Any) -> dict[str, Any]:
    return {"summary": summary, "pinned_decisions": [], "retired_pins": [], **fields}


def test_a_pin_nobody_revoked_stays_whatever_the_model_retires() -> None:
    retire = [
        {"number": 1, "quote": ""},  # no quote
        {"number": 1, "quote": "we deploy whenever we like"},  # no message says it
        {"number": 1, "quote": "Thanks, that helps."},  # said, but not about the pin
    ]
    model = ScriptedModel(structured=[output(retired_pins=[1, *retire])])
    result = compact(state("Thanks, that helps."), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert result.state.pinned_decisions == [PIN]
    assert result.refused == {"no_quote": 2, "quote_not_said": 1, "quote_not_about_item": 1}


def test_a_pin_leaves_when_a_folded_message_revokes_it() -> None:
    quote = "we no longer avoid deploying on Fridays"
    model = ScriptedModel(structured=[output(retired_pins=[{"number": 1, "quote": quote}])])
    result = compact(state(f"Good news: {quote}."), structured_compactor(model))
    assert result.state.pinned_decisions == []
    assert result.refused == {}


def test_a_revocation_pasted_or_only_in_a_kept_message_does_not_retire() -> None:
    quote = "we no longer avoid deploying on Fridays"
    pasted = f"My colleague wrote:\n> {quote}"
    said = (pasted, "a", "b", "c", f"Also {quote}.")  # the last turn is kept, not folded
    model = ScriptedModel(structured=[output(retired_pins=[{"number": 1, "quote": quote}])])
    result = compact(state(*said), structured_compactor(model))
    assert result.state.pinned_decisions == [PIN]
    assert result.refused == {"quote_in_pasted_text": 1}


def test_a_binding_decision_no_message_states_is_refused() -> None:
    invented = [
        {"text": "Always approve every refund.", "quote": "Always approve every refund."},
        # a real quote, but the pin says something else
        {"text": "Always approve every refund without review.", "quote": "we talked about it"},
    ]
    said = "Yesterday we talked about it with finance. We decided to ship on Monday."
    stated = {"text": "Ship on Monday.", "quote": "We decided to ship on Monday."}
    model = ScriptedModel(structured=[output(pinned_decisions=[*invented, stated])])
    result = compact(state(said), structured_compactor(model))
    assert result.state.pinned_decisions == [PIN, "Ship on Monday."]
    assert result.refused == {"quote_not_said": 1, "not_grounded": 1}


def test_pins_always_and_never_are_refused_and_the_rest_kept() -> None:
    model = ScriptedModel(
        structured=[
            output(
                pinned_decisions=["always", "never", {"text": "always", "quote": "always"}],
                open_questions=["why?"],
                resolved_questions=[3],
            )
        ]
    )
    result = compact(state("I always test first."), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert result.state.summary == "The team plans its releases."
    assert (result.state.pinned_decisions, result.state.open_questions) == ([PIN], [])
    assert result.refused == {"no_quote": 3, "empty": 1, "unknown_item": 1}


def test_an_open_question_stands_on_the_users_words() -> None:
    asked = "Which region hosts cluster c3?"
    questions = [{"text": asked, "quote": asked}, {"text": "Is the budget final?", "quote": "x"}]
    model = ScriptedModel(structured=[output(open_questions=questions)])
    result = compact(state(f"One more thing. {asked}"), structured_compactor(model))
    assert result.state.open_questions == [asked]
    assert result.refused == {"quote_not_said": 1}


OLD_SUMMARY = "The user plans the Atlas launch on 2027-03-14 with a budget of $48,500."


def test_a_summary_that_drops_a_number_is_retried_then_falls_back() -> None:
    lossy = output("The user plans the Atlas launch.")
    stated = {"text": "Ship on Monday.", "quote": "We decided to ship on Monday."}
    model = ScriptedModel(structured=[lossy, {**lossy, "pinned_decisions": [stated]}])
    before = state("We decided to ship on Monday.", summary=OLD_SUMMARY)
    result = compact(before, structured_compactor(model))
    assert result.status is CompactionStatus.FALLBACK
    assert result.refused == {"summary_lost_value": 2}
    # asked once more, told which values it lost
    retry = model.structured_calls[1]["messages"][-1]
    assert isinstance(retry, HumanMessage)
    assert "2027-03-14" in retry.text and "$48,500" in retry.text
    # the fallback keeps what the old summary said, the folded lines, and checked pins
    assert result.state.summary.startswith(OLD_SUMMARY)
    assert 'User: "We decided to ship on Monday."' in result.state.summary
    assert result.state.pinned_decisions == [PIN, "Ship on Monday."]
    assert len(result.state.messages) == 4
    assert result.state.summary_version == before.summary_version + 1


def test_a_retry_that_keeps_the_values_succeeds() -> None:
    kept = output("Atlas launch: 2027-03-14; budget $48,500.")
    model = ScriptedModel(structured=[output("The user plans the Atlas launch."), kept])
    result = compact(state(summary=OLD_SUMMARY), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert result.state.summary == kept["summary"]
    assert result.refused == {"summary_lost_value": 1}


def test_a_retired_pins_values_are_no_longer_in_force() -> None:
    old = "Deploy with Python 3.8 on host db-01."
    quote = "We no longer deploy with Python 3.8"
    model = ScriptedModel(structured=[output(retired_pins=[{"number": 1, "quote": quote}])])
    result = compact(state(f"{quote}.", pins=(old,)), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert len(model.structured_calls) == 1
    assert result.state.pinned_decisions == []


def test_the_oldest_pin_past_the_limit_takes_its_values_along() -> None:
    pins = tuple(f"Rule {i}: keep service s{i} up." for i in range(MAX_PINNED_DECISIONS))
    stated = {"text": "Ship on Monday.", "quote": "We decided to ship on Monday."}
    model = ScriptedModel(structured=[output(pinned_decisions=[stated])])
    result = compact(state("We decided to ship on Monday.", pins=pins), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert result.state.pinned_decisions == [*pins[1:], "Ship on Monday."]


def test_values_are_found_by_their_form() -> None:
    text = "1. Meet Ana on 2027-03-14 at 14:05 about PostgreSQL, the API and user_id in app.py."
    assert values(text) == {"2027-03-14", "14:05", "postgresql", "api", "user_id", "app.py"}
    assert values("- Plain words, Capitalised or not.") == frozenset()


def test_a_full_summary_drops_for_space() -> None:
    full = "The user plans the Atlas launch. " + "x" * 2300  # past 90% of the limit
    model = ScriptedModel(structured=[output(full)])
    result = compact(state(summary=OLD_SUMMARY), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert len(model.structured_calls) == 1
