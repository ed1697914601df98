"""A turn's final text (`graphs.turn.final_turn`) and the write rules: statuses, empty
text, de-duplication, truncation."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from graphs.state import AgentState
from graphs.turn import final_turn
from memory.errors import InvalidInput
from memory.limits import DELIVERY_REPORT_MAX_CHARS
from memory.schema import ChatThreadMessage, ThreadState
from memory.turns import (
    FinalTurn,
    Route,
    SkipReason,
    TurnStatus,
    chat_turn,
    plan_turn_write,
    truncate_report,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)
EMPTY = ThreadState()


def stored(*pairs: tuple[str, str]) -> ThreadState:
    messages = []
    for index, (user, assistant) in enumerate(pairs):
        messages.append(ChatThreadMessage(id=f"u{index}", role="user", text=user, created_at=NOW))
        messages.append(
            ChatThreadMessage(id=f"a{index}", role="assistant", text=assistant, created_at=NOW)
        )
    return ThreadState(messages=messages)


@pytest.mark.parametrize("status", [TurnStatus.COMPLETED, TurnStatus.BLOCKED])
def test_written_statuses(status: TurnStatus) -> None:
    plan = plan_turn_write(EMPTY, chat_turn("hi", "hello", status), NOW)
    assert plan.skipped is None
    assert [(m.role, m.text) for m in plan.messages] == [("user", "hi"), ("assistant", "hello")]


@pytest.mark.parametrize("status", [TurnStatus.FAILED, TurnStatus.CANCELLED])
def test_statuses_that_never_write(status: TurnStatus) -> None:
    plan = plan_turn_write(EMPTY, chat_turn("hi", "hello", status), NOW)
    assert plan == plan.__class__(skipped=SkipReason.STATUS)


@pytest.mark.parametrize(("user", "assistant"), [("", "a"), ("u", ""), ("  \n", "a"), ("u", "\t ")])
def test_empty_text_on_either_side_writes_nothing(user: str, assistant: str) -> None:
    assert plan_turn_write(EMPTY, chat_turn(user, assistant), NOW).skipped is SkipReason.EMPTY


def test_texts_are_stripped() -> None:
    plan = plan_turn_write(EMPTY, chat_turn("  hi  ", "\nhello\n"), NOW)
    assert [m.text for m in plan.messages] == ["hi", "hello"]


def test_duplicate_message_id_is_not_appended_again() -> None:
    state = stored(("hi", "hello"))
    again = chat_turn("hi", "hello", user_message_id="u0", assistant_message_id="a0")
    assert plan_turn_write(state, again, NOW).skipped is SkipReason.DUPLICATE_ID
    partial = chat_turn("other", "text", assistant_message_id="a0")
    assert plan_turn_write(state, partial, NOW).skipped is SkipReason.DUPLICATE_ID


def test_identical_last_pair_without_ids_is_skipped() -> None:
    state = stored(("hi", "hello"))
    assert (
        plan_turn_write(state, chat_turn("hi", "hello"), NOW).skipped is SkipReason.DUPLICATE_PAIR
    )
    # an earlier identical pair is not the last pair: the user repeated themselves
    state = stored(("hi", "hello"), ("more", "sure"))
    assert plan_turn_write(state, chat_turn("hi", "hello"), NOW).skipped is None


def test_identical_text_with_new_stable_ids_is_a_new_turn() -> None:
    state = stored(("hi", "hello"))
    turn = chat_turn("hi", "hello", user_message_id="u9", assistant_message_id="a9")
    plan = plan_turn_write(state, turn, NOW)
    assert [m.id for m in plan.messages] == ["u9", "a9"]


def turn_of(route: str, messages: Sequence[AnyMessage] = (), **state: str) -> FinalTurn:
    """What `finalize` would write of a run state."""
    values: dict[str, Any] = {"route": route, "turn_messages": [*messages], "turn_id": "t1"}
    return final_turn(cast(AgentState, values | state))


def test_a_tool_request_is_no_answer() -> None:
    request = AIMessage(content="", tool_calls=[{"name": "calc", "args": {}, "id": "c1"}])
    turn = turn_of("chat", [HumanMessage("hi"), request], user_text="hi")
    assert (turn.assistant_text, turn.status) == ("", TurnStatus.FAILED)
    said = AIMessage(content=[{"type": "text", "text": "ok"}])
    turn = turn_of("chat", [HumanMessage("hi"), said], user_text="hi")
    assert (turn.route, turn.assistant_text, turn.status) == (
        Route.CHAT,
        "ok",
        TurnStatus.COMPLETED,
    )
    assert (turn.user_message_id, turn.assistant_message_id) == ("t1-u", "t1-a")


def test_a_tool_turn_keeps_only_the_final_answer() -> None:
    messages: list[AnyMessage] = [
        HumanMessage(content="what is 2+2"),
        AIMessage(
            content="", tool_calls=[{"name": "calculator", "args": {"e": "2+2"}, "id": "c1"}]
        ),
        ToolMessage(content="TOOL-RESULT-4", tool_call_id="c1"),
        AIMessage(content="2+2 = 4"),
    ]
    # a chat turn that ran a tool is a tool turn
    turn = turn_of("chat", messages, user_text="what is 2+2")
    assert (turn.route, turn.user_text, turn.assistant_text) == (
        Route.TOOL,
        "what is 2+2",
        "2+2 = 4",
    )
    assert "TOOL-RESULT" not in turn.assistant_text
    unfinished = turn_of("tool", messages[:3], user_text="what is 2+2")
    assert plan_turn_write(EMPTY, unfinished, NOW).skipped is SkipReason.STATUS


def test_a_task_list_writes_its_goal_and_summary_only() -> None:
    turn = turn_of(
        "tasklist",
        user_text="plan my trip",
        workflow_text="## Outcome\nDone.",
        workflow_status="blocked",
    )
    assert (turn.route, turn.status, turn.user_text, turn.assistant_text) == (
        Route.TASKLIST,
        TurnStatus.BLOCKED,
        "plan my trip",
        "## Outcome\nDone.",
    )
    rejected = turn_of("tasklist", user_text="x", workflow_text="no", workflow_status="rejected")
    assert rejected.status is TurnStatus.CANCELLED


def test_a_delivery_report_is_truncated_for_memory() -> None:
    report = "HEAD " + "x" * 20_000
    turn = turn_of("delivery", user_text="build it", workflow_text=report)
    assert turn.status is TurnStatus.FAILED  # no workflow status: it never finished
    assert len(turn.assistant_text) <= DELIVERY_REPORT_MAX_CHARS
    assert turn.assistant_text.startswith("HEAD xxx")
    assert turn.assistant_text.splitlines()[-1].startswith("[Report truncated:")


def test_truncation_keeps_head_and_ends_with_marker_within_limit() -> None:
    report = "".join(f"line {i}\n" for i in range(3000))  # ~26k characters
    cut = truncate_report(report)
    assert len(cut) <= DELIVERY_REPORT_MAX_CHARS
    body, marker = cut.rsplit("\n", 1)
    assert report.startswith(body)
    assert (
        marker == f"[Report truncated: {len(body):,} of {len(report):,} characters kept in memory.]"
    )
    assert len(body) > DELIVERY_REPORT_MAX_CHARS - 100


def test_reports_within_the_limit_are_untouched() -> None:
    exact = "y" * DELIVERY_REPORT_MAX_CHARS
    assert truncate_report(exact) == exact
    assert truncate_report("short") == "short"


@given(st.text(min_size=0, max_size=12_000))
def test_truncation_property(report: str) -> None:
    cut = truncate_report(report)
    assert len(cut) <= DELIVERY_REPORT_MAX_CHARS
    if len(report) <= DELIVERY_REPORT_MAX_CHARS:
        assert cut == report
    else:
        assert report.startswith(cut.rsplit("\n", 1)[0])


def test_bad_turn_input_is_rejected() -> None:
    with pytest.raises(InvalidInput, match="user text must be a string"):
        FinalTurn(route=Route.CHAT, status=TurnStatus.COMPLETED, user_text=3, assistant_text="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'shell'"):
        FinalTurn(route="shell", status="completed", user_text="u", assistant_text="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'done'"):
        chat_turn("u", "a", "done")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="1-120"):
        chat_turn("u", "a", user_message_id="no spaces allowed")
