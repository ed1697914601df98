"""`LongTermMemory`: a session's long-term items in LangGraph's `BaseStore`.

Items live in the namespace `("user-memory", H(session))`, one store item each. Every
write of a session's items happens under that session's long-term lock (the same
keyed locks as the registry: file locks on SQLite, advisory locks on PostgreSQL),
reads the current items, passes the gate, and commits its puts and deletes in one
batch, which the backends run as one transaction. A write that forgets items (a
deletion, a revocation, a supersession) runs instead in the transaction that forgets
their texts elsewhere (`Forget`): the items and the archive change together or not at
all. An extraction model is called before the lock is taken, never while holding it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Item, PutOp

from memory.errors import MemoryNotFound, MemoryRefused
from memory.ids import ThreadIds
from memory.limits import MAX_MEMORY_ITEMS, MAX_MEMORY_TEXT_CHARS
from memory.longterm.analysis import is_filler
from memory.longterm.extraction import Extractor
from memory.longterm.gate import WritePlan, plan_write
from memory.longterm.items import MemoryItem, MemoryKind, check_kind
from memory.longterm.recall import recall
from memory.longterm.rules import Extraction, Proposal, classify, importance, strip_remember
from memory.schema import Clock, require_storable, require_text, utcnow
from memory.storage import storage_errors
from memory.storage.documents import InTransaction
from memory.storage.items import items_step
from memory.storage.locks import DEFAULT_LOCK_TIMEOUT, KeyedLocks

logger = logging.getLogger(__name__)

NAMESPACE = "user-memory"
LOCK_PREFIX = "user-memory-lock"
READ_LIMIT = MAX_MEMORY_ITEMS * 2
"""Items read per session: the limit, with room for what a crashed writer left over."""
TEXT_TOO_LONG = "a memory is at most {limit} characters (got {length})"
TEXT_EMPTY = "a memory must not be empty"
_MAX_REFRESH_MARKS = 10_000
_MAX_PARSED = 20_000
_NAMESPACE_PAGE = 1_000
Forget = Callable[[Sequence[str], InTransaction], object]
"""Forgets the texts of items that go everywhere else the session keeps them (the
archive; for a deletion, the session's memory too: `memory.redaction.forget_texts`) and
runs the step it is given, the item store's own write, in the same transaction."""
_MEMORY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class MemoryWrite:
    """What a turn's extraction changed (counts for the `memory` event).

    Attributes:
        plan: the write the gate planned.
    """

    plan: WritePlan

    @property
    def added(self) -> int:
        return len(self.plan.added)

    @property
    def retired(self) -> int:
        return len(self.plan.retired)

    @property
    def remembered(self) -> tuple[str, ...]:
        return self.plan.remembered


def _utc(moment: datetime) -> datetime:
    """`moment` as timezone-aware UTC (SQLite's store reads its timestamps naive, in UTC)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


class LongTermMemory:
    """A session's long-term items: recall, the gated writes, and deletion.

    Args:
        store: the `BaseStore` (`ThreadStore.open_items`), with a vector index when
            `semantic`.
        locks: the keyed locks of the thread store (serialise a session's writers).
        ids: derives `H(session)`.
        semantic: rank by the store's vector index instead of lexically.
        ttl_minutes: items expire this long after they were last written or recalled
            (None: never); the store sweeps them.
        clock: the time source (UTC, timezone-aware).
        lock_timeout: seconds a writer waits for a session's lock.
    """

    def __init__(
        self,
        store: BaseStore,
        locks: KeyedLocks,
        ids: ThreadIds,
        *,
        semantic: bool = False,
        ttl_minutes: float | None = None,
        clock: Clock = utcnow,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.store = store
        self.locks = locks
        self.ids = ids
        self.semantic = semantic
        self.ttl_minutes = ttl_minutes
        self.clock = clock
        self.lock_timeout = lock_timeout
        self._refreshed: dict[tuple[str, ...], date] = {}
        self._parsed: dict[tuple[str, str, datetime], MemoryItem | None] = {}
        """Validated items by (namespace key, item key, stored `updated_at`): every turn
        reads a session's items, and most of them have not changed since the last."""

    def namespace(self, session_id: str) -> tuple[str, str]:
        """`("user-memory", H(session))`."""
        return (NAMESPACE, self.ids.session_key(session_id))

    # -- reads ------------------------------------------------------------------------

    def _parse(self, hits: Sequence[Item]) -> list[MemoryItem]:
        """The valid items among `hits` (a value that does not validate is skipped)."""
        if len(self._parsed) > _MAX_PARSED:
            self._parsed.clear()
        items = []
        for hit in hits:
            mark = (hit.namespace[-1], hit.key, hit.updated_at)
            if mark not in self._parsed:
                self._parsed[mark] = MemoryItem.from_value(hit.key, hit.value)
            item = self._parsed[mark]
            if item is not None:
                items.append(item)
        return items

    @storage_errors
    def items(self, session_id: str) -> list[MemoryItem]:
        """The session's items, newest first."""
        found = self.store.search(self.namespace(session_id), limit=READ_LIMIT, refresh_ttl=False)
        return sorted(self._parse(found), key=lambda item: item.updated_at, reverse=True)

    @storage_errors
    def recall(self, session_id: str, query: str) -> list[MemoryItem]:
        """What a turn about `query` gets: at most 8 items and 1,200 characters,
        boundaries first (`memory.longterm.recall`)."""
        namespace = self.namespace(session_id)
        scores: dict[str, float] | None = None
        if self.semantic:
            hits = self.store.search(namespace, query=query, limit=READ_LIMIT, refresh_ttl=False)
            scores = {hit.key: float(hit.score or 0.0) for hit in hits}
            items = self._parse(hits)
        else:
            items = self.items(session_id)
        chosen = recall(items, query, self.clock(), scores=scores)
        self._refresh(namespace, chosen)
        return chosen

    def _refresh(self, namespace: tuple[str, ...], chosen: Sequence[MemoryItem]) -> None:
        """Move the TTL of recalled items on, at most once a day per session (a write on
        every turn would cost more than a day's precision on a months-long TTL is worth)."""
        if self.ttl_minutes is None or not chosen:
            return
        today = self.clock().date()
        if self._refreshed.get(namespace) == today:
            return
        if len(self._refreshed) > _MAX_REFRESH_MARKS:
            self._refreshed.clear()
        self.store.batch([GetOp(namespace, item.id, refresh_ttl=True) for item in chosen])
        self._refreshed[namespace] = today

    # -- writes -----------------------------------------------------------------------

    def _lock_key(self, session_id: str) -> str:
        return f"{LOCK_PREFIX}:{self.ids.session_key(session_id)}"

    def lock(self, session_id: str) -> AbstractContextManager[None]:
        """The lock every writer of the session's items holds (taken before the lock of
        the session's documents, when a write holds both)."""
        return self.locks.hold(self._lock_key(session_id), self.lock_timeout)

    def _ops(self, session_id: str, plan: WritePlan) -> list[PutOp]:
        namespace = self.namespace(session_id)
        ops = [
            PutOp(namespace, item.id, item.to_value(), ttl=self.ttl_minutes) for item in plan.puts
        ]
        ops.extend(PutOp(namespace, item_id, None) for item_id in plan.deletes)
        return ops

    def _commit(
        self, ops: Sequence[PutOp], forgotten: Sequence[str], forget: Forget | None
    ) -> None:
        """Write `ops` as one transaction: with `forget`, the one that forgets the
        `forgotten` texts elsewhere too (all or nothing), else a batch of the store's."""
        if forget is not None and forgotten:
            forget(forgotten, items_step(self.store, ops))
        elif ops:
            self.store.batch(ops)

    @storage_errors
    def _write(
        self, session_id: str, extraction: Extraction, forget: Forget | None = None, **context: Any
    ) -> WritePlan:
        """The plan written (the texts of the items it retires go to `forget`)."""
        with self.locks.hold(self._lock_key(session_id), self.lock_timeout):
            current = self.items(session_id)
            plan = plan_write(current, extraction, now=self.clock(), **context)
            if plan.changed:
                forgotten = [item.text for item in current if item.id in plan.retired]
                self._commit(self._ops(session_id, plan), forgotten, forget)
        return plan

    def remember_turn(
        self,
        session_id: str,
        conversation_id: str,
        user_text: str,
        extractor: Extractor,
        *,
        forget: Forget | None = None,
    ) -> MemoryWrite:
        """Extract from the user's own text of a completed turn and write what the gate
        lets through. The extractor runs before the session's lock is taken.

        Args:
            forget: given the texts of the items the write retires (revoked or
                superseded), under the session's long-term lock, with the write itself
                to run in the same transaction.
        """
        current = self.items(session_id) if extractor.needs_items else ()
        extraction = extractor(user_text, current)
        plan = self._write(
            session_id,
            extraction,
            forget,
            user_text=user_text,
            conversation_id=conversation_id,
            source=extractor.source,
        )
        if plan.refused:
            logger.info("long-term gate refused %d proposal(s)", len(plan.refused))
        return MemoryWrite(plan)

    def remember(
        self,
        session_id: str,
        text: object,
        *,
        kind: object = None,
        conversation_id: str | None = None,
    ) -> MemoryItem:
        """Add an item the user asked for directly (the same gate as a turn's).

        Returns:
            the new item, or the existing one it repeats (its `updatedAt` refreshed).

        Raises:
            InvalidInput: a text that is not a string, empty or too long, or an unknown kind.
            MemoryRefused: the gate turned the text down; the message says why.
        """
        body = strip_remember(require_storable(require_text(text, "memory text"), "memory text"))
        if not body or is_filler(body):  # "remember that" holds nothing to remember
            raise MemoryRefused(TEXT_EMPTY)
        if len(body) > MAX_MEMORY_TEXT_CHARS:
            raise MemoryRefused(TEXT_TOO_LONG.format(limit=MAX_MEMORY_TEXT_CHARS, length=len(body)))
        chosen: MemoryKind = classify(body) if kind is None else check_kind(kind)
        proposal = Proposal(chosen, body, importance(body, chosen, explicit=True))
        plan = self._write(
            session_id,
            Extraction(proposals=(proposal,)),
            user_text=body,
            conversation_id=conversation_id,
            source="explicit",
        )
        if plan.refused:
            raise MemoryRefused(plan.refused[0].reason)
        return (plan.added or plan.refreshed)[0]

    @storage_errors
    def forget(self, session_id: str, memory_id: object, *, forget: Forget | None = None) -> None:
        """Delete one item; the very next turn no longer recalls it.

        Args:
            forget: given the item's text under the session's long-term lock, with the
                item's deletion to run in the same transaction.

        Raises:
            MemoryNotFound: no such item in this session (another session's id included).
        """
        if not isinstance(memory_id, str) or not _MEMORY_ID.fullmatch(memory_id):
            raise MemoryNotFound()  # no stored id has another form: nothing to look up
        namespace = self.namespace(session_id)
        with self.locks.hold(self._lock_key(session_id), self.lock_timeout):
            found = self.store.get(namespace, memory_id, refresh_ttl=False)
            if found is None:
                raise MemoryNotFound()
            item = MemoryItem.from_value(found.key, found.value)
            forgotten = [] if item is None else [item.text]
            self._commit([PutOp(namespace, memory_id, None)], forgotten, forget)

    @storage_errors
    def sweep_expired(self) -> int:
        """Delete the items whose TTL ran out (every session); returns how many."""
        sweep = getattr(self.store, "sweep_ttl", None)
        return int(sweep()) if self.ttl_minutes is not None and callable(sweep) else 0

    @storage_errors
    def sweep_unused_sessions(
        self, cutoff: datetime, *, chatted: Collection[str], dry_run: bool = False
    ) -> tuple[int, int]:
        """Delete the items of every session that never chatted and has added nothing
        since `cutoff`: its key is not in `chatted` (sessions with a registry) and none of
        its items came from a conversation. Such a session cannot outlive the retention
        of the conversations it never had. Returns (sessions, items) removed (or, with
        `dry_run`, that would be)."""
        sessions = items = 0
        for namespace in self._session_namespaces():
            if namespace[-1] in chatted:
                continue
            with self.locks.hold(f"{LOCK_PREFIX}:{namespace[-1]}", self.lock_timeout):
                found = self.store.search(namespace, limit=READ_LIMIT, refresh_ttl=False)
                parsed = self._parse(found)
                if not found or any(item.conversation_id for item in parsed):
                    continue
                if max(_utc(hit.updated_at) for hit in found) >= cutoff:
                    continue
                if not dry_run:
                    self.store.batch([PutOp(namespace, hit.key, None) for hit in found])
            sessions, items = sessions + 1, items + len(found)
        return sessions, items

    def _session_namespaces(self) -> list[tuple[str, ...]]:
        """Every session's namespace, read in pages."""
        namespaces: list[tuple[str, ...]] = []
        while True:
            page = self.store.list_namespaces(
                prefix=(NAMESPACE,), max_depth=2, limit=_NAMESPACE_PAGE, offset=len(namespaces)
            )
            namespaces.extend(page)
            if len(page) < _NAMESPACE_PAGE:
                return namespaces

    @storage_errors
    def forget_all(self, session_id: str, *, forget: Forget | None = None) -> int:
        """Delete every item of the session; returns how many there were.

        Args:
            forget: given the items' texts under the session's long-term lock, with their
                deletion to run in the same transaction.
        """
        namespace = self.namespace(session_id)
        with self.locks.hold(self._lock_key(session_id), self.lock_timeout):
            found = self.store.search(namespace, limit=READ_LIMIT, refresh_ttl=False)
            if found:
                deletes = [PutOp(namespace, hit.key, None) for hit in found]
                self._commit(deletes, [item.text for item in self._parse(found)], forget)
        return len(found)
