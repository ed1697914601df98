"""Fixtures of the unit tests of the archive with embeddings (`tests/archive_vectors.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory.conversations import ConversationMemory
from tests.archive_vectors import ConceptEmbeddings, open_embedded


@pytest.fixture
def concepts() -> ConceptEmbeddings:
    return ConceptEmbeddings()


@pytest.fixture
def vector_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agent.sqlite'}"


@pytest.fixture
def embedded(vector_url: str, concepts: ConceptEmbeddings) -> Iterator[ConversationMemory]:
    memory = open_embedded(vector_url, concepts)
    yield memory
    memory.threads.close()
