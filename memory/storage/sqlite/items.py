"""The long-term item store on the checkpointer's SQLite connection (`SqliteStore`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager

from langgraph.store.base import BaseStore, IndexConfig, Item, Op, PutOp, Result, TTLConfig
from langgraph.store.sqlite import SqliteStore

from memory.errors import EMBEDDINGS_UNSUPPORTED, UnsupportedDatabaseUrl
from memory.storage.locks import KeyedLocks
from memory.storage.sqlite.checkpointer import SqliteCheckpointer
from memory.storage.sqlite.connection import (
    SETUP_LOCK_KEY,
    SQLITE_BUSY_TIMEOUT_S,
    scrub_on_commit,
    truncate_wal,
)

EXPIRED_SQL = (
    "SELECT prefix, key FROM store WHERE expires_at IS NOT NULL AND expires_at < CURRENT_TIMESTAMP"
)


class SharedSqliteStore(SqliteStore):
    """`SqliteStore` on the checkpointer's connection, under the checkpointer's lock, so
    both share one file (or one in-memory database) without interleaving transactions.

    Upstream commits a batch even when it fails half-way; here a failed batch rolls
    back, so a long-term write is all or nothing. Upstream also serves expired items
    until the sweep deletes them; here, with `omit_expired` in the TTL config (as
    `PostgresStore` reads it), reads leave them out.
    """

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run the batch; with `omit_expired`, leave out of what it read the items whose
        TTL ran out (the sweep's own test, through its index on `expires_at`)."""
        results = super().batch(ops)
        if not (self.ttl_config and self.ttl_config.get("omit_expired")):
            return results
        with self._cursor(transaction=False) as cur:
            expired = set(cur.execute(EXPIRED_SQL).fetchall())
        return [_without(result, expired) for result in results] if expired else results

    def put_in(self, cursor: sqlite3.Cursor, ops: Sequence[PutOp]) -> None:
        """Run `ops` with `cursor`, inside the documents' transaction whose caller holds
        this store's lock (the checkpointer's), with upstream's own statements, so the
        table is written exactly as `batch` writes it."""
        self._batch_put_ops(list(enumerate(ops)), cursor)
        if any(op.value is None for op in ops):
            scrub_on_commit(cursor)

    def sweep_ttl(self) -> int:
        """Delete the items whose TTL ran out (upstream's sweep); then truncate the WAL,
        which still holds their text."""
        removed = super().sweep_ttl()
        if removed:
            with self.lock:
                truncate_wal(self.conn)
        return removed

    @contextmanager
    def _cursor(self, *, transaction: bool = True) -> Iterator[sqlite3.Cursor]:
        if not self.is_setup:
            self.setup()
        with self.lock, closing(self.conn.cursor()) as cur:
            if transaction:
                self.conn.execute("BEGIN")
            try:
                yield cur
            except BaseException:
                if transaction:
                    self.conn.execute("ROLLBACK")
                raise
            if transaction:
                self.conn.execute("COMMIT")


def _without(result: Result, expired: set[tuple[str, str]]) -> Result:
    """A store result without the items in `expired` (by joined namespace and key)."""

    def gone(item: Item) -> bool:
        return (".".join(item.namespace), item.key) in expired

    if isinstance(result, Item):
        return None if gone(result) else result
    if isinstance(result, list) and result and isinstance(result[0], Item):
        return [item for item in result if not gone(item)]
    return result


def open_sqlite_items(
    checkpointer: SqliteCheckpointer,
    locks: KeyedLocks,
    index: IndexConfig | None = None,
    ttl: TTLConfig | None = None,
) -> BaseStore:
    """The long-term store (`SqliteStore`) on the checkpointer's database (a vector
    index needs a connection that loads sqlite-vec: else `UnsupportedDatabaseUrl`)."""
    if index is not None and not hasattr(checkpointer.conn, "enable_load_extension"):
        why = (
            "the database was opened with this Python's sqlite3, which cannot load "
            "extensions (sqlite-vec); open it with its vector index (sqlean.py)"
        )
        raise UnsupportedDatabaseUrl(EMBEDDINGS_UNSUPPORTED.format(why=why))
    store = SharedSqliteStore(checkpointer.conn, index=index, ttl=ttl)
    store.lock = checkpointer.lock
    with locks.hold(SETUP_LOCK_KEY, SQLITE_BUSY_TIMEOUT_S):
        store.setup()
        with checkpointer.lock:  # its migrations leave the implicit transaction of the
            checkpointer.conn.commit()  # shared connection (not in autocommit) open
    return store
