"""Compaction: trigger, keep, prompt, clamps, pins, failures, fallback, compare-and-set."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from graphs.structured import StructuredPolicy
from graphs.upkeep import structured_compactor
from memory import VersionConflict
from memory.compaction import (
    CompactionOutput,
    CompactionStatus,
    QuotedItem,
    Removal,
    compact,
    local_fallback,
    merge_pins,
)
from memory.conversations import ConversationMemory
from memory.limits import HARD_MESSAGE_CAP, MAX_SUMMARY_CHARS
from memory.schema import ChatThreadMessage, ThreadState
from memory.turns import chat_turn
from tests.fakes import ScriptedModel

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ROLES = ("user", "assistant")


def with_turns(turns: int, said: tuple[str, ...] = (), **fields: object) -> ThreadState:
    """`turns` turns; the first users' texts are `said` (the others `q0`, `q1`, …)."""
    messages = []
    for i in range(turns):
        text = said[i] if i < len(said) else f"q{i}"
        messages.append(ChatThreadMessage(id=f"u{i}", role="user", text=text, created_at=NOW))
        messages.append(
            ChatThreadMessage(id=f"a{i}", role="assistant", text=f"a{i}", created_at=NOW)
        )
    return ThreadState.model_validate({"messages": messages, **fields})


def output(
    summary: str = "S", pins: list[str] | None = None, retired: list[tuple[int, str]] | None = None
) -> CompactionOutput:
    """An output whose pins quote themselves, and whose retirements quote their words."""
    return CompactionOutput(
        summary=summary,
        pinned_decisions=[QuotedItem(text=pin, quote=pin) for pin in pins or []],
        retired_pins=[Removal(number=n, quote=quote) for n, quote in retired or []],
    )


def write_turns(memory: ConversationMemory, count: int, start: int = 0, cid: str = "c1") -> None:
    memory.accept_draft("s1", cid)
    for i in range(start, start + count):
        memory.write_turn("s1", cid, chat_turn(f"question {i}", f"answer {i}"))


def test_no_compaction_at_eight_messages() -> None:
    model = ScriptedModel()
    result = compact(with_turns(4), structured_compactor(model))
    assert result.status is CompactionStatus.SKIPPED
    assert model.structured_calls == []


def test_compaction_above_eight_keeps_the_newest_four() -> None:
    model = ScriptedModel(structured=[output("new summary", ["Use Postgres."])])
    result = compact(with_turns(5, said=("Use Postgres.",)), structured_compactor(model), now=NOW)
    assert result.status is CompactionStatus.SUCCEEDED
    assert [m.id for m in result.state.messages] == ["u3", "a3", "u4", "a4"]
    assert result.state.summary == "new summary"
    assert result.state.pinned_decisions == ["Use Postgres."]
    assert result.state.last_compacted_at == NOW
    assert (len(result.state.summary), len(result.state.pinned_decisions)) == (11, 1)


def test_prompt_carries_old_summary_numbered_pins_fold_and_kept() -> None:
    model = ScriptedModel(structured=[output()])
    state = with_turns(5, summary="old summary", pinned_decisions=["Pin A", "Pin B"])
    compact(state, structured_compactor(model, "function_calling"))
    call = model.structured_calls[0]
    assert call["schema"] is CompactionOutput
    assert "method" not in call  # a method names an OpenAI dialect: this model has its own
    system, body = call["messages"]
    assert isinstance(system, SystemMessage) and isinstance(body, HumanMessage)
    document = json.loads(body.text)
    assert document["old_summary"] == "old summary"
    assert document["old_pinned_decisions"] == [
        {"number": 1, "text": "Pin A"},
        {"number": 2, "text": "Pin B"},
    ]
    fold = [(m["role"], m["text"]) for m in document["messages_to_fold"]]
    kept = [(m["role"], m["text"]) for m in document["kept_messages"]]
    assert fold == [(r, f"{'q' if r == 'user' else 'a'}{i}") for i in range(3) for r in ROLES]
    assert kept == [("user", "q3"), ("assistant", "a3"), ("user", "q4"), ("assistant", "a4")]


def test_custom_keep_is_honoured() -> None:
    result = compact(
        with_turns(5), structured_compactor(ScriptedModel(structured=[output()])), keep=2
    )
    assert [m.id for m in result.state.messages] == ["u4", "a4"]


def test_summary_and_pins_are_clamped_not_rejected() -> None:
    pin = " ".join(f"step{i}" for i in range(100))
    model = ScriptedModel(structured=[output("z" * 9000, [pin])])
    result = compact(with_turns(5, said=(pin,)), structured_compactor(model))
    assert result.status is CompactionStatus.SUCCEEDED
    assert len(result.state.summary) == MAX_SUMMARY_CHARS
    assert len(result.state.pinned_decisions[0]) == 300


def test_omitted_pins_are_kept_and_retired_pins_removed() -> None:
    old = ["Deploy on Mondays.", "Write the tests first.", "Review every change."]
    said = ("We no longer write tests first.", "Tag each release.", "deploy  on Mondays.")
    state = with_turns(5, said, pinned_decisions=old)
    retired = [(2, "no longer write tests first"), (99, "Tag each release.")]
    model = ScriptedModel(structured=[output("S", ["Tag each release.", said[2]], retired)])
    result = compact(state, structured_compactor(model))
    assert result.state.pinned_decisions == [old[0], old[2], "Tag each release."]
    assert result.refused == {"unknown_item": 1}


def test_oldest_pins_evicted_past_twenty() -> None:
    old = [f"old {i}" for i in range(19)]
    assert merge_pins(old, ["new 1", "new 2", "new 3"], []) == [*old[2:], "new 1", "new 2", "new 3"]


@pytest.mark.parametrize("bad", [RuntimeError("provider down"), TimeoutError("slow")])
def test_a_model_error_leaves_memory_unchanged_and_compaction_owed(
    memory: ConversationMemory, bad: object
) -> None:
    write_turns(memory, 5)
    before = memory.read_memory("s1", "c1")
    result = memory.compact("s1", "c1", structured_compactor(ScriptedModel(structured=[bad])))
    assert result.status is CompactionStatus.FAILED
    assert result.error
    assert memory.read_memory("s1", "c1") == before
    # retried after the next turn
    write_turns(memory, 1, start=5)
    retry = memory.compact(
        "s1", "c1", structured_compactor(ScriptedModel(structured=[output("recovered")]))
    )
    assert retry.status is CompactionStatus.SUCCEEDED
    assert memory.read_memory("s1", "c1").summary == "recovered"


HOSTILE = [
    "",  # empty
    '{"summary": "We planned the offsite on 14 March and the bud',  # cut at max_tokens
    '{"title": "Offsite", "notes": ["14 March"]}',  # another schema
    "Sure! The conversation was about an offsite. Let me know if you need more.",  # prose
    {"summary": "only a summary"},
    {"summary": "S", "pinned_decisions": [], "retired_pins": ["one"]},
    output(summary="   "),
    None,
]


@pytest.mark.parametrize("bad", HOSTILE)
def test_an_answer_of_the_wrong_form_falls_back_to_the_deterministic_summary(bad: object) -> None:
    state = with_turns(5, summary="earlier", pinned_decisions=["Ship on Friday."])
    policy = StructuredPolicy("auto")
    compactor = structured_compactor(ScriptedModel(structured=[bad]), policy)
    result = compact(state, compactor, now=NOW)
    assert result.status is CompactionStatus.FALLBACK
    assert result.error
    assert result.state == local_fallback(state, now=NOW)  # pins and questions unchanged
    assert result.state.summary_version == 1 and "q0" in result.state.summary
    parse_failures = 0 if isinstance(bad, CompactionOutput) else 1  # "   " is valid JSON
    assert policy.stats.snapshot()["parse_failures"] == parse_failures


def test_a_retry_of_the_wrong_form_keeps_the_pins_that_checked_out() -> None:
    state = with_turns(5, ("Decision: the budget is 9000 euros.",), summary="Room 42 booked.")
    first = output("Lost the room.", pins=["Decision: the budget is 9000 euros."])
    result = compact(
        state, structured_compactor(ScriptedModel(structured=[first, "not json"])), now=NOW
    )
    assert result.status is CompactionStatus.FALLBACK
    assert result.state.pinned_decisions == ["Decision: the budget is 9000 euros."]
    assert "Room 42 booked." in result.state.summary
    assert result.refused == {"summary_lost_value": 1}


def test_hard_cap_falls_back_to_local_compaction() -> None:
    state = with_turns(8, summary="earlier", pinned_decisions=["keep me"])
    result = compact(
        state, structured_compactor(ScriptedModel(structured=[RuntimeError("down")])), now=NOW
    )
    assert result.status is CompactionStatus.FALLBACK
    assert len(result.state.messages) == 4
    assert result.state.summary.startswith('earlier\nUser: "q0"\nAssistant: "a0"')
    assert result.state.pinned_decisions == ["keep me"]


def test_fallback_summary_stays_bounded_and_keeps_newest_lines() -> None:
    state = with_turns(8, summary="x" * MAX_SUMMARY_CHARS)
    result = local_fallback(state, now=NOW)
    assert len(result.summary) <= MAX_SUMMARY_CHARS
    assert result.summary.endswith('Assistant: "a5"')


def test_appends_never_exceed_the_hard_cap_without_compaction(memory: ConversationMemory) -> None:
    write_turns(memory, 30)
    state = memory.read_memory("s1", "c1")
    assert len(state.messages) <= HARD_MESSAGE_CAP
    assert state.messages[-1].text == "answer 29"
    assert "question 0" in state.summary or "…" in state.summary


def test_successful_compaction_is_stored_with_a_new_version(memory: ConversationMemory) -> None:
    write_turns(memory, 5)
    before = memory.read_memory("s1", "c1")
    result = memory.compact(
        "s1", "c1", structured_compactor(ScriptedModel(structured=[output("sum", ["question 1"])]))
    )
    after = memory.read_memory("s1", "c1")
    assert result.state == after
    assert after.version == before.version + 1
    assert (len(after.messages), after.summary, after.pinned_decisions) == (
        4,
        "sum",
        ["question 1"],
    )


def test_compare_and_set_rejects_a_stale_version(memory: ConversationMemory) -> None:
    write_turns(memory, 1)
    stale = memory.documents.read("s1", "c1")
    write_turns(memory, 1, start=1)
    lost = {"c1": stale.memory.model_copy(update={"summary": "lost"})}
    with pytest.raises(VersionConflict) as error:
        memory.documents.commit("s1", stale.registry, None, lost, read=("c1", stale))
    assert error.value.found == error.value.expected + 1  # a turn was written since
    assert memory.read_memory("s1", "c1").summary == ""
    fresh = memory.documents.read("s1", "c1")
    kept = {"c1": fresh.memory.model_copy(update={"summary": "ok"})}
    memory.documents.commit("s1", fresh.registry, None, kept, read=("c1", fresh))
    assert memory.read_memory("s1", "c1").summary == "ok"


def test_turn_written_during_compaction_is_not_lost(memory: ConversationMemory) -> None:
    write_turns(memory, 5)

    def slow_compaction(_messages: object) -> CompactionOutput:
        write_turns(memory, 1, start=5)  # another turn lands while the model works
        return output("folded")

    result = memory.compact(
        "s1", "c1", structured_compactor(ScriptedModel(structured=[slow_compaction]))
    )
    state = memory.read_memory("s1", "c1")
    assert result.status is CompactionStatus.SUCCEEDED
    assert [m.text for m in state.messages][-2:] == ["question 5", "answer 5"]
    assert [m.text for m in state.messages][:2] == ["question 3", "answer 3"]
    assert state.summary == "folded"


def test_concurrent_compaction_loses_cleanly(memory: ConversationMemory) -> None:
    write_turns(memory, 5)

    def racing(_messages: object) -> CompactionOutput:
        memory.compact(
            "s1", "c1", structured_compactor(ScriptedModel(structured=[output("winner")]))
        )
        return output("loser")

    result = memory.compact("s1", "c1", structured_compactor(ScriptedModel(structured=[racing])))
    assert result.status is CompactionStatus.FAILED
    assert memory.read_memory("s1", "c1").summary == "winner"


def test_two_hundred_turns_stay_bounded_with_one_call_per_three_turns(
    memory: ConversationMemory,
) -> None:
    model = ScriptedModel(structured=[lambda m: output("s" * 3000, ["d"])] * 200)
    calls = 0
    memory.accept_draft("s1", "c1")
    for i in range(200):
        memory.write_turn("s1", "c1", chat_turn(f"q{i}", f"a{i}"))
        result = memory.compact("s1", "c1", structured_compactor(model))
        calls += result.status is not CompactionStatus.SKIPPED
        state = memory.read_memory("s1", "c1")
        assert len(state.messages) <= 8
        assert len(state.summary) <= MAX_SUMMARY_CHARS
    assert calls == len(model.structured_calls) <= 200 // 3
