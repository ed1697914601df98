"""Storage: the run threads' checkpointer, the memory documents beside it and the
long-term items, on one database (SQLite or PostgreSQL), with cross-process locks.

`ThreadStore` is what memory's services read and write through; `open_thread_store`
opens the one a URL names. The pure parts of memory never import this package, and
`ThreadStore` is imported on first use: the settings read the URL without loading a store.
"""

from typing import TYPE_CHECKING

from memory.lazy import lazy_exports
from memory.storage.urls import DEFAULT_DATABASE_URL, open_thread_store, parse_database_url

if TYPE_CHECKING:
    from memory.storage.threads import ThreadStore, storage_errors

__getattr__ = lazy_exports(__name__, {"memory.storage.threads": ("ThreadStore", "storage_errors")})

__all__ = [
    "DEFAULT_DATABASE_URL",
    "ThreadStore",
    "open_thread_store",
    "parse_database_url",
    "storage_errors",
]
