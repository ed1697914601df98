"""The packaged local embedding model, loaded once for the tests that run it for real
(`AGENT_EMBEDDINGS_MODEL=local`): a fifth of a second to load, ~50 ms a short text."""

from __future__ import annotations

from memory.archive.embedding import LocalEmbeddings

LOCAL_EMBEDDINGS = LocalEmbeddings(threads=1)
