"""Both backends rank a search the same way (`memory.archive.ranking`), and what the
archive holds decides with the judge whether a message recalls (`memory.archive.relevance`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from itertools import groupby
from pathlib import Path

import pytest

from memory import ThreadIds
from memory.archive.terms import query_terms
from memory.conversations import ConversationMemory
from memory.schema import ThreadState
from memory.storage import open_thread_store
from memory.turns import chat_turn
from tests.conftest import SECRET, clean_postgres

TURNS = [
    ("My sister Alma lives in Lisbon, near the river", "Lisbon is lovely in spring."),
    ("Alma's flat in Lisbon has a balcony", "A balcony in Lisbon: lucky Alma."),
    ("We booked the ferry to Porto for the 14th", "The ferry to Porto leaves at nine."),
    ("The ferry tickets cost 40 euros each", "Keep the ferry tickets on your phone."),
    ("Alma recommended a bakery by the river", "Pastel de nata at the river bakery, then."),
    ("我每天早上喝两杯咖啡，不加糖", "两杯咖啡不算多。"),
    ("周末我们去爬山，带了咖啡和面包", "爬山带咖啡，不错。"),
    ("The river walk takes an hour, the ferry twenty minutes", "Take the ferry back."),
]
QUERIES = ["Alma Lisbon", "ferry Porto tickets", "river bakery", "咖啡", "爬山 咖啡", "balcony"]


@pytest.fixture
def both(tmp_path: Path, postgres_server: str | None) -> Iterator[list[ConversationMemory]]:
    if postgres_server is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is needed for the parity test")
        pytest.skip("PostgreSQL is not reachable")
    clean_postgres(postgres_server)
    stores = [open_thread_store(f"sqlite:///{tmp_path / 'a.sqlite'}")]
    stores.append(open_thread_store(postgres_server))
    memories = [ConversationMemory(store, ThreadIds(SECRET)) for store in stores]
    for memory in memories:
        for index, (user, answer) in enumerate(TURNS):
            memory.accept_draft("s1", f"c{index % 3}")
            assert memory.write_turn("s1", f"c{index % 3}", chat_turn(user, answer)).written
    yield memories
    for store in stores:
        store.close()


def ranked(memory: ConversationMemory, query: str) -> list[tuple[float, frozenset[str]]]:
    """The search's lines grouped by score, best first (the order within a tie is free)."""
    archive = memory.archive
    hits = archive.backend.search(archive.ids.session_key("s1"), query_terms(query), 20)
    return [
        (score, frozenset(line.text for line in tie))
        for score, tie in groupby(hits, key=lambda line: round(line.score, 6))
    ]


@pytest.mark.parametrize("query", QUERIES)
def test_both_backends_return_the_same_lines_in_the_same_order(
    both: list[ConversationMemory], query: str
) -> None:
    sqlite, postgres = (ranked(memory, query) for memory in both)
    assert sqlite and sqlite == postgres


def test_both_backends_recall_the_same_lines(both: list[ConversationMemory]) -> None:
    asked = "What did Alma say about the river?"
    sqlite, postgres = (
        [line.text for line in memory.recall("s1", "new", asked, ThreadState()).lines]
        for memory in both
    )
    assert sqlite and sqlite == postgres


def test_a_past_event_must_name_only_what_the_archive_holds(memory: ConversationMemory) -> None:
    # "when did the Berlin Wall fall?" is in the past tense, but the archive never heard
    # of Berlin: it recalls nothing, though "wall" is in a line
    memory.accept_draft("s1", "c1")
    memory.write_turn("s1", "c1", chat_turn("The garden wall needs paint", "Noted."))
    asked = memory.recall("s1", "c2", "When did the Berlin Wall fall?", ThreadState())
    assert asked.lines == ()
    asked = memory.recall("s1", "c2", "When did the garden wall get its paint?", ThreadState())
    assert "The garden wall needs paint" in [line.text for line in asked.lines]


def test_excluded_message_ids_are_never_recalled_but_stay_searchable(
    memory: ConversationMemory,
) -> None:
    memory.accept_draft("s1", "c1")
    old = chat_turn(
        "I live in Lisbon", "Noted.", user_message_id="t1-u", assistant_message_id="t1-a"
    )
    memory.write_turn("s1", "c1", old)
    memory.write_turn("s1", "c1", chat_turn("I moved to Porto, near Lisbon", "Noted."))
    asked = "where did I say I live, Lisbon?"
    found = [line.text for line in memory.recall("s1", "c2", asked, ThreadState()).lines]
    assert "I live in Lisbon" in found
    kept = memory.recall("s1", "c2", asked, ThreadState(), exclude_message_ids=["t1-u"])
    assert "I live in Lisbon" not in [line.text for line in kept.lines]
    assert "I live in Lisbon" in [hit.text for hit in memory.search("s1", "Lisbon", 10)]


def test_postgres_counts_follow_every_write_and_leave_no_word_behind(
    both: list[ConversationMemory],
) -> None:
    # the counts BM25 reads are kept by triggers: after appends, a rewrite, a deleted
    # conversation, they equal a count of the lines; a forgotten word leaves no row
    _, memory = both
    pool = memory.threads.documents.pool  # type: ignore[attr-defined]
    recount = (
        "SELECT session_key, term, role, COUNT(*) AS lines"
        " FROM archive_lines, unnest(tsvector_to_array(terms)) AS term"
        " GROUP BY session_key, term, role ORDER BY 1, 2, 3"
    )
    kept = "SELECT session_key, term, role, lines FROM archive_terms ORDER BY 1, 2, 3"

    def rows(sql: str) -> list[tuple[object, ...]]:
        with pool.connection() as conn:
            return [tuple(row.values()) for row in conn.execute(sql).fetchall()]

    assert rows(kept) == rows(recount)
    forget = memory.archive.forgetter("s1", ["Alma recommended a bakery by the river"])
    assert forget is not None
    memory.threads.put_many({}, also=forget)
    memory.delete_conversation("s1", "c1")
    assert rows(kept) == rows(recount)
    assert not [row for row in rows(kept) if row[1] == "bakery"]
    memory.forget_history("s1")
    assert rows(kept) == [] and rows("SELECT * FROM archive_counts") == []


def test_a_message_its_words_do_not_mark_recalls_when_it_shares_enough_that_is_rare(
    memory: ConversationMemory,
) -> None:
    # "explain …" has the shape of a request about the world, and "Himmelbeet" is no
    # past event: the cues say no; four words said in one line of forty say yes
    memory.accept_draft("s1", "c1")
    for n in range(20):
        memory.write_turn("s1", "c1", chat_turn(f"Note {n} about the weather", f"Noted {n}."))
    line = "The Himmelbeet partner list is in the Kreuzberg folder"
    memory.write_turn("s1", "c1", chat_turn(line, "Got it."))
    asked = memory.recall(
        "s1", "c2", "explain the Himmelbeet Kreuzberg partner list", ThreadState()
    )
    assert line in [recalled.text for recalled in asked.lines]
    # one rare word is not enough
    assert memory.recall("s1", "c2", "explain the Himmelbeet approach", ThreadState()).lines == ()
