"""Deleted conversations stay deleted; memory and registry change together (hardening 1-3).

A turn that ends after its conversation was deleted or pruned writes nothing, so the
conversation never comes back; and a turn's memory, its registry entry and the
deletion of pruned conversations are one transaction, so a crash (`os._exit` in the
middle of the writes, the closest thing to `kill -9` a test can aim) never leaves
the registry behind the memory.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graphs.upkeep import structured_compactor
from memory import ConversationNotFound, SkipReason
from memory.conversations import ConversationMemory
from memory.turns import chat_turn
from tests.storage_support import iter_thread_ids

REPO = Path(__file__).resolve().parents[2]


def listed(memory: ConversationMemory, session: str = "s1") -> list[str]:
    return [c["id"] for c in memory.conversations(session)["conversations"]]


def threads_of(memory: ConversationMemory, cid: str) -> set[str]:
    return {memory.memory_thread("s1", cid), memory.run_thread("s1", cid)} & set(
        iter_thread_ids(memory.threads)
    )


def test_a_turn_ending_after_its_conversation_was_deleted_writes_nothing(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("private note", "noted"))
    memory.threads.put(memory.run_thread("s1", "c1"), {"turn": "state"})
    memory.delete_conversation("s1", "c1")  # while a second turn is still running
    late = memory.write_turn("s1", "c1", chat_turn("second turn", "answer"))
    assert (late.written, late.skipped) == (False, SkipReason.GONE)
    assert listed(memory) == []
    assert threads_of(memory, "c1") == set()
    with pytest.raises(ConversationNotFound):
        memory.hydrate("s1", "c1")


def test_a_turn_ending_after_its_conversation_was_pruned_writes_nothing(
    memory: ConversationMemory,
) -> None:
    for n in range(10):
        memory.accept_draft("s1", f"c{n}")
        memory.write_turn("s1", f"c{n}", chat_turn(f"hello {n}", "hi"))
    memory.accept_draft("s1", "c10")  # the eleventh conversation's first turn...
    change = memory.write_turn("s1", "c10", chat_turn("newest", "hi"))
    assert change.pruned == ("c0",)  # ...prunes c0, where a slow turn is running
    late = memory.write_turn("s1", "c0", chat_turn("slow turn", "answer"))
    assert late.skipped is SkipReason.GONE
    assert "c0" not in listed(memory) and len(listed(memory)) == 10
    assert threads_of(memory, "c0") == set()
    with pytest.raises(ConversationNotFound):
        memory.hydrate("s1", "c0")


def test_a_turn_writes_from_what_it_read_unless_a_writer_changed_it_meanwhile(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft("s1", "c1")
    read = memory.memory_for_turn("s1", "c1")
    reads = 0
    get_many = memory.threads.get_many

    def counted(*args: object, **kwargs: object) -> object:
        nonlocal reads
        reads += 1
        return get_many(*args, **kwargs)  # type: ignore[arg-type]

    memory.threads.get_many = counted  # type: ignore[assignment,method-assign]
    first = memory.write_turn("s1", "c1", chat_turn("q0", "a0"), read=read)
    assert (first.written, reads) == (True, 0)  # nothing changed since: no second read
    stale = memory.memory_for_turn("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("q1", "a1"))  # another writer, meanwhile
    late = memory.write_turn("s1", "c1", chat_turn("q2", "a2"), read=stale)
    assert late.written and [m.text for m in late.state.messages] == [
        *("q0", "a0", "q1", "a1", "q2", "a2")
    ]
    gone = memory.memory_for_turn("s1", "c1")
    memory.delete_conversation("s1", "c1")
    assert memory.write_turn("s1", "c1", chat_turn("q3", "a3"), read=gone).skipped is (
        SkipReason.GONE
    )
    assert "c1" not in listed(memory)


def test_compaction_of_a_deleted_conversation_does_not_bring_it_back(
    memory: ConversationMemory,
) -> None:
    from tests.fakes import ScriptedModel

    memory.accept_draft("s1", "c1")
    for i in range(5):
        memory.write_turn("s1", "c1", chat_turn(f"q{i}", f"a{i}"))

    def delete_meanwhile(_: object) -> object:
        from memory import CompactionOutput

        memory.delete_conversation("s1", "c1")  # while the compaction model works
        return CompactionOutput(summary="late", pinned_decisions=[], retired_pins=[])

    result = memory.compact(
        "s1", "c1", structured_compactor(ScriptedModel(structured=[delete_meanwhile]))
    )
    assert result.status.value == "failed"
    assert threads_of(memory, "c1") == set() and listed(memory) == []


def test_last_activity_is_the_newest_message_of_every_conversation(
    memory: ConversationMemory,
) -> None:
    for n in range(3):
        memory.accept_draft("s1", f"c{n}")
        for i in range(3):
            memory.write_turn("s1", f"c{n}", chat_turn(f"q{n}-{i}", "a"))
    for entry in memory.conversations("s1")["conversations"]:
        newest = memory.hydrate("s1", entry["id"])["messages"][-1]["createdAt"]
        assert entry["lastActiveAt"] == newest
