"""The shared SQLite connection: its driver, its transactions (what a deletion leaves
behind included), the setup lock."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing, contextmanager
from typing import Any, cast

from memory.errors import VECTOR_DRIVER_MISSING, UnsupportedDatabaseUrl

logger = logging.getLogger(__name__)

SQLITE_BUSY_TIMEOUT_S = 30.0
TRUNCATE_WAIT_MS = 1_000
"""How long a deletion waits, once committed, for other processes' readers to let it
truncate the WAL (it holds the connection, and its caller waits)."""
SQLITE_JOURNAL_SIZE_LIMIT = 1 << 20  # the WAL is truncated back to 1 MiB after checkpoints
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 256  # checkpoint the WAL into the database every ~1 MiB
SETUP_LOCK_KEY = "sqlite-setup"
"""Serialises `setup()` (tables, WAL mode) of processes opening a new file together."""
_SCRUBS: dict[int, dict[str, None]] = {}
"""By connection (its id, used under its lock): the statements its open transaction runs
before it commits, because it deleted or rewrote what a user said (`scrub_on_commit`)."""
VECTOR_PACKAGES = {"sqlean": "sqlean.py", "sqlite_vec": "sqlite-vec"}
"""The modules a connection with a vector index needs, by the package that installs them."""


def vector_driver() -> tuple[Any, Any]:
    """The modules of a connection with vectors, `sqlean` and `sqlite_vec`
    (`UnsupportedDatabaseUrl` names the package of one not installed)."""
    try:
        import sqlean  # type: ignore[import-untyped]
        import sqlite_vec  # type: ignore[import-untyped]
    except ImportError as exc:
        package = VECTOR_PACKAGES.get(exc.name or "", exc.name)
        raise UnsupportedDatabaseUrl(VECTOR_DRIVER_MISSING.format(package=package)) from None
    return sqlean, sqlite_vec


def connect(target: str, *, vectors: bool = False) -> sqlite3.Connection:
    """A connection to `target` (a file, or `:memory:`) that any thread may use.

    With `vectors` it is a `sqlean` connection with sqlite-vec loaded: `sqlean` is the
    standard library's DB-API module built with extension loading (this Python's
    `sqlite3` may have none), so everything else runs on it unchanged and the vector
    index lives in the same file.
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
            for statement in _SCRUBS.get(id(conn), ()):
                cur.execute(statement)
        except BaseException:
            _SCRUBS.pop(id(conn), None)
            conn.rollback()
            raise
        conn.commit()
        if _SCRUBS.pop(id(conn), None) is not None:
            truncate_wal(conn)


def scrub_on_commit(cursor: sqlite3.Cursor, *statements: str) -> None:
    """Mark the transaction of `cursor` (a `sqlite_transaction`'s) as one that deleted or
    rewrote what a user said: `statements` (clearing what is no row of a table, an FTS5
    index's merged-away terms) run just before it commits, and then the WAL, which still
    holds the pages as they were (`secure_delete` zeroes only the new ones), is
    checkpointed and truncated."""
    _SCRUBS.setdefault(id(cursor.connection), {}).update(dict.fromkeys(statements))


def truncate_wal(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the database file and truncate it to nothing (the caller holds
    the connection's lock, outside a transaction). A reader of another process on an
    older snapshot makes it wait, at most `TRUNCATE_WAIT_MS`, then leave the WAL as it
    is: the next truncation (a deletion's, `gc`'s) clears it."""
    conn.execute(f"PRAGMA busy_timeout = {TRUNCATE_WAIT_MS}")
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(SQLITE_BUSY_TIMEOUT_S * 1000)}")
    if busy:
        logger.info("the WAL was not truncated after a deletion: another process reads")
