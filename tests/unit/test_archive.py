"""The archive of past turns: written with the turn, scoped to its session, found again
in Chinese as in English, gone with its conversation (both backends)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memory import StorageError, ThreadState
from memory.archive import ranking, sqlite_index
from memory.archive.lines import FORGOTTEN, REDACTED
from memory.archive.terms import index_terms, query_terms
from memory.conversations import ConversationMemory
from memory.ids import ThreadIds
from memory.schema import ChatThreadMessage, utcnow
from memory.storage import open_thread_store
from memory.storage.sqlite.connection import sqlite_transaction
from memory.turns import TurnStatus, chat_turn
from tests.conftest import SECRET


def say(memory: ConversationMemory, session: str, conversation: str, user: str, answer: str) -> str:
    """Write one turn (accepting the conversation first); returns the turn's id."""
    if not memory.registry(session).owns(conversation):
        memory.accept_draft(session, conversation)
    turn = uuid.uuid4().hex
    ids = {"user_message_id": f"{turn}-u", "assistant_message_id": f"{turn}-a"}
    write = memory.write_turn(
        session, conversation, chat_turn(user, answer, TurnStatus.COMPLETED, **ids)
    )
    assert write.written
    return turn


def recalled_texts(
    memory: ConversationMemory, session: str, conversation: str, text: str
) -> list[str]:
    state = memory.read_memory(session, conversation)
    return [line.text for line in memory.recall(session, conversation, text, state).lines]


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


def forget_in_archive(memory: ConversationMemory, session: str, *texts: str) -> None:
    """Run the archive's forgetting of `texts` in a documents' transaction of its own."""
    memory.threads.put_many({}, also=memory.archive.forgetter(session, texts))


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


def sqlite_rows(store: Any, sql: str) -> list[Any]:
    documents: Any = store.documents  # the SQLite document store: its connection and lock
    with documents.lock:
        return sorted(documents.conn.execute(sql).fetchall())


@pytest.mark.sqlite_only
def test_a_sessions_line_counts_follow_every_write_and_go_with_its_lines(db_url: str) -> None:
    # the commonness cut compares a term's count with the session's lines: the counts are
    # kept by triggers, in the transaction of each insert and delete
    store = open_thread_store(db_url)
    try:
        memory = ConversationMemory(store, ThreadIds(SECRET))
        say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted.")
        say(memory, "s1", "c2", "I play the cello on Sundays", "Lovely.")
        say(memory, "s2", "x1", "Bruno lives in Porto", "Noted.")
        counted = "SELECT role, lines FROM archive_sessions"
        both = [("assistant", 1), ("assistant", 2), ("user", 1), ("user", 2)]
        assert sqlite_rows(store, counted) == both
        memory.delete_conversation("s1", "c1")
        assert sqlite_rows(store, counted) == [("assistant", 1)] * 2 + [("user", 1)] * 2
        memory.forget_history("s1")
        memory.forget_history("s2")
        assert sqlite_rows(store, counted) == []  # no session key is left behind
    finally:
        store.close()


@pytest.mark.sqlite_only
@pytest.mark.parametrize(
    "layout", ["terms, scope", "said, other, scope", "said, other", "said, answered, summary"]
)
def test_an_index_of_an_earlier_layout_is_rebuilt_on_open(db_url: str, layout: str) -> None:
    # earlier indexes had one column of terms for every role, then terms without their
    # session's prefix and a column of scopes, then a copy of their terms, then a column
    # for the user's lines and one for the rest, then terms of an earlier version: a
    # database that has one is reindexed when it is opened, and its lines are found as
    # before
    store = open_thread_store(db_url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted, Lisbon.")
    documents: Any = store.documents  # the SQLite document store: its connection and lock
    with sqlite_transaction(documents.conn, documents.lock) as cursor:
        cursor.execute("DROP TABLE archive_vocab")
        cursor.execute("DROP TABLE archive_index")
        cursor.execute("DROP TABLE archive_sessions")  # the counts came later still
        cursor.execute("DROP TRIGGER archive_lines_added")
        cursor.execute("DROP TRIGGER archive_lines_removed")
        cursor.execute(f"CREATE VIRTUAL TABLE archive_index USING fts5({layout})")
        cursor.execute("CREATE VIRTUAL TABLE archive_vocab USING fts5vocab(archive_index, 'row')")
        cursor.execute("UPDATE archive_index_layout SET version = 1")
    store.close()
    store = open_thread_store(db_url)
    try:
        memory = ConversationMemory(store, ThreadIds(SECRET))
        assert recalled_texts(memory, "s1", "c2", "Where did I say Alma lives?") == [
            "My sister Alma lives in Lisbon",
            "Noted, Lisbon.",
        ]
        assert {h.role for h in memory.search("s1", "Lisbon", limit=5)} == {"user", "assistant"}
        counted = "SELECT role, lines FROM archive_sessions"
        assert sqlite_rows(store, counted) == [("assistant", 1), ("user", 1)]
    finally:
        store.close()


def test_the_terms_of_a_line_are_those_the_index_version_was_built_with() -> None:
    # the SQLite index keeps no copy of its terms: it is told a line's terms again to
    # delete them. Terms computed another way would leave the old ones in the index:
    # whoever changes these must bump `memory.archive.sqlite_index.INDEX_VERSION` (an index of
    # another version is rebuilt on open) and then this test's expectations.
    assert sqlite_index.INDEX_VERSION == 3
    assert index_terms("Decided: we deploy on Tuesdays, running the 2.5 build") == [
        "decid", "we", "deploy", "on", "tuesday", "run", "the", "2", "5", "build",
    ]  # fmt: skip
    # a four-letter word meets its inflections, unless that makes it a stop word (version 3)
    assert index_terms("I live here, I lived there; a note") == [
        "i", "liv", "here", "i", "liv", "ther", "a", "note",
    ]  # fmt: skip
    # a word of other letters ends where CJK text begins (version 2)
    assert index_terms("用Python写代码") == ["用", "python", "写代", "代码"]
    assert index_terms("我每天早上喝两杯咖啡，不加糖") == [
        "我每", "每天", "天早", "早上", "上喝", "喝两", "两杯", "杯咖", "咖啡", "不加", "加糖",
    ]  # fmt: skip


@pytest.mark.sqlite_only
def test_deleted_and_rewritten_lines_leave_no_terms_in_the_index(db_url: str) -> None:
    store = open_thread_store(db_url)
    try:
        memory = ConversationMemory(store, ThreadIds(SECRET))
        say(memory, "s1", "c1", "My sister Alma lives in Lisbon", "Noted, Lisbon.")
        say(memory, "s1", "c2", "I prefer green tea over coffee", "Green tea it is.")
        say(memory, "s1", "c3", "The harbour lights were pretty", "Lovely.")
        memory.delete_conversation("s1", "c1")
        forget_in_archive(memory, "s1", "I prefer green tea over coffee")
        terms = {row[0] for row in sqlite_rows(store, "SELECT term FROM archive_vocab")}
        head = sqlite_index.prefix(memory.ids.session_key("s1"))
        assert {head + word for word in ("alma", "lisbon", "tea", "coffee")}.isdisjoint(terms)
        assert head + "harbour" in terms
        documents: Any = store.documents
        with sqlite_transaction(documents.conn, documents.lock) as cursor:  # raises if not
            cursor.execute("INSERT INTO archive_index (archive_index) VALUES ('integrity-check')")
        memory.forget_history("s1")
        assert sqlite_rows(store, "SELECT term FROM archive_vocab") == []
    finally:
        store.close()


def test_an_answer_is_indexed_without_what_it_repeats_of_its_context(
    memory: ConversationMemory,
) -> None:
    # a real answer repeats what it was given (the message, recalled lines, the
    # summary): those sentences are kept in its text, not in what a search finds it by
    recalled = "The harbour master said berth 14 is free until October"
    answer = "The harbour master said berth 14 is free until October. I would book it now."
    now = utcnow()
    messages = [
        ChatThreadMessage(id="t1-u", role="user", text="Can I keep the boat?", created_at=now),
        ChatThreadMessage(id="t1-a", role="assistant", text=answer, created_at=now),
    ]
    memory.accept_draft("s1", "c1")
    write = memory.archive.turn("s1", "c1", "Boat", messages, context=[recalled])
    memory.threads.put_many({}, also=memory.archive.writer(write))
    assert [row.indexed for row in write.rows] == [None, "I would book it now."]
    assert memory.search("s1", "harbour master berth", limit=5) == []
    assert [hit.text for hit in memory.search("s1", "book", limit=5)] == [answer]
