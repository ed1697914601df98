"""The hydration DTO and the recursive forbidden-key guard."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memory.errors import ForbiddenKeyError
from memory.hydration import FORBIDDEN_KEYS, assert_client_safe, hydration_dto
from memory.schema import ChatThreadMessage, ThreadState

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_keys_exactly_as_designed() -> None:
    state = ThreadState(
        messages=[ChatThreadMessage(id="u1", role="user", text="hi", created_at=NOW)],
        summary="s" * 500,
        pinned_decisions=["p"],
    )
    dto = hydration_dto("c1", state)
    assert list(dto) == [
        "conversationId",
        "messages",
        "summaryPreview",
        "summary",
        "summaryVersion",
        "pinnedDecisions",
        "openQuestions",
        "upkeep",
        "restored",
    ]
    assert dto["messages"] == [
        {"id": "u1", "role": "user", "text": "hi", "createdAt": "2026-01-01T00:00:00+00:00"}
    ]
    assert len(dto["summaryPreview"]) == 240
    assert dto["summaryPreview"].endswith("…")
    assert dto["summary"] == "s" * 500
    assert dto["pinnedDecisions"] == ["p"]
    assert dto["restored"] is True
    assert dto["conversationId"] == "c1"


def test_summary_preview_absent_when_summary_empty_and_short_summary_verbatim() -> None:
    assert not {"summaryPreview", "summary"} & set(hydration_dto("c1", ThreadState()))
    assert hydration_dto("c1", ThreadState(summary="short"))["summaryPreview"] == "short"


def test_restored_only_when_memory_exists() -> None:
    assert hydration_dto("c1", None)["restored"] is False
    assert hydration_dto("c1", None)["messages"] == []


def test_the_design_list_of_forbidden_keys() -> None:
    assert len(FORBIDDEN_KEYS) == 26
    assert {"threadId", "sessionId", "toolResult", "tasklist", "stack"} <= FORBIDDEN_KEYS


@pytest.mark.parametrize("key", sorted(FORBIDDEN_KEYS))
def test_guard_catches_each_key_nested_inside_lists(key: str) -> None:
    payload = {"messages": [{"id": "m"}, {"meta": [{"deep": {key: 1}}]}]}
    with pytest.raises(ForbiddenKeyError) as error:
        assert_client_safe(payload)
    assert "$.messages[1].meta[0].deep" in str(error.value)


@pytest.mark.parametrize("key", ["thread_id", "SESSION-ID", "tool_result", "Raw_Prompt"])
def test_guard_catches_other_spellings(key: str) -> None:
    with pytest.raises(ForbiddenKeyError):
        assert_client_safe([({key: None},)])


def test_guard_allows_text_that_mentions_the_words() -> None:
    text = "The threadId, sessionId and toolResult are internal; checkpoint stack tasklist."
    assert_client_safe({"messages": [{"text": text}], "title": "source of truth"})
    assert_client_safe(["threadId", ("sessionId",)])
