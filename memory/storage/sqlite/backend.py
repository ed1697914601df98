"""Opening a SQLite database: checkpointer, documents, locks and long-term items on one
connection."""

from __future__ import annotations

import functools
import os
from pathlib import Path

from memory.files import PRIVATE_FILE_MODE, make_private_dir
from memory.storage.locks import FileLocks, KeyedLocks
from memory.storage.sqlite.checkpointer import SqliteCheckpointer
from memory.storage.sqlite.connection import (
    SETUP_LOCK_KEY,
    SQLITE_BUSY_TIMEOUT_S,
    SQLITE_JOURNAL_SIZE_LIMIT,
    SQLITE_WAL_AUTOCHECKPOINT_PAGES,
    connect,
    vector_driver,
)
from memory.storage.sqlite.documents import SqliteDocuments
from memory.storage.sqlite.items import open_sqlite_items
from memory.storage.threads import ThreadStore


def open_sqlite(path: Path | None, *, lock_timeout: float, vectors: bool = False) -> ThreadStore:
    """The thread store of a SQLite file (None: in memory, this process only), all on
    one connection; with `vectors`, one that holds vector indexes (`connection.connect`).

    Conversations are private data: SQLite creates the WAL and shared-memory files with
    the database file's mode, so creating that file 0600 first keeps all of them private
    (an existing one, or a side file, that others can read is narrowed to 0600).
    """
    if vectors:
        vector_driver()  # a missing driver refuses before any file is created
    if path is not None:
        make_private_dir(path.parent)
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE))
        for candidate in (path.with_name(path.name + s) for s in ("", "-wal", "-shm")):
            if candidate.exists() and candidate.stat().st_mode & 0o077:
                candidate.chmod(PRIVATE_FILE_MODE)
    conn = connect(str(path) if path else ":memory:", vectors=vectors)
    conn.execute(f"PRAGMA journal_size_limit = {SQLITE_JOURNAL_SIZE_LIMIT}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {SQLITE_WAL_AUTOCHECKPOINT_PAGES}")
    # WAL + NORMAL never corrupts and survives process crashes; a power cut may lose
    # the last transactions, an accepted trade for conversation memory.
    conn.execute("PRAGMA synchronous = NORMAL")
    # a deleted row's bytes are zeroed, in its page and in pages freed, rather than left
    # in free space until they happen to be reused or a VACUUM rewrites the file
    conn.execute("PRAGMA secure_delete = ON")
    checkpointer = SqliteCheckpointer(conn)
    documents = SqliteDocuments(checkpointer)
    locks = FileLocks(path.with_name(path.name + ".locks")) if path else KeyedLocks()
    with locks.hold(SETUP_LOCK_KEY, SQLITE_BUSY_TIMEOUT_S):
        checkpointer.setup()
        documents.setup()

    return ThreadStore(
        checkpointer,
        documents,
        locks,
        lock_timeout=lock_timeout,
        on_close=conn.close,
        open_items=functools.partial(open_sqlite_items, checkpointer, locks),
    )
