"""The archive's vectors go with their lines, on both backends: a deleted conversation's,
a forgotten session's, swept lines', a forgotten item's lines' (in the transaction that
deletes or rewrites them); vectors of another model are dropped; on SQLite, those a
process without embeddings could not reach are deleted when embeddings are back; on
PostgreSQL, a process's cache of a session's vectors follows what another process
forgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.conversations import ConversationMemory
from tests.archive_vectors import (
    HATCHBACK,
    INSURANCE,
    QUESTION,
    SAVING,
    SOUP,
    ConceptEmbeddings,
    hits,
    nearest_texts,
    open_embedded,
    say,
    vectors,
)


def test_deleting_a_conversation_deletes_its_vectors_with_its_lines(
    embedded: ConversationMemory,
) -> None:
    say(embedded, "s1", "c1", SAVING)
    say(embedded, "s1", "c2", HATCHBACK)
    embedded.archive.embed_lines("s1")
    assert len(vectors(embedded.threads)) == 2
    embedded.delete_conversation("s1", "c1")
    assert len(vectors(embedded.threads)) == 1
    assert hits(embedded, "s1", QUESTION) == [HATCHBACK]
    say(embedded, "s2", "x1", SAVING)
    embedded.archive.embed_lines("s2")
    embedded.forget_history("s1")
    assert [key for _, key in vectors(embedded.threads)] == [embedded.ids.session_key("s2")]
    embedded.archive.sweep(datetime.now(UTC) + timedelta(days=1))  # the retention sweep
    assert vectors(embedded.threads) == []


def test_a_failed_deletion_keeps_lines_and_vectors_together(
    embedded: ConversationMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    say(embedded, "s1", "c1", SAVING)
    embedded.archive.embed_lines("s1")
    backend: Any = embedded.archive.backend
    original = backend.write

    def write_then_fail(cursor: Any, change: Any) -> None:
        original(cursor, change)
        raise RuntimeError("the process died before the commit")

    monkeypatch.setattr(backend, "write", write_then_fail)
    with pytest.raises(Exception, match="unavailable"):
        embedded.delete_conversation("s1", "c1")
    monkeypatch.undo()
    assert len(vectors(embedded.threads)) == 1  # rolled back with the lines
    assert hits(embedded, "s1", QUESTION) == [SAVING]


def test_forgetting_an_item_deletes_its_lines_vectors_in_its_transaction(
    embedded: ConversationMemory,
) -> None:
    say(embedded, "s1", "c1", "I am saving to purchase a sedan")
    say(embedded, "s1", "c2", SOUP)
    embedded.archive.embed_lines("s1")
    forget = embedded.archive.forgetter("s1", ["I am saving to purchase a sedan"])
    assert forget is not None

    def forget_then_fail(cursor: Any) -> None:
        forget(cursor)
        raise RuntimeError("the process died before the commit")

    with pytest.raises(Exception, match="unavailable"):
        embedded.threads.put_many({}, also=forget_then_fail)
    assert len(vectors(embedded.threads)) == 2  # rolled back with the rewrite
    embedded.threads.put_many({}, also=forget)
    assert len(vectors(embedded.threads)) == 1  # the soup's
    assert nearest_texts(embedded, "s1", "How do I purchase an automobile?") == [SOUP]
    assert hits(embedded, "s1", "How do I purchase an automobile?") == []
    assert embedded.archive.embed_lines("s1") == 0  # a forgotten line is never embedded


@pytest.mark.sqlite_only  # (on PostgreSQL a vector is in its line's row)
def test_a_rewrite_that_could_not_reach_the_vectors_takes_them_out_of_use(
    vector_url: str, concepts: ConceptEmbeddings
) -> None:
    memory = open_embedded(vector_url, concepts)
    say(memory, "s1", "c1", "Lentil soup for dinner. Also saving to purchase a sedan")
    memory.archive.embed_lines("s1")
    memory.threads.close()
    plain = open_embedded(vector_url, None)  # a process without embeddings forgets the sentence
    plain.threads.put_many({}, also=plain.archive.forgetter("s1", ["saving to purchase a sedan"]))
    plain.threads.close()
    memory = open_embedded(vector_url, concepts)
    try:
        # that process had no vec0: the vector, computed from a text the line no longer
        # reads, is deleted when a process with embeddings opens the file
        assert vectors(memory.threads) == []
        assert nearest_texts(memory, "s1", "How do I purchase an automobile?") == []
        assert memory.archive.embed_lines("s1") == 0  # nor is "[forgotten]" embedded
    finally:
        memory.threads.close()


def test_vectors_of_another_model_are_dropped(vector_url: str, concepts: ConceptEmbeddings) -> None:
    memory = open_embedded(vector_url, concepts)
    say(memory, "s1", "c1", SAVING)
    memory.archive.embed_lines("s1")
    memory.threads.close()
    other = open_embedded(vector_url, concepts, model="another")
    try:
        assert vectors(other.threads) == []  # another space: nothing to compare with
        assert other.archive.embed_lines("s1") == 1
    finally:
        other.threads.close()


@pytest.mark.sqlite_only
def test_vectors_a_process_without_embeddings_left_behind_go_when_they_are_back(
    vector_url: str, concepts: ConceptEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    # a process without embeddings cannot reach the vectors of the lines it deletes or
    # rewrites (an embedding can be partly turned back into its text): it says so, and
    # the next process with embeddings deletes them
    memory = open_embedded(vector_url, concepts)
    say(memory, "s1", "c1", SAVING)
    say(memory, "s2", "x1", SOUP)
    memory.archive.embed_lines("s1")
    memory.archive.embed_lines("s2")
    memory.threads.close()
    plain = open_embedded(vector_url, None)
    assert "keep their vectors in the file" in caplog.text
    plain.forget_history("s1")
    plain.threads.close()
    back = open_embedded(vector_url, concepts)
    try:
        kept = vectors(back.threads)
        assert [key for _, key in kept] == [back.ids.session_key("s2")]
    finally:
        back.threads.close()


def test_a_process_cache_of_vectors_follows_what_another_process_forgets(
    vector_url: str, concepts: ConceptEmbeddings
) -> None:
    first = open_embedded(vector_url, concepts)
    second = open_embedded(vector_url, concepts)  # another worker on the same database
    try:
        say(first, "s1", "c1", "I am saving to purchase a sedan")
        say(first, "s1", "c2", SOUP)
        first.archive.embed_lines("s1")
        question = "How do I purchase an automobile?"
        assert nearest_texts(first, "s1", question)[0] == "I am saving to purchase a sedan"
        forget = second.archive.forgetter("s1", ["I am saving to purchase a sedan"])
        assert forget is not None
        second.threads.put_many({}, also=forget)
        assert nearest_texts(first, "s1", question) == [SOUP]  # its cache is read again
    finally:
        first.threads.close()
        second.threads.close()


def test_older_lines_get_vectors_newest_first_a_batch_an_upkeep(
    embedded: ConversationMemory, concepts: ConceptEmbeddings
) -> None:
    from memory.archive.embedding import EMBED_BATCH

    for n in range(EMBED_BATCH + 3):  # lines of a release without embeddings
        say(embedded, "s1", "c1", f"dinner number {n}")
    assert embedded.archive.embed_lines("s1") == EMBED_BATCH
    assert concepts.documents[-1][0] == f"dinner number {EMBED_BATCH + 2}"  # the newest
    assert embedded.archive.embed_lines("s1") == 3
    assert concepts.documents[-1] == ["dinner number 2", "dinner number 1", "dinner number 0"]
    assert embedded.archive.embed_lines("s1") == 0


def test_a_line_without_a_vector_ranks_by_its_words_alone(
    embedded: ConversationMemory, concepts: ConceptEmbeddings
) -> None:
    say(embedded, "s1", "c1", INSURANCE)
    say(embedded, "s1", "c2", SOUP)
    # no upkeep has embedded them: found by BM25, and never by a distance
    assert nearest_texts(embedded, "s1", QUESTION) == []
    assert hits(embedded, "s1", "What did I tell you about the insurance renewal?") == [INSURANCE]
    embedded.archive.embed_lines("s1")
    assert nearest_texts(embedded, "s1", QUESTION)[0] == INSURANCE


LINES = (
    "We moored the boat in Vigo harbour for the winter",
    "My sister's wedding is in June, in Porto",
    "I switched the lentil soup recipe to red lentils",
    "The car insurance renewal letter came on Monday",
    "I am learning to play the cello, slowly",
    "Our flight to Lisbon leaves at seven in the morning",
)


@pytest.mark.sqlite_only  # (opens both itself)
def test_both_backends_rank_the_same_archive_the_same_way(
    tmp_path: Any, postgres_server: str | None
) -> None:
    if postgres_server is None:
        pytest.skip("PostgreSQL is not reachable")
    from memory import ThreadIds
    from memory.archive.archive import open_archive
    from memory.archive.embedding import LOCAL_DIMS, LOCAL_MODEL, ArchiveEmbeddings
    from memory.storage import open_thread_store
    from tests.conftest import SECRET, clean_postgres
    from tests.local_embeddings import LOCAL_EMBEDDINGS

    clean_postgres(postgres_server)
    found = []
    for url in (f"sqlite:///{tmp_path / 'a.sqlite'}", postgres_server):
        threads = open_thread_store(url, vectors=True)
        config = ArchiveEmbeddings(LOCAL_EMBEDDINGS, LOCAL_MODEL, LOCAL_DIMS)
        memory = ConversationMemory(
            threads,
            ThreadIds(SECRET),
            archive=open_archive(
                threads, ThreadIds(SECRET), embeddings=config, judge=LOCAL_EMBEDDINGS
            ),
        )
        try:
            for n, line in enumerate(LINES):
                say(memory, "s1", f"c{n}", line)
            assert memory.archive.embed_lines("s1") == len(LINES)
            assert memory.archive.vectors is not None
            vector = LOCAL_EMBEDDINGS.embed_query("where did we leave the boat?")
            nearest = memory.archive.vectors.nearest(memory.ids.session_key("s1"), vector, 4)
            recalled = hits(memory, "s1", "Do you remember where we moored the boat?")
            found.append(
                ([line.text for line in nearest], [line.distance for line in nearest], recalled)
            )
        finally:
            threads.close()
    (sqlite_texts, sqlite_distances, sqlite_hits), (pg_texts, pg_distances, pg_hits) = found
    assert sqlite_texts[0] == LINES[0]
    assert pg_texts == sqlite_texts and pg_hits == sqlite_hits
    assert pg_distances == pytest.approx(sqlite_distances, abs=1e-5)
