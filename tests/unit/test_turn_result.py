"""`TurnOutput`: a turn's result is the graph's output, as `values` and `updates` stream it."""

from __future__ import annotations

from langgraph.types import Interrupt

from agent.client_events import TurnResultDTO
from agent.errors import TURN_FAILED
from agent.turn_result import TurnOutput, TurnResult


def test_updates_after_the_last_values_are_the_output() -> None:
    output = TurnOutput()
    output.record("values", {"route": "chat", "status": "running", "answer": ""})
    output.record("updates", {"finalize": {"status": "completed", "answer": "hi"}})
    output.record("custom", {"event": "memory"})
    result = output.result("c1")
    assert (result.route, result.status, result.text) == ("chat", "completed", "hi")
    assert output.answered


def test_a_crash_after_finalize_delivers_the_answer_degraded() -> None:
    output = TurnOutput()
    output.record("updates", {"load_memory": {"route": "chat"}})
    output.record("updates", {"finalize": {"status": "completed", "answer": "hi"}})
    output.crashed = True
    result = output.result("c1")
    assert (result.status, result.text, result.degraded) == ("completed", "hi", True)


def test_a_crash_before_finalize_is_a_failed_turn() -> None:
    output = TurnOutput()
    output.record("updates", {"load_memory": {"route": "chat", "status": "running"}})
    output.crashed = True
    result = output.result("c1")
    assert (result.status, result.text, output.answered) == ("failed", TURN_FAILED, False)


def test_an_interrupt_and_langgraph_keys_in_updates() -> None:
    output = TurnOutput()
    output.record("updates", {"load_memory": {"route": "tasklist"}})
    output.record("updates", {"__interrupt__": (Interrupt(value={"goal": "g"}),)})
    output.record("updates", {"chat": [{"answer": "a"}, {"answer": "b"}], "__metadata__": {}})
    result = output.result("c1")
    assert (result.status, result.route, result.interrupt) == (
        "interrupted",
        "tasklist",
        {"goal": "g"},
    )
    assert "cached" not in output.values and output.values["answer"] == "b"


def test_the_done_event_carries_exactly_the_dto_keys_in_order() -> None:
    # to_dict derives its keys from the dataclass: a field added to TurnResult must be
    # added to TurnResultDTO too (mypy no longer sees a literal to check)
    result = TurnResult("c", "completed", "chat", "x", interrupt={"a": [1]})
    dto = result.to_dict()
    assert list(dto) == list(TurnResultDTO.__annotations__)
    assert dto["interrupt"] == {"a": [1]} and dto["interrupt"] is not result.interrupt
