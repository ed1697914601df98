"""The long-term item store on the thread store's PostgreSQL pool (`PostgresStore`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, IndexConfig, PutOp, TTLConfig
from langgraph.store.postgres import PostgresStore
from langgraph.store.postgres.base import _pg_internal
from psycopg import Cursor
from psycopg.rows import DictRow, dict_row

from memory.errors import EMBEDDINGS_UNSUPPORTED, UnsupportedDatabaseUrl
from memory.storage.locks import advisory_setup_lock


class PooledPostgresStore(PostgresStore):
    """`PostgresStore` over the thread store's pool, each batch in one transaction.

    Upstream runs a batch in pipeline mode on an autocommit connection, under one
    store-wide lock: each statement commits on its own. Here a batch is one transaction
    on its own pooled connection, so a long-term write is all or nothing and writers of
    different sessions do not wait for each other.
    """

    def put_in(self, cursor: Cursor[Any], ops: Sequence[PutOp]) -> None:
        """Run `ops` on `cursor`'s connection, inside the documents' transaction its
        caller commits, with upstream's own statements on the kind of cursor `batch`
        gives them (binary, dict rows): the table is written exactly as `batch` does."""
        with cursor.connection.cursor(binary=True, row_factory=dict_row) as own:
            self._batch_put_ops(list(enumerate(ops)), own)

    @contextmanager
    def _cursor(self, *, pipeline: bool = False) -> Iterator[Cursor[DictRow]]:
        if not pipeline:  # setup: CREATE INDEX CONCURRENTLY cannot run in a transaction
            with super()._cursor() as cur:
                yield cur
            return
        with (
            _pg_internal.get_connection(self.conn) as conn,
            conn.transaction(),
            conn.cursor(binary=True, row_factory=dict_row) as cur,
        ):
            yield cur


def has_pgvector(pool: Any) -> bool:
    """Whether the server behind `pool` can create the pgvector extension."""
    with pool.connection() as conn:
        sql = "SELECT 1 AS ok FROM pg_available_extensions WHERE name = 'vector'"
        return conn.execute(sql).fetchone() is not None


def open_postgres_items(
    pool: Any, lock_pool: Any, index: IndexConfig | None = None, ttl: TTLConfig | None = None
) -> BaseStore:
    """The long-term store (`PostgresStore`) on the thread store's database
    (`UnsupportedDatabaseUrl`: a vector index asked for without pgvector)."""
    if index is not None and not has_pgvector(pool):
        why = "the PostgreSQL server has no pgvector extension"
        raise UnsupportedDatabaseUrl(EMBEDDINGS_UNSUPPORTED.format(why=why))
    store = PooledPostgresStore(pool, index=index, ttl=ttl)  # type: ignore[arg-type]
    with advisory_setup_lock(lock_pool):
        store.setup()
    return store
