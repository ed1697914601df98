"""How the archive embeds its lines (with `AGENT_EMBEDDINGS_MODEL`): the embeddings, their
model and size, and how far a line found only by its embedding may be from a message."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.embeddings import Embeddings

from memory.archive.lines import ArchivedLine
from memory.limits import DEFAULT_RECALL_DISTANCE

EMBED_BATCH = 64
"""The session's newest lines an upkeep looks at, and embeds when they have no vector: a
turn's own, and those a failed or crashed upkeep left (older lines stay lexical only)."""
EMBED_CHARS = 2_000
"""Characters of a text sent to the embeddings (a recalled line shows fewer): a long text
must not fail every later upkeep on the model's input limit."""


@dataclass(frozen=True)
class ArchiveEmbeddings:
    """The archive's embeddings.

    Attributes:
        embeddings: computes them (`OpenAIEmbeddings` from the settings, or a test's).
        model: their model's name: vectors stored by another model are dropped.
        dims: their dimensions (`AGENT_EMBEDDINGS_DIMS`).
        max_distance: the farthest a line sharing no subject term with a message may be
            from it (cosine distance) and still be recalled.
    """

    embeddings: Embeddings
    model: str
    dims: int
    max_distance: float = DEFAULT_RECALL_DISTANCE


class VectorBackend(Protocol):
    """The archive's vectors on one database (the user's lines only: `EMBEDDED_ROLES`)."""

    def nearest(self, session_key: str, vector: Sequence[float], limit: int) -> list[ArchivedLine]:
        """The session's lines nearest `vector`, nearest first, each with its neighbours."""

    def unembedded(self, session_key: str, limit: int) -> list[tuple[int, str]]:
        """Among the session's newest `limit` lines, `(id, text)` of those without a
        vector of their text."""

    def add(self, session_key: str, embedded: Sequence[tuple[int, str, Sequence[float]]]) -> int:
        """Store `(line id, text, vector)` for the lines that still read that text, in a
        transaction of its own; returns how many were stored."""
