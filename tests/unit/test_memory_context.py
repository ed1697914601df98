"""The context builder: order, blocks, and nothing but server-side memory."""

from __future__ import annotations

from datetime import UTC, datetime

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from memory.context import PINNED_BLOCK_ID, SUMMARY_BLOCK_ID
from memory.schema import ChatThreadMessage, ThreadState
from tests.context_support import build_context

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def state() -> ThreadState:
    return ThreadState(
        messages=[
            ChatThreadMessage(id="u1", role="user", text="first question", created_at=NOW),
            ChatThreadMessage(id="a1", role="assistant", text="first answer", created_at=NOW),
        ],
        summary="They discussed budgets.",
        pinned_decisions=["Use PostgreSQL.", "Never email customers."],
    )


def test_order_is_system_pins_summary_recent_latest() -> None:
    context = build_context(state(), "next question", system_prompt="You are helpful.")
    assert [type(m) for m in context] == [
        SystemMessage,
        SystemMessage,
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert context[0].content == "You are helpful."
    assert context[1].id == PINNED_BLOCK_ID
    assert "1. Use PostgreSQL.\n2. Never email customers." in context[1].text
    assert context[2].id == SUMMARY_BLOCK_ID
    assert context[2].text.endswith("They discussed budgets.")
    assert [m.text for m in context[3:]] == ["first question", "first answer", "next question"]
    assert [m.id for m in context[3:5]] == ["u1", "a1"]


def test_empty_blocks_are_omitted() -> None:
    context = build_context(ThreadState(), "hello", system_prompt="sys")
    assert [(type(m), m.text) for m in context] == [(SystemMessage, "sys"), (HumanMessage, "hello")]
    assert build_context(ThreadState(), "hello") == [HumanMessage(content="hello")]


def test_latest_input_can_be_left_to_the_caller() -> None:
    context = build_context(state(), None)
    assert isinstance(context[-1], AIMessage)
