"""The archive with embeddings in tests: a deterministic stand-in for an embeddings model
(no network) whose synonyms share a direction, and the helpers of the tests that use
it (`tests/unit/test_archive_embeddings.py`, `test_archive_vectors.py`; their fixtures
are in `tests/unit/conftest.py`)."""

from __future__ import annotations

import re
import uuid
from typing import Any

from langchain_core.embeddings import Embeddings

from memory import ThreadIds
from memory.archive.archive import open_archive
from memory.archive.embedding import ArchiveEmbeddings, local_embeddings
from memory.conversations import ConversationMemory
from memory.storage import ThreadStore, open_thread_store
from memory.turns import TurnStatus, chat_turn
from tests.conftest import SECRET

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
QUESTION = "Should I buy the car we talked about?"


class ConceptEmbeddings(Embeddings):
    """Each known word adds to its concept's dimension: synonyms share a direction.
    Records every call, and whether the database's lock was held across it: a recall's
    lexical search may hold it for a moment beside the message's embedding (in a worker
    thread), but a caller holding it while it waits for the call never lets it go."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.documents: list[list[str]] = []
        self.queries: list[str] = []
        self.locked_during_a_call = False
        self.lock: Any = None

    def _vector(self, text: str) -> list[float]:
        if self.lock is not None:
            if self.lock.acquire(timeout=2.0):
                self.lock.release()
            else:
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
    archive = open_archive(threads, ids, embeddings=config, judge=local_embeddings())
    if isinstance(embeddings, ConceptEmbeddings):
        embeddings.lock = getattr(threads.documents, "lock", None)  # (SQLite's)
    return ConversationMemory(threads, ids, archive=archive)


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
    """`(line id, session key)` of every stored vector, on either backend."""
    documents: Any = threads.documents
    if documents.dialect == "postgresql":
        with documents.pool.connection() as conn:
            rows = conn.execute("SELECT id, session_key FROM archive_vectors").fetchall()
        return sorted((row["id"], row["session_key"]) for row in rows)
    with documents.lock:
        return sorted(documents.conn.execute("SELECT id, session_key FROM archive_vectors"))


def nearest_texts(memory: ConversationMemory, session: str, text: str) -> list[str]:
    """The session's lines nearest `text`'s embedding, as the vector index reads them."""
    assert memory.archive.vectors is not None
    vector = ConceptEmbeddings().embed_query(text)
    found = memory.archive.vectors.nearest(memory.ids.session_key(session), vector, 50)
    return [line.text for line in found]
