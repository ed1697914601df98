"""Storage: the run threads' checkpointer, the memory documents beside it and the
long-term items, on one database (SQLite or PostgreSQL), with cross-process locks.

`ThreadStore` (`memory.storage.threads`) is what memory's services read and write
through; `open_thread_store` (`memory.storage.urls`) opens the one a URL names. The
pure parts of memory (schema, limits, context, budget, registry, write rules, ...)
never import this package (`tests/unit/test_layering.py`).
"""

from memory.storage.threads import ThreadStore, storage_errors
from memory.storage.urls import (
    DEFAULT_DATABASE_URL,
    iter_thread_ids,
    open_thread_store,
    parse_database_url,
)

__all__ = [
    "DEFAULT_DATABASE_URL",
    "ThreadStore",
    "iter_thread_ids",
    "open_thread_store",
    "parse_database_url",
    "storage_errors",
]
