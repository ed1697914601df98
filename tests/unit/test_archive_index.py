"""The archive's SQLite index: its per-session line counts, an earlier layout rebuilt on
open, the terms of a line as its version computes them, nothing left of deleted or
rewritten lines, and what an answer is indexed by."""

from __future__ import annotations

from typing import Any

import pytest

from memory.archive import sqlite_index
from memory.archive.terms import index_terms
from memory.conversations import ConversationMemory
from memory.ids import ThreadIds
from memory.schema import ChatThreadMessage, utcnow
from memory.storage import open_thread_store
from memory.storage.sqlite.connection import sqlite_transaction
from tests.archive_support import forget_in_archive, recalled_texts, say, sqlite_rows
from tests.conftest import SECRET


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
