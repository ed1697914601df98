"""The archive with embeddings (`AGENT_EMBEDDINGS_MODEL`) on SQLite: the connection that
holds the vector index, lines embedded after the turn, recall fused with the nearest
lines, the session's own only, vectors gone with their lines, and a failure of the
embeddings leaving recall lexical. Embeddings here are a deterministic stand-in (no
network); `tests/integration/test_openai_longterm.py` runs the real client."""

from __future__ import annotations

import re
import sqlite3
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.checkpoint.memory import InMemorySaver

from agent.models import load_embeddings
from agent.runtime import open_memory
from agent.settings import Settings
from graphs.agent import build_agent_graph
from memory import InvalidInput, ThreadIds, UnsupportedDatabaseUrl
from memory.archive.archive import open_archive
from memory.archive.embedding import ArchiveEmbeddings
from memory.conversations import ConversationMemory
from memory.storage import ThreadStore, open_thread_store
from memory.turns import TurnStatus, chat_turn
from tests.conftest import SECRET
from tests.fakes import ScriptedModel
from tests.graph_support import run_graph

pytestmark = pytest.mark.sqlite_only  # PostgreSQL has no archive index: it refuses, below

DIMS = 8
CONCEPTS = {
    **dict.fromkeys(["car", "automobile", "sedan", "hatchback"], 0),
    **dict.fromkeys(["buy", "purchase", "saving", "afford"], 1),
    **dict.fromkeys(["insurance", "renewal", "form", "letter"], 2),
    **dict.fromkeys(["soup", "lentil", "dinner"], 3),
    **dict.fromkeys(["boat", "moored", "harbour", "vigo"], 4),
}
# "buy" and "purchase", "car" and "automobile" share no word: only their vectors meet
SAVING = "Saving to purchase an automobile, a small car"
HATCHBACK = "A hatchback or a sedan, we could afford one"
INSURANCE = "Buy the car insurance renewal form letter"
SOUP = "Lentil soup for dinner tonight"
QUESTION = "Should I buy a car?"


class ConceptEmbeddings(Embeddings):
    """Each known word adds to its concept's dimension: synonyms share a direction.
    Records every call, and whether the database's lock was held during it."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.documents: list[list[str]] = []
        self.queries: list[str] = []
        self.locked_during_a_call = False
        self.lock: Any = None

    def _vector(self, text: str) -> list[float]:
        if self.lock is not None and self.lock.locked():
            self.locked_during_a_call = True
        if self.fail:
            raise ConnectionError("the embeddings endpoint is down")
        vector = [0.0] * DIMS
        for word in re.findall(r"\w+", text.casefold()):
            if word in CONCEPTS:
                vector[CONCEPTS[word]] += 1.0
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.documents.append(list(texts))
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        self.queries.append(text)
        return self._vector(text)


def open_embedded(
    url: str, embeddings: Embeddings | None, model: str = "concepts"
) -> ConversationMemory:
    threads = open_thread_store(url, vectors=embeddings is not None)
    ids = ThreadIds(SECRET)
    config = None if embeddings is None else ArchiveEmbeddings(embeddings, model, DIMS)
    archive = open_archive(threads, ids, embeddings=config)
    if isinstance(embeddings, ConceptEmbeddings):
        embeddings.lock = threads.documents.lock  # type: ignore[attr-defined]
    return ConversationMemory(threads, ids, archive=archive)


@pytest.fixture
def concepts() -> ConceptEmbeddings:
    return ConceptEmbeddings()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agent.sqlite'}"


@pytest.fixture
def embedded(url: str, concepts: ConceptEmbeddings) -> Iterator[ConversationMemory]:
    memory = open_embedded(url, concepts)
    yield memory
    memory.threads.close()


def say(memory: ConversationMemory, session: str, conversation: str, user: str) -> str:
    """Write one turn (accepting the conversation first); returns its user message id."""
    if not memory.registry(session).owns(conversation):
        memory.accept_draft(session, conversation)
    turn = uuid.uuid4().hex
    ids = {"user_message_id": f"{turn}-u", "assistant_message_id": f"{turn}-a"}
    memory.write_turn(session, conversation, chat_turn(user, "Noted.", TurnStatus.COMPLETED, **ids))
    return f"{turn}-u"


def hits(memory: ConversationMemory, session: str, text: str) -> list[str]:
    """The user lines a new conversation's turn about `text` recalls, best first."""
    state = memory.read_memory(session, "new")
    recall = memory.recall(session, "new", text, state)
    return [line.text for group in recall.groups for line in group if line.role == "user"]


def vectors(threads: ThreadStore) -> list[tuple[int, str]]:
    documents: Any = threads.documents
    with documents.lock:
        return sorted(documents.conn.execute("SELECT id, session_key FROM archive_vectors"))


def embedding_settings(tmp_path: Path) -> Settings:
    # the client is built, never called: these tests make no request
    return Settings(
        data_dir=tmp_path, openai_api_key="k", embeddings_model="m", embeddings_dims=DIMS
    )


def test_without_embeddings_the_database_is_the_standard_librarys_sqlite3(
    tmp_path: Path, url: str
) -> None:
    memory = open_memory(Settings(data_dir=tmp_path), database_url=url, secret=SECRET)
    try:
        conn = memory.threads.documents.conn  # type: ignore[attr-defined]
        assert type(conn) is sqlite3.Connection and not memory.archive.embeds
        say(memory, "s1", "c1", SAVING)
        stored = memory.read_memory("s1", "c1")
        assert (stored.embedding_owed, stored.upkeep) == (None, "done")  # no upkeep owed
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert not any(name.startswith("archive_vector") for name in tables)
    finally:
        memory.threads.close()


def test_with_embeddings_the_database_is_sqlean_with_sqlite_vec(tmp_path: Path, url: str) -> None:
    memory = open_memory(embedding_settings(tmp_path), database_url=url, secret=SECRET)
    try:
        conn: Any = memory.threads.documents.conn  # type: ignore[attr-defined]
        assert type(conn).__module__ == "sqlean.dbapi2" and memory.archive.embeds
        assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v0.1")
    finally:
        memory.threads.close()


@pytest.mark.parametrize(
    ("module", "package"), [("sqlean", "sqlean.py"), ("sqlite_vec", "sqlite-vec")]
)
def test_a_missing_driver_is_named_and_nothing_opens(
    url: str, module: str, package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # an import of it fails, as when absent
    missing = rf"AGENT_EMBEDDINGS_MODEL.* needs {re.escape(package)}, which is not installed"
    with pytest.raises(UnsupportedDatabaseUrl, match=missing):
        open_thread_store(url, vectors=True)
    assert not Path(url.removeprefix("sqlite:///")).exists()  # refused before any file


def test_a_line_is_recalled_by_meaning_ahead_of_a_lexically_better_one(
    url: str, concepts: ConceptEmbeddings
) -> None:
    for embeddings in (None, concepts):
        memory = open_embedded(url.replace(".sqlite", f"-{embeddings is None}.sqlite"), embeddings)
        for conversation, text in enumerate([SAVING, HATCHBACK, INSURANCE, SOUP]):
            say(memory, "s1", f"c{conversation}", text)
        assert memory.archive.embed_lines("s1") == (0 if embeddings is None else 4)
        found = hits(memory, "s1", QUESTION)
        memory.threads.close()
        if embeddings is None:  # by words alone: the line sharing both words comes first
            assert found == [INSURANCE, SAVING]
    # fused with the nearest lines: the purchase of an automobile comes first, the
    # hatchback (no word in common) is near enough, the soup is not
    assert found == [SAVING, INSURANCE, HATCHBACK]
    assert concepts.queries == [QUESTION] and not concepts.locked_during_a_call


def test_the_nearest_lines_are_the_sessions_own(embedded: ConversationMemory) -> None:
    say(embedded, "s2", "x1", SAVING)
    say(embedded, "s2", "x2", QUESTION)
    say(embedded, "s1", "c1", SOUP)
    assert embedded.archive.embed_lines("s1") == 1 and embedded.archive.embed_lines("s2") == 2
    assert hits(embedded, "s1", QUESTION) == []
    assert set(hits(embedded, "s2", QUESTION)) == {QUESTION, SAVING}
    key = embedded.ids.session_key("s1")
    assert embedded.archive.vectors is not None
    nearest = embedded.archive.vectors.nearest(key, [1.0] * DIMS, 50)
    assert [line.text for line in nearest] == [SOUP]


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
    embedded.archive.forget_session("s1")
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


def nearest_texts(memory: ConversationMemory, session: str, text: str) -> list[str]:
    """The session's lines nearest `text`'s embedding, as the vector index reads them."""
    assert memory.archive.vectors is not None
    vector = ConceptEmbeddings().embed_query(text)
    found = memory.archive.vectors.nearest(memory.ids.session_key(session), vector, 50)
    return [line.text for line in found]


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


def test_a_rewrite_that_could_not_reach_the_vectors_takes_them_out_of_use(
    url: str, concepts: ConceptEmbeddings
) -> None:
    memory = open_embedded(url, concepts)
    say(memory, "s1", "c1", "Lentil soup for dinner. Also saving to purchase a sedan")
    memory.archive.embed_lines("s1")
    memory.threads.close()
    plain = open_embedded(url, None)  # a process without embeddings forgets the sentence
    plain.threads.put_many({}, also=plain.archive.forgetter("s1", ["saving to purchase a sedan"]))
    plain.threads.close()
    memory = open_embedded(url, concepts)
    try:
        # that process had no vec0: the vector, computed from a text the line no longer
        # reads, is deleted when a process with embeddings opens the file
        assert vectors(memory.threads) == []
        assert nearest_texts(memory, "s1", "How do I purchase an automobile?") == []
        assert memory.archive.embed_lines("s1") == 0  # nor is "[forgotten]" embedded
    finally:
        memory.threads.close()


def test_vectors_of_another_model_are_dropped(url: str, concepts: ConceptEmbeddings) -> None:
    memory = open_embedded(url, concepts)
    say(memory, "s1", "c1", SAVING)
    memory.archive.embed_lines("s1")
    memory.threads.close()
    other = open_embedded(url, concepts, model="another")
    try:
        assert vectors(other.threads) == []  # another space: nothing to compare with
        assert other.archive.embed_lines("s1") == 1
    finally:
        other.threads.close()


def test_vectors_a_process_without_embeddings_left_behind_go_when_they_are_back(
    url: str, concepts: ConceptEmbeddings, caplog: pytest.LogCaptureFixture
) -> None:
    # a process without embeddings cannot reach the vectors of the lines it deletes or
    # rewrites (an embedding can be partly turned back into its text): it says so, and
    # the next process with embeddings deletes them
    memory = open_embedded(url, concepts)
    say(memory, "s1", "c1", SAVING)
    say(memory, "s2", "x1", SOUP)
    memory.archive.embed_lines("s1")
    memory.archive.embed_lines("s2")
    memory.threads.close()
    plain = open_embedded(url, None)
    assert "keep their vectors in the file" in caplog.text
    plain.archive.forget_session("s1")
    plain.threads.close()
    back = open_embedded(url, concepts)
    try:
        kept = vectors(back.threads)
        assert [key for _, key in kept] == [back.ids.session_key("s2")]
    finally:
        back.threads.close()


def agent_graph(memory: ConversationMemory, *replies: str) -> Any:
    model = ScriptedModel(replies=list(replies))
    graph = build_agent_graph(model=model, memory=memory, extraction="off")
    return graph.compile(checkpointer=InMemorySaver())


def test_the_upkeep_embeds_a_turns_line_after_the_reply(
    embedded: ConversationMemory, concepts: ConceptEmbeddings
) -> None:
    graph = agent_graph(embedded, "Good plan.", "Yes.")
    final, _ = run_graph(graph, {"message": SAVING}, conversation="c1", upkeep="deferred")
    # the reply path embedded the message for recall, and no line
    assert final["upkeep"] == "pending" and concepts.documents == []
    assert vectors(embedded.threads) == []
    stored = embedded.read_memory("s1", "c1")
    assert stored.embedding_owed is not None
    _, events = run_graph(graph, {"catch_up": True}, conversation="c1")
    assert concepts.documents == [[SAVING]] and len(vectors(embedded.threads)) == 1
    assert {"event": "memory", "stage": "embed", "status": "succeeded", "lines": 1} in events
    settled = embedded.read_memory("s1", "c1")
    assert (settled.embedding_owed, settled.upkeep) == (None, "done")
    final, events = run_graph(graph, {"message": QUESTION}, conversation="c2")
    recalled = next(e for e in events if e.get("stage") == "recall")
    assert final["status"] == "completed" and len(recalled["lines"]) >= 1
    assert not concepts.locked_during_a_call


def test_failing_embeddings_leave_recall_lexical_and_the_turn_standing(url: str) -> None:
    failing = ConceptEmbeddings(fail=True)
    memory = open_embedded(url, failing)
    try:
        graph = agent_graph(memory, "Noted.", "Here is what you said.")
        final, events = run_graph(graph, {"message": INSURANCE}, conversation="c1")
        assert final["status"] == "completed" and final["answer"] == "Noted."
        assert final["upkeep"] == "failed"  # the embedding step failed; the turn stands
        assert {"event": "memory", "stage": "embed", "status": "failed"} in events
        assert (
            vectors(memory.threads) == [] and memory.read_memory("s1", "c1").embedding_owed is None
        )
        final, events = run_graph(
            graph, {"message": QUESTION}, conversation="c2", upkeep="deferred"
        )
        assert final["status"] == "completed" and not final["degraded"]
        recalled = next(e for e in events if e.get("stage") == "recall")
        said = memory.search("s1", "insurance", limit=5)
        assert recalled["lines"] == [h.id for h in said if h.role == "user"]  # by its words
        assert failing.queries[-1] == QUESTION
    finally:
        memory.threads.close()


def test_postgresql_refuses_embeddings_naming_pgvector(
    tmp_path: Path, postgres_server: str | None
) -> None:
    if postgres_server is None:
        pytest.skip("PostgreSQL is not reachable")
    with pytest.raises(UnsupportedDatabaseUrl, match=r"AGENT_EMBEDDINGS_MODEL.*pgvector"):
        open_memory(embedding_settings(tmp_path), database_url=postgres_server, secret=SECRET)


def test_embeddings_without_an_endpoint_are_refused_with_a_clear_message() -> None:
    # the offline model has no embeddings: a clear error, not the client's own at start-up
    settings = Settings(embeddings_model="text-embedding-3-small", openai_api_key=None)
    with pytest.raises(InvalidInput, match="neither OPENAI_API_KEY nor OPENAI_BASE_URL"):
        load_embeddings(settings)
    local = settings.model_copy(update={"openai_base_url": "http://127.0.0.1:9/v1"})
    assert load_embeddings(local) is not None  # a local endpoint takes any key
