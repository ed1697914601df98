"""ThreadState, ChatThreadMessage, id validation and the limits."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from memory import limits
from memory.errors import InvalidInput
from memory.schema import ChatThreadMessage, ThreadState, require_text, validate_id

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def message(**overrides: object) -> dict[str, object]:
    return {"id": "m1", "role": "user", "text": "hello", "created_at": NOW, **overrides}


def test_limits_match_the_design() -> None:
    assert limits.MAX_RECENT_MESSAGES == 8
    assert limits.COMPACTION_KEEP_MESSAGES == 4
    assert limits.MAX_SUMMARY_CHARS == 2500
    assert limits.MAX_PINNED_DECISIONS == 20
    assert limits.MAX_PINNED_DECISION_CHARS == 300
    assert limits.DELIVERY_REPORT_MAX_CHARS == 8000
    assert limits.MAX_CONVERSATIONS == 10
    assert limits.SUMMARY_PREVIEW_CHARS == 240
    assert limits.HARD_MESSAGE_CAP == 16


def test_message_has_exactly_four_fields() -> None:
    assert set(ChatThreadMessage.model_fields) == {"id", "role", "text", "created_at"}
    assert set(ThreadState.model_fields) == {
        "messages",
        "summary",
        "pinned_decisions",
        "open_questions",
        "summary_version",
        "covered_until",
        "last_compacted_at",
        "version",
        "upkeep",
        "upkeep_owed",
        "embedding_owed",
    }


def test_message_text_is_stripped() -> None:
    assert ChatThreadMessage.model_validate(message(text="  hi \n")).text == "hi"


@pytest.mark.parametrize(
    "overrides",
    [
        {"role": "tool"},
        {"role": "system"},
        {"text": ""},
        {"text": "   \n"},
        {"text": 42},
        {"text": None},
        {"source": "tool"},
        {"turnId": "t1"},
        {"id": "bad id"},
        {"id": ""},
        {"created_at": datetime(2026, 1, 1)},  # naive timestamps are ambiguous
    ],
)
def test_message_rejects_bad_fields(overrides: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ChatThreadMessage.model_validate(message(**overrides))


def test_thread_state_rejects_extra_fields_and_overflows() -> None:
    with pytest.raises(ValidationError):
        ThreadState.model_validate({"messages": [], "graphState": {}})
    with pytest.raises(ValidationError):
        ThreadState(summary="x" * (limits.MAX_SUMMARY_CHARS + 1))
    with pytest.raises(ValidationError):
        ThreadState(pinned_decisions=["p"] * (limits.MAX_PINNED_DECISIONS + 1))
    with pytest.raises(ValidationError):
        ThreadState(pinned_decisions=["p" * (limits.MAX_PINNED_DECISION_CHARS + 1)])
    too_many = [ChatThreadMessage.model_validate(message(id=f"m{i}")) for i in range(17)]
    with pytest.raises(ValidationError):
        ThreadState(messages=too_many)


def test_document_round_trip_is_plain_json() -> None:
    state = ThreadState(
        messages=[ChatThreadMessage.model_validate(message())],
        summary="s",
        pinned_decisions=["p"],
        last_compacted_at=NOW,
        version=3,
    )
    document = state.to_document()
    assert document["messages"][0]["created_at"] == "2026-01-01T00:00:00Z"
    assert ThreadState.from_document(document) == state
    with pytest.raises(InvalidInput):
        ThreadState.from_document({"messages": "nope"})


@pytest.mark.parametrize("bad", ["", "a" * 121, "has space", "semi;colon", "ü", "a/b", 7, None])
def test_invalid_ids_are_rejected(bad: object) -> None:
    with pytest.raises(InvalidInput, match="1-120 characters"):
        validate_id(bad, "conversation id")


@given(st.from_regex(r"[A-Za-z0-9_-]{1,120}", fullmatch=True))
def test_valid_ids_pass(value: str) -> None:
    assert validate_id(value) == value


def test_require_text_rejects_non_strings() -> None:
    with pytest.raises(InvalidInput, match="must be a string, got int"):
        require_text(5, "message")
    assert require_text("  x ") == "x"


@pytest.mark.parametrize("keep", [0, 3, 8, 10, -2, True])
def test_keep_must_be_even_and_below_the_limit(keep: int) -> None:
    with pytest.raises(ValueError, match="compaction keep"):
        limits.validate_keep(keep)


def test_keep_accepts_even_values_below_eight() -> None:
    assert [limits.validate_keep(k) for k in (2, 4, 6)] == [2, 4, 6]
