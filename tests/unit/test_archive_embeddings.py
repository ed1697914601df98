"""The archive with embeddings (`AGENT_EMBEDDINGS_MODEL`) on SQLite: the connection that
holds the vector index, lines embedded after the turn, recall fused with the nearest
lines, the session's own only, and a failure of the embeddings leaving recall lexical
(the vectors' lifecycle: `test_archive_vectors.py`). Embeddings here are a deterministic
stand-in (no network, `tests/archive_vectors.py`); `tests/integration/
test_openai_longterm.py` runs the real client."""

from __future__ import annotations

import re
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from agent.models import RecentEmbeddings, load_embeddings
from agent.runtime import open_long_term, open_memory
from agent.settings import Settings
from graphs.agent import build_agent_graph, build_upkeep
from memory import InvalidInput, UnsupportedDatabaseUrl
from memory.archive.archive import open_archive
from memory.archive.embedding import (
    LOCAL_DIMS,
    LOCAL_MAX_DISTANCE,
    LOCAL_MODEL,
    ArchiveEmbeddings,
    LocalEmbeddings,
    local_embeddings,
)
from memory.conversations import ConversationMemory
from memory.ids import ThreadIds
from memory.storage import open_thread_store
from tests.archive_vectors import (
    DIMS,
    HATCHBACK,
    INSURANCE,
    QUESTION,
    SAVING,
    SOUP,
    ConceptEmbeddings,
    hits,
    open_embedded,
    say,
    vectors,
)
from tests.conftest import SECRET
from tests.fakes import ScriptedModel
from tests.graph_support import run_graph, run_upkeep

pytestmark = pytest.mark.sqlite_only  # PostgreSQL's vectors: test_archive_vectors.py


def embedding_settings(tmp_path: Path) -> Settings:
    # the client is built, never called: these tests make no request
    return Settings(
        data_dir=tmp_path, openai_api_key="k", embeddings_model="m", embeddings_dims=DIMS
    )


def test_without_embeddings_the_database_is_the_standard_librarys_sqlite3(
    tmp_path: Path, vector_url: str
) -> None:
    memory = open_memory(Settings(data_dir=tmp_path), database_url=vector_url, secret=SECRET)
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


def test_with_embeddings_the_database_is_sqlean_with_sqlite_vec(
    tmp_path: Path, vector_url: str
) -> None:
    memory = open_memory(embedding_settings(tmp_path), database_url=vector_url, secret=SECRET)
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
    vector_url: str, module: str, package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # an import of it fails, as when absent
    missing = rf"AGENT_EMBEDDINGS_MODEL.* needs {re.escape(package)}, which is not installed"
    with pytest.raises(UnsupportedDatabaseUrl, match=missing):
        open_thread_store(vector_url, vectors=True)
    assert not Path(vector_url.removeprefix("sqlite:///")).exists()  # refused before any file


def test_a_line_is_recalled_by_meaning_ahead_of_a_lexically_better_one(
    vector_url: str, concepts: ConceptEmbeddings
) -> None:
    for embeddings in (None, concepts):
        memory = open_embedded(
            vector_url.replace(".sqlite", f"-{embeddings is None}.sqlite"), embeddings
        )
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


def test_a_recall_embeds_its_message_once_in_a_worker_beside_the_search(
    vector_url: str,
) -> None:
    # the judge's model ranks too (as `local` does): one call, off the calling thread
    # (the lexical search runs meanwhile), its vector both the judge's and the ranking's
    class Counting(LocalEmbeddings):
        def __init__(self) -> None:
            super().__init__()
            self.threads_used: list[str] = []

        def embed_query(self, text: str) -> list[float]:
            self.threads_used.append(threading.current_thread().name)
            return local_embeddings().embed_query(text)

    counting = Counting()
    threads = open_thread_store(vector_url, vectors=True)
    ids = ThreadIds(SECRET)
    config = ArchiveEmbeddings(counting, LOCAL_MODEL, LOCAL_DIMS, LOCAL_MAX_DISTANCE)
    archive = open_archive(threads, ids, embeddings=config, judge=counting)
    memory = ConversationMemory(threads, ids, archive=archive)
    try:
        say(memory, "s1", "c1", "My sister Alma moved to Lisbon in May")
        assert memory.archive.embed_lines("s1") == 1
        assert hits(memory, "s1", "what did I tell you about Alma?") != []
        assert len(counting.threads_used) == 1
        assert counting.threads_used[0] != threading.current_thread().name
    finally:
        threads.close()


def agent_graph(memory: ConversationMemory, *replies: str) -> Any:
    model = ScriptedModel(replies=list(replies))
    graph = build_agent_graph(model=model, memory=memory, extraction="off")
    return graph.compile(checkpointer=InMemorySaver())


def upkeep_graph(memory: ConversationMemory) -> Any:
    return build_upkeep(memory=memory, compaction_model=ScriptedModel(), extraction="off")


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
    _, events = run_upkeep(upkeep_graph(embedded), conversation="c1")
    assert concepts.documents == [[SAVING]] and len(vectors(embedded.threads)) == 1
    assert {"event": "memory", "stage": "embed", "status": "succeeded", "lines": 1} in events
    settled = embedded.read_memory("s1", "c1")
    assert (settled.embedding_owed, settled.upkeep) == (None, "done")
    final, events = run_graph(graph, {"message": QUESTION}, conversation="c2")
    recalled = next(e for e in events if e.get("stage") == "recall")
    assert final["status"] == "completed" and len(recalled["lines"]) >= 1
    assert not concepts.locked_during_a_call


def test_failing_embeddings_leave_recall_lexical_and_the_turn_standing(vector_url: str) -> None:
    failing = ConceptEmbeddings(fail=True)
    memory = open_embedded(vector_url, failing)
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
        assert recalled["lines"][:1] == [h.id for h in said if h.role == "user"]  # by its words
        assert failing.queries[-1] == QUESTION
    finally:
        memory.threads.close()


def test_on_postgresql_the_archive_has_vectors_and_an_endpoints_items_need_pgvector(
    tmp_path: Path, postgres_server: str | None
) -> None:
    if postgres_server is None:
        pytest.skip("PostgreSQL is not reachable")
    settings = embedding_settings(tmp_path)
    memory = open_memory(settings, database_url=postgres_server, secret=SECRET)
    try:
        assert memory.archive.embeds  # in the archive's own table: no pgvector needed
        # LangGraph's store indexes items only with pgvector: an endpoint's model says so
        with pytest.raises(UnsupportedDatabaseUrl, match=r"AGENT_EMBEDDINGS_MODEL.*pgvector"):
            open_long_term(settings, memory)
        # the local model keeps items lexical there instead of refusing to start
        local = settings.model_copy(update={"embeddings_model": "local"})
        assert not open_long_term(local, memory).semantic
    finally:
        memory.threads.close()


def test_embeddings_without_an_endpoint_are_refused_with_a_clear_message() -> None:
    # the offline model has no embeddings: a clear error, not the client's own at start-up
    settings = Settings(embeddings_model="text-embedding-3-small", openai_api_key=None)
    with pytest.raises(InvalidInput, match="neither OPENAI_API_KEY nor OPENAI_BASE_URL"):
        load_embeddings(settings)
    local = settings.model_copy(update={"openai_base_url": "http://127.0.0.1:9/v1"})
    assert load_embeddings(local) is not None  # a local endpoint takes any key


def test_a_text_asked_for_again_is_not_sent_again() -> None:
    # a turn asks for its message's vector up to three times (long-term recall, the
    # archive's recall, the archived line's): the endpoint is asked once
    concepts = ConceptEmbeddings()
    recent = RecentEmbeddings(concepts, size=2)
    assert recent.embed_documents([SAVING]) == [recent.embed_query(SAVING)]
    assert concepts.documents == [[SAVING]] and concepts.queries == []
    recent.embed_documents([SOUP, SAVING])  # a batch (lines an upkeep left) is sent as it is
    assert concepts.documents[-1] == [SOUP, SAVING]
    concepts.fail = True  # a failed request is not kept: the next one asks again
    with pytest.raises(ConnectionError):
        recent.embed_query(QUESTION)
    concepts.fail = False
    recent.embed_query(QUESTION)
    recent.embed_query(HATCHBACK)  # two texts kept at most: the oldest goes
    concepts.documents.clear()
    recent.embed_query(SAVING)
    assert concepts.documents == [[SAVING]]


def test_the_local_model_embeds_queries_and_passages_in_their_own_forms() -> None:
    import numpy as np

    from tests.local_embeddings import LOCAL_EMBEDDINGS

    texts = ["We moored the boat in Vigo harbour", "Lentil soup for dinner", "我们把船停在港口"]
    passages = np.array(LOCAL_EMBEDDINGS.embed_documents(texts))
    query = np.array(LOCAL_EMBEDDINGS.embed_query("where did we leave the boat?"))
    assert passages.shape == (3, LOCAL_DIMS) and query.shape == (LOCAL_DIMS,)
    assert np.linalg.norm(passages, axis=1) == pytest.approx([1.0, 1.0, 1.0], abs=1e-4)
    # e5's two forms: a text as a query is not the same vector as the text as a passage
    assert not np.allclose(LOCAL_EMBEDDINGS.embed_query(texts[0]), passages[0])
    similarity = passages @ query
    assert similarity[1] < min(similarity[0], similarity[2])  # the boat, in either language
    assert LOCAL_EMBEDDINGS.embed_documents([]) == []


def test_local_embeddings_need_no_endpoint_and_have_their_own_size(tmp_path: Path) -> None:
    from agent.runtime import archive_embeddings

    settings = Settings(data_dir=tmp_path, embeddings_model="local", openai_api_key=None)
    assert isinstance(load_embeddings(settings), LocalEmbeddings)  # offline too
    config = archive_embeddings(settings)
    assert config is not None and (config.model, config.dims) == (LOCAL_MODEL, LOCAL_DIMS)
    assert isinstance(config.embeddings, LocalEmbeddings)  # no query-as-passage cache


def test_the_local_model_embeds_a_query_asked_for_twice_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    local = LocalEmbeddings(threads=1)
    calls: list[str] = []

    class Model:
        def query(self, text: str) -> Any:
            import numpy as np

            calls.append(text)
            return np.ones(2, dtype=np.float32)

    monkeypatch.setattr(local, "_model", Model())
    # long-term recall and the archive's both embed the turn's message as a query
    assert local.embed_query("the boat") == local.embed_query("the boat") == [1.0, 1.0]
    assert calls == ["the boat"]
