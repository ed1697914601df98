"""The archive of past turns: written with the turn, scoped to its session, found again
in Chinese as in English, gone with its conversation (both backends)."""

from __future__ import annotations

import pytest

from memory import StorageError, ThreadState
from memory.archive import ranking
from memory.archive.lines import FORGOTTEN, REDACTED
from memory.archive.terms import query_terms
from memory.conversations import ConversationMemory
from memory.turns import chat_turn
from tests.archive_support import forget_in_archive, recalled_texts, say


def test_a_turn_archives_exactly_what_memory_stores(memory: ConversationMemory) -> None:
    turn = say(memory, "s1", "c1", "  My sister Alma lives in Lisbon  ", "Noted, Lisbon.")
    hits = memory.search("s1", "Lisbon", limit=10)
    assert {(h.message_id, h.role, h.text) for h in hits} == {
        (f"{turn}-u", "user", "My sister Alma lives in Lisbon"),
        (f"{turn}-a", "assistant", "Noted, Lisbon."),
    }
    stored = {m.id: m for m in memory.read_memory("s1", "c1").messages}
    for hit in hits:
        assert hit.conversation_id == "c1"
        assert hit.title == "My sister Alma lives in Lisbon"
        assert hit.created_at == stored[hit.message_id].created_at


def test_recall_finds_another_conversations_line_and_never_another_sessions(
    memory: ConversationMemory,
) -> None:
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
    say(memory, "s2", "x1", "My brother Bruno lives in Lisbon", "Noted.")
    found = recalled_texts(memory, "s1", "c2", "Where did I say Alma lives?")
    assert "My sister Alma lives in Lisbon" in found
    assert all("Bruno" not in text for text in found)
    assert all("Bruno" not in h.text for h in memory.search("s1", "Lisbon brother", limit=10))
    assert [h.text for h in memory.search("s2", "Alma", limit=10)] == []


def test_a_probe_sharing_nothing_recalls_nothing(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
    say(memory, "s1", "c1", "I play the cello on Sundays", "Lovely.")
    assert recalled_texts(memory, "s1", "c2", "How do volcanoes form?") == []
    assert recalled_texts(memory, "s1", "c2", "what did I tell you before?") == []


def test_chinese_is_found_by_a_two_character_word(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "我每天早上喝两杯咖啡，不加糖", "好的，记住了。")
    # (in a conversation of its own: the lines after a hit come with it when the budget
    # allows, test_archive_recall.py)
    say(memory, "s1", "c3", "周末我去爬山", "听起来不错。")
    found = recalled_texts(memory, "s1", "c2", "当时我们聊过咖啡吗？")
    assert "我每天早上喝两杯咖啡，不加糖" in found
    assert all("爬山" not in text for text in found)


def test_a_hit_brings_the_lines_after_it_and_the_one_before(
    memory: ConversationMemory,
) -> None:
    # what the hits leave of the budget goes to the lines around them: both backends
    # read a hit's answer and the user's next two lines in the same query
    for text in (
        "Sam moves to Leeds in June",
        "Big news. We have a dog.",
        "No. Tell me everything.",
        "A rescue greyhound from the trust, four years old, and his name is Pickle.",
        "The weather was lovely all week",
    ):
        say(memory, "s1", "c1", text, "Noted.")
    found = recalled_texts(memory, "s1", "c2", "What kind of dog do we have?")
    assert found[0] == "Big news. We have a dog."  # the hit, then what is around it
    assert {
        "No. Tell me everything.",
        "A rescue greyhound from the trust, four years old, and his name is Pickle.",
        "Sam moves to Leeds in June",
    } <= set(found)
    assert "The weather was lovely all week" not in found


def test_the_current_conversations_recent_messages_are_not_recalled(
    memory: ConversationMemory,
) -> None:
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
    assert recalled_texts(memory, "s1", "c1", "Where did I say Alma lives?") == []
    assert "My sister Alma lives in Lisbon" in recalled_texts(
        memory, "s1", "c2", "Where did I say Alma lives?"
    )


def test_a_question_comes_with_its_answer_and_a_short_reply_with_its_question(
    memory: ConversationMemory,
) -> None:
    say(memory, "s1", "c1", "Which city should I visit in spring?", "Kyoto, for the blossoms.")
    lines = memory.recall(
        "s1", "c2", "What was the city I asked you about for spring?", ThreadState()
    ).lines
    assert [(line.role, line.text) for line in lines] == [
        ("user", "Which city should I visit in spring?"),
        ("assistant", "Kyoto, for the blossoms."),
    ]
    say(memory, "s1", "c3", "Plan my week", "Shall I book the dentist on Tuesday?")
    say(memory, "s1", "c3", "yes, the dentist on Tuesday", "Booked.")
    lines = memory.recall("s1", "c4", "when was my dentist again?", ThreadState()).lines
    assert ("assistant", "Shall I book the dentist on Tuesday?") in [
        (line.role, line.text) for line in lines
    ]


def test_a_record_of_two_speakers_brings_the_next_speakers_answer(
    memory: ConversationMemory,
) -> None:
    # a transcript typed in by one user: each speaker's line is a user turn, the answer
    # to a question is the user's next line, not the assistant's
    say(memory, "s1", "c1", "Luis: I entered the Westfield summer show.", "Good luck!")
    say(memory, "s1", "c1", "Greta: When is the show?", "I cannot tell.")
    say(memory, "s1", "c1", "Luis: Saturday the 17th of August.", "Noted.")
    say(memory, "s1", "c1", "Greta: Tomatoes, then.", "Nice.")
    texts = recalled_texts(memory, "s1", "c2", "When was the show Luis entered?")
    assert "Luis: Saturday the 17th of August." in texts
    # a short reply comes after the line it answers
    texts = recalled_texts(memory, "s1", "c3", "What did Greta say about tomatoes?")
    assert texts[: texts.index("Greta: Tomatoes, then.")][-2:] == [
        "Luis: Saturday the 17th of August.",
        "Noted.",
    ]


def test_a_word_in_every_answer_still_singles_out_the_users_line(
    memory: ConversationMemory,
) -> None:
    # the assistant says "garden" in every answer: among the user's own lines it is as
    # rare as "lemon", so it weighs as much in a search of what the user said
    for turn in range(30):
        say(memory, "s1", "c1", f"Note {turn} for the week", f"Noted for the garden, item {turn}.")
    say(memory, "s1", "c2", "The garden gate is blue", "Noted for the garden.")
    say(memory, "s1", "c2", "The lemon tree is old", "Noted for the garden.")
    archive = memory.archive
    hits = archive.backend.search(
        archive.ids.session_key("s1"), query_terms("garden lemon"), 10, roles=("user",)
    )
    scores = {line.text: line.score for line in hits}
    gate, lemon = scores["The garden gate is blue"], scores["The lemon tree is old"]
    assert gate >= 0.8 * lemon


def test_what_the_assistant_said_is_a_hit(memory: ConversationMemory) -> None:
    # an answer is what users come back for ("the city you suggested")
    say(memory, "s1", "c1", "Any ideas for spring?", "Kyoto, for the blossoms.")
    found = recalled_texts(memory, "s1", "c2", "which place did you suggest for the blossoms?")
    assert found[:2] == ["Any ideas for spring?", "Kyoto, for the blossoms."]
    assert [h.text for h in memory.search("s1", "Kyoto", limit=5)] == ["Kyoto, for the blossoms."]


def test_deleting_a_conversation_deletes_its_lines_at_once(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
    say(memory, "s1", "c2", "Alma visits in May", "Nice.")
    memory.delete_conversation("s1", "c1")
    assert [h.text for h in memory.search("s1", "Alma", limit=10)] == ["Alma visits in May"]
    found = recalled_texts(memory, "s1", "c3", "Where did I say Alma lives?")
    assert "Alma visits in May" in found and all("Lisbon" not in text for text in found)


def test_a_pruned_conversation_stays_searchable(memory: ConversationMemory) -> None:
    say(memory, "s1", "c0", "The boat is called Marisol", "A fine name.")
    for index in range(1, 11):
        say(memory, "s1", f"c{index}", f"topic number {index}", "ok")
    assert not memory.registry("s1").owns("c0")
    hits = memory.search("s1", "Marisol", limit=10)
    assert {h.conversation_id for h in hits} == {"c0"}
    assert hits[0].title == "The boat is called Marisol"


def test_a_search_can_keep_to_one_conversation(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "The boat is called Marisol", "A fine name.")
    say(memory, "s1", "c2", "Marisol needs new sails", "Noted.")
    say(memory, "s2", "c1", "My Marisol is a cat", "Nice.")
    everywhere = memory.search("s1", "Marisol", limit=10)
    assert {h.conversation_id for h in everywhere} == {"c1", "c2"}
    only = memory.search("s1", "Marisol", limit=10, conversation_id="c2")
    assert [(h.conversation_id, h.text) for h in only] == [("c2", "Marisol needs new sails")]
    assert memory.search("s1", "Marisol", limit=10, conversation_id="c9") == []
    # another session's conversation of the same id stays its own
    assert [h.text for h in memory.search("s2", "Marisol", limit=10, conversation_id="c1")] == [
        "My Marisol is a cat"
    ]


def test_a_secret_is_archived_redacted(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "my password is hunter2-Blue!", "I will not keep it.")
    assert memory.search("s1", "hunter2", limit=10) == []
    assert memory.archive.count("s1") == 2
    assert memory.read_memory("s1", "c1").messages[0].text == "my password is hunter2-Blue!"
    assert REDACTED == "[redacted]"


def test_forgetting_a_text_redacts_the_source_turn(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "I prefer green tea over coffee", "Green tea it is.")
    say(memory, "s1", "c1", "Coffee beans from Kenya are on sale", "Good to know.")
    forget_in_archive(memory, "s1", "I prefer green tea over coffee")
    texts = {h.text for h in memory.search("s1", "coffee tea", limit=10)}
    assert texts == {"Coffee beans from Kenya are on sale"}
    assert FORGOTTEN == "[forgotten]"


def test_each_text_forgotten_in_one_transaction_sees_the_ones_before(
    memory: ConversationMemory,
) -> None:
    # both texts change the same answer, sentence by sentence: the second plan must see
    # the first one's rewrite (uncommitted yet), or it would write the first name back
    say(memory, "s1", "c1", "My dog is called Biscuit", "A fine name.")
    say(memory, "s1", "c2", "My cat is called Pixel", "A fine name.")
    say(memory, "s1", "c3", "My pets?", "Your dog is Biscuit. Your cat is Pixel. Adorable.")
    forget_in_archive(memory, "s1", "My dog is called Biscuit", "My cat is called Pixel")
    assert memory.search("s1", "Biscuit Pixel dog cat", limit=10) == []
    (answer,) = memory.search("s1", "adorable", limit=10)
    assert answer.text == f"{FORGOTTEN} Adorable."  # the marker and the next sentence go as one


def test_forget_history_empties_only_that_session(memory: ConversationMemory) -> None:
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
    say(memory, "s2", "c1", "My sister Alma lives in Porto", "Noted.")
    assert memory.forget_history("s1") == 2
    assert memory.search("s1", "Alma", limit=10) == []
    assert len(memory.search("s2", "Alma", limit=10)) == 1


@pytest.mark.parametrize("query", ["", "   ", "the and of"])
def test_a_query_without_words_finds_nothing(memory: ConversationMemory, query: str) -> None:
    say(memory, "s1", "c1", "the and of", "ok")
    assert memory.search("s1", query, limit=10) == []


class Crash(Exception):
    """Stands for the process dying between the archive's statements and the commit."""


def crash_after_archive(memory: ConversationMemory, monkeypatch: pytest.MonkeyPatch) -> None:
    backend = memory.archive.backend
    original = backend.write

    def write_then_crash(cursor: object, change: object) -> None:
        original(cursor, change)  # type: ignore[arg-type]
        raise Crash()

    monkeypatch.setattr(backend, "write", write_then_crash)


def test_a_crash_before_the_commit_leaves_conversation_and_lines_together(
    memory: ConversationMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
    crash_after_archive(memory, monkeypatch)
    with pytest.raises(StorageError):
        memory.delete_conversation("s1", "c1")
    with pytest.raises(StorageError):
        memory.write_turn("s1", "c1", chat_turn("Alma moved to Porto", "Noted."))
    monkeypatch.undo()
    assert memory.registry("s1").owns("c1")
    assert [m.text for m in memory.read_memory("s1", "c1").messages] == [
        "My sister Alma lives in Lisbon",
        "Noted.",
    ]
    assert {h.text for h in memory.search("s1", "Alma", limit=10)} == {
        "My sister Alma lives in Lisbon"
    }


def test_how_common_a_word_is_is_counted_among_the_sessions_own_lines(
    memory: ConversationMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a word another session says all the time is no common word of this one: it stays
    # in the query (the commonness cut, and bm25's weights, see this session's lines only)
    monkeypatch.setattr(ranking, "COMMON_FLOOR", 3)
    say(memory, "s1", "c1", "The harbour lights were pretty tonight", "Lovely.")
    for n in range(6):
        say(memory, "s2", f"x{n}", f"Harbour fees went up again, note {n}", "Noted.")
    hits = memory.search("s1", "harbour zebra quokka", limit=5)
    assert [h.text for h in hits] == ["The harbour lights were pretty tonight"]
