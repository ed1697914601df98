"""Storage helpers for tests."""

from collections.abc import Iterator

from memory.storage import ThreadStore

MAINTENANCE_PREFIX = "maintenance:"


def iter_thread_ids(store: ThreadStore) -> Iterator[str]:
    """Every thread id with a document or a checkpoint; the database's own maintenance
    records (`maintenance:…`) belong to no session and are left out."""
    for thread_id in store.list_threads(""):
        if not thread_id.startswith(MAINTENANCE_PREFIX):
            yield thread_id
