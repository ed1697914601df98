"""Storage: the run threads' checkpointer, the memory documents beside it and the
long-term items, on one database (SQLite or PostgreSQL), with cross-process locks.

`ThreadStore` is what memory's services read and write through; `open_thread_store`
opens the one a database URL (`AGENT_DATABASE_URL`) names. The pure parts of memory
never import this package, and `ThreadStore` is imported on first use: the settings read
the URL without loading a store.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from memory.errors import UNSUPPORTED_DATABASE_URL, UnsupportedDatabaseUrl
from memory.lazy import lazy_exports
from memory.storage.locks import DEFAULT_LOCK_TIMEOUT

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

DEFAULT_DATABASE_URL = "sqlite:///.agent-data/agent.sqlite"
POSTGRES_EXTRA_MISSING = (
    "PostgreSQL storage needs the postgres extra: pip install 'langgraph-memory-agent[postgres]'"
)
SCHEMES = ("sqlite", "postgresql", "postgres")


@dataclass(frozen=True)
class DatabaseUrl:
    """A parsed `AGENT_DATABASE_URL`."""

    scheme: str
    location: str


def parse_database_url(url: str) -> DatabaseUrl:
    """Parse `sqlite:///relative.sqlite`, `sqlite:////abs.sqlite`, `sqlite:///:memory:`
    or `postgresql://…` (`UnsupportedDatabaseUrl`: any other form)."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in SCHEMES:
        raise UnsupportedDatabaseUrl(UNSUPPORTED_DATABASE_URL.format(url=url))
    if parts.scheme == "sqlite":
        location = unquote(parts.path[1:]) if parts.path.startswith("/") else ""
        if parts.netloc or not location:
            raise UnsupportedDatabaseUrl(UNSUPPORTED_DATABASE_URL.format(url=url))
        return DatabaseUrl("sqlite", location)
    return DatabaseUrl(parts.scheme, url)


def open_thread_store(
    database_url: str = DEFAULT_DATABASE_URL,
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    vectors: bool = False,
) -> ThreadStore:
    """Open the thread store that `database_url` names; with `vectors`, on a connection
    that can hold vector indexes (SQLite: sqlean.py with sqlite-vec)."""
    url = parse_database_url(database_url)
    if url.scheme == "sqlite":
        from memory.storage.sqlite.backend import open_sqlite

        path = None if url.location == ":memory:" else Path(url.location)
        return open_sqlite(path, lock_timeout=lock_timeout, vectors=vectors)
    # pgvector is the server's: whoever needs an index checks for it (the item store,
    # the archive), the pool is the same either way
    try:
        from memory.storage.postgres.backend import open_postgres
    except ImportError as exc:
        raise UnsupportedDatabaseUrl(POSTGRES_EXTRA_MISSING) from exc
    return open_postgres(url.location, lock_timeout=lock_timeout)
