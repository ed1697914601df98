"""The shared SQLite connection: its driver, its transactions, its file's privacy, the
setup lock."""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, cast

from memory.errors import VECTOR_DRIVER_MISSING, UnsupportedDatabaseUrl
from memory.files import PRIVATE_FILE_MODE, make_private_dir

SQLITE_BUSY_TIMEOUT_S = 30.0
SQLITE_JOURNAL_SIZE_LIMIT = 1 << 20  # the WAL is truncated back to 1 MiB after checkpoints
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 256  # checkpoint the WAL into the database every ~1 MiB
SETUP_LOCK_KEY = "sqlite-setup"
"""Serialises `setup()` (tables, WAL mode) of processes opening a new file together."""
SQLITE_SIDE_FILES = ("-wal", "-shm")
VECTOR_PACKAGES = {"sqlean": "sqlean.py", "sqlite_vec": "sqlite-vec"}
"""The modules a connection with a vector index needs, by the package that installs them."""


def vector_driver() -> tuple[Any, Any]:
    """The modules of a connection with vectors: `sqlean` and `sqlite_vec`.

    Raises:
        UnsupportedDatabaseUrl: one of them is not installed (named by its package).
    """
    try:
        import sqlean  # type: ignore[import-untyped]
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError as exc:
        package = VECTOR_PACKAGES.get(exc.name or "", exc.name)
        raise UnsupportedDatabaseUrl(VECTOR_DRIVER_MISSING.format(package=package)) from None
    return sqlean, sqlite_vec


def connect(target: str, *, vectors: bool = False) -> sqlite3.Connection:
    """A connection to `target` (a file, or `:memory:`) that any thread may use.

    Without `vectors` it is the standard library's `sqlite3`. With `vectors` it is a
    `sqlean` connection with sqlite-vec loaded: `sqlean` is the standard library's
    DB-API module built with extension loading (this Python's `sqlite3` may have none),
    so LangGraph's saver and store, the documents and the archive run on it unchanged,
    and the vector index (vec0 tables) lives in the same file.

    Raises:
        UnsupportedDatabaseUrl: `vectors`, and `sqlean.py` or `sqlite-vec` is missing.
    """
    if not vectors:
        return sqlite3.connect(target, check_same_thread=False, timeout=SQLITE_BUSY_TIMEOUT_S)
    sqlean, sqlite_vec = vector_driver()
    conn = sqlean.connect(target, check_same_thread=False, timeout=SQLITE_BUSY_TIMEOUT_S)
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:  # no later statement may load a library
        conn.enable_load_extension(False)
    # the same DB-API, another module: typed as the standard library's everywhere else
    return cast(sqlite3.Connection, conn)


@contextmanager
def sqlite_transaction(conn: sqlite3.Connection, lock: threading.Lock) -> Iterator[sqlite3.Cursor]:
    """One write transaction on the shared connection, under its lock.

    `BEGIN IMMEDIATE` takes the file's write lock first (waiting up to the busy
    timeout): a transaction that reads before it writes then never fails on another
    process's commit in between.
    """
    with lock, closing(conn.cursor()) as cur:
        if conn.in_transaction:  # an upstream statement left its implicit one open
            conn.commit()
        cur.execute("BEGIN IMMEDIATE")
        try:
            yield cur
        except BaseException:
            conn.rollback()
            raise
        conn.commit()


def create_private(path: Path) -> None:
    """Create `path` (and missing parents) readable by this user only: conversations are
    private data. Existing files keep their mode, except that a database file and its
    WAL and shared-memory files are narrowed to 0600."""
    make_private_dir(path.parent)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE))
    for candidate in (path, *(path.with_name(path.name + s) for s in SQLITE_SIDE_FILES)):
        if candidate.exists() and candidate.stat().st_mode & 0o077:
            candidate.chmod(PRIVATE_FILE_MODE)
