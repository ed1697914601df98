"""Fixtures of the unit tests of the archive with embeddings (`tests/archive_vectors.py`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memory.conversations import ConversationMemory
from tests.archive_vectors import ConceptEmbeddings, open_embedded


@pytest.fixture
def concepts() -> ConceptEmbeddings:
    return ConceptEmbeddings()


@pytest.fixture
def vector_url(db_url: str) -> str:
    """A database for the archive with vectors: SQLite, and PostgreSQL unless the module
    (or test) is marked `sqlite_only`."""
    return db_url


@pytest.fixture
def embedded(vector_url: str, concepts: ConceptEmbeddings) -> Iterator[ConversationMemory]:
    memory = open_embedded(vector_url, concepts)
    yield memory
    memory.threads.close()
