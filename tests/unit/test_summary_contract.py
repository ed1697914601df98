"""The summary contract: version, coverage, open questions,
old stored threads and the hydration DTO, with any compaction model."""

from __future__ import annotations

from typing import Any

from agent.offline import OfflineChatModel
from graphs.upkeep import structured_compactor
from memory import CompactionOutput, CompactionStatus, ThreadState
from memory.compaction import QuotedItem, Removal
from memory.conversations import ConversationMemory
from memory.limits import (
    HARD_MESSAGE_CAP,
    MAX_OPEN_QUESTION_CHARS,
    MAX_OPEN_QUESTIONS,
)
from memory.turns import chat_turn
from tests.fakes import ScriptedModel

S, C = "s1", "c1"


def output(
    summary: str = "S", questions: list[str] | None = None, resolved: list[int] | None = None
) -> CompactionOutput:
    """An output whose questions quote themselves, and whose resolutions quote `Q<n>`."""
    return CompactionOutput(
        summary=summary,
        pinned_decisions=[],
        retired_pins=[],
        open_questions=[QuotedItem(text=q, quote=q) for q in questions or []],
        resolved_questions=[Removal(number=n, quote=f"Q{n}") for n in resolved or []],
    )


def write_turns(
    memory: ConversationMemory, count: int, start: int = 0, said: str = ""
) -> ThreadState:
    """`count` turns; the first user text is `said` when given."""
    memory.accept_draft(S, C)
    for i in range(start, start + count):
        text = said if said and i == start else f"question {i}"
        memory.write_turn(S, C, chat_turn(text, f"answer {i}"))
    return memory.read_memory(S, C)


def compact_with(memory: ConversationMemory, *outputs: CompactionOutput) -> ThreadState:
    """Write turns, the first of them (which is folded) saying what each output quotes,
    then compact with it; the final state."""
    for item in outputs:
        before = memory.read_memory(S, C)
        # distinct texts per compaction, so no turn reads as a repeat of an earlier one
        start = 10 * (before.summary_version + 1)
        quotes = [q.quote for q in item.open_questions] + [r.quote for r in item.resolved_questions]
        count = 5 if not before.messages else 3
        write_turns(memory, count, start=start, said=" ".join(quotes))
        memory.compact(S, C, structured_compactor(ScriptedModel(structured=[item])))
    return memory.read_memory(S, C)


def test_each_compaction_counts_and_covers_the_newest_folded_message(
    memory: ConversationMemory,
) -> None:
    before = write_turns(memory, 5)
    assert (before.summary_version, before.covered_until) == (0, None)
    memory.compact(S, C, structured_compactor(ScriptedModel(structured=[output("one")])))
    first = memory.read_memory(S, C)
    folded = before.messages[: len(before.messages) - len(first.messages)]
    assert first.summary_version == 1
    assert first.covered_until == folded[-1].id
    assert first.messages[0].id not in {m.id for m in folded}

    grown = write_turns(memory, 3, start=5)
    memory.compact(S, C, structured_compactor(ScriptedModel(structured=[output("two")])))
    second = memory.read_memory(S, C)
    assert second.summary_version == 2
    assert second.covered_until == grown.messages[len(grown.messages) - 5].id


def test_a_failed_compaction_changes_neither_version_nor_coverage(
    memory: ConversationMemory,
) -> None:
    write_turns(memory, 5)
    memory.compact(S, C, structured_compactor(ScriptedModel(structured=[output()])))
    write_turns(memory, 3, start=5)
    before = memory.read_memory(S, C)
    result = memory.compact(
        S, C, structured_compactor(ScriptedModel(structured=[RuntimeError("down")]))
    )
    assert result.status is CompactionStatus.FAILED
    after = memory.read_memory(S, C)
    assert (after.summary_version, after.covered_until) == (1, before.covered_until)


def test_the_local_fallback_counts_as_a_compaction(memory: ConversationMemory) -> None:
    state = write_turns(memory, HARD_MESSAGE_CAP // 2)
    assert state.summary_version == 0  # no compaction yet: at the cap, not past it
    state = write_turns(memory, 1, start=HARD_MESSAGE_CAP // 2)  # past the cap
    assert state.summary_version == 1
    assert state.covered_until is not None
    assert state.covered_until not in {m.id for m in state.messages}
    # and at the cap, a failing model falls back: one more version
    write_turns(memory, (HARD_MESSAGE_CAP - len(state.messages)) // 2, start=20)
    result = memory.compact(
        S, C, structured_compactor(ScriptedModel(structured=[RuntimeError("down")]))
    )
    assert result.status is CompactionStatus.FALLBACK
    assert memory.read_memory(S, C).summary_version == 2


def test_open_questions_survive_omission_and_go_on_resolution(
    memory: ConversationMemory,
) -> None:
    state = compact_with(memory, output(questions=["When Q1?", "When Q2?", "When Q3?"]))
    assert state.open_questions == ["When Q1?", "When Q2?", "When Q3?"]
    state = compact_with(memory, output(), output(questions=["When Q4?"], resolved=[2, 99]))
    assert state.open_questions == ["When Q1?", "When Q3?", "When Q4?"]
    assert state.summary_version == 3


def test_the_oldest_open_questions_go_past_ten_and_each_is_clamped(
    memory: ConversationMemory,
) -> None:
    first = [f"When Q{i}?" for i in range(8)]
    state = compact_with(
        memory, output(questions=first), output(questions=["When Q8?", "xy " * 300])
    )
    assert len(state.open_questions) == MAX_OPEN_QUESTIONS
    assert state.open_questions[0] == "When Q0?"
    state = compact_with(memory, output(questions=["When Q9?", "When Q10?"]))
    assert len(state.open_questions) == MAX_OPEN_QUESTIONS
    assert state.open_questions[:2] == ["When Q2?", "When Q3?"]
    assert state.open_questions[-2:] == ["When Q9?", "When Q10?"]
    assert all(len(q) <= MAX_OPEN_QUESTION_CHARS for q in state.open_questions)
    assert len(state.open_questions[-3]) == MAX_OPEN_QUESTION_CHARS


def old_format_document(count: int) -> dict[str, Any]:
    """A memory document as stored before the summary contract: no version, coverage or
    open questions, and a summary in the old rolling format."""
    messages = []
    for i in range(count):
        at = f"2025-06-01T10:{i:02d}:00+00:00"
        messages.append({"id": f"u{i}", "role": "user", "text": f"Thanks {i}!", "created_at": at})
        messages.append({"id": f"a{i}", "role": "assistant", "text": "OK.", "created_at": at})
    return {
        "messages": messages,
        "summary": 'User: "Our budget is $48,500. Thanks." / Assistant: "Noted."',
        "pinned_decisions": ["We decided to use Kafka."],
        "last_compacted_at": "2025-06-01T09:00:00+00:00",
        "version": 7,
    }


def test_an_old_format_thread_loads_as_version_zero_and_compacts(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft(S, C)
    document = old_format_document(5)
    memory.threads.put(memory.memory_thread(S, C), document)
    state = memory.read_memory(S, C)
    assert (state.summary_version, state.covered_until, state.open_questions) == (0, None, [])
    assert state.version == 7
    result = memory.compact(S, C, structured_compactor(OfflineChatModel()))
    assert result.status is CompactionStatus.SUCCEEDED, result.error
    after = memory.read_memory(S, C)
    assert after.summary_version == 1
    assert after.covered_until == "a2"
    assert after.version == 8
    assert after.summary.splitlines()[0] == document["summary"]  # the old line, kept
    assert after.pinned_decisions == state.pinned_decisions


def test_the_hydration_dto_carries_version_and_open_questions(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft(S, C)
    assert memory.hydrate(S, C)["summaryVersion"] == 0
    assert memory.hydrate(S, C)["openQuestions"] == []
    compact_with(memory, output(questions=["When is the launch?"]))
    dto = memory.hydrate(S, C)
    assert dto["summaryVersion"] == 1
    assert dto["openQuestions"] == ["When is the launch?"]
