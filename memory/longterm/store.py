"""`LongTermMemory`: a session's long-term items in LangGraph's `BaseStore`.

Items, current and history, live in the namespace `("user-memory", H(session))`. Every
write holds the session's long-term lock, reads the items, passes the gate and commits
in one batch (one transaction); a write that forgets items runs in the transaction that
forgets their texts everywhere else (`Forget`). An extraction model is called before
the lock is taken, never while holding it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from dataclasses import KW_ONLY, dataclass, field
from datetime import UTC, date, datetime

from langgraph.store.base import BaseStore, GetOp, Item, PutOp, SearchItem

from memory.archive.terms import tokens
from memory.errors import MemoryNotFound, MemoryRefused
from memory.ids import ThreadIds
from memory.limits import MAX_HISTORY_ITEMS, MAX_IMPORTANCE, MAX_MEMORY_ITEMS, MAX_MEMORY_TEXT_CHARS
from memory.longterm.explicit import strip_form
from memory.longterm.extraction import Extractor
from memory.longterm.gate import WritePlan, explicit, plan_write
from memory.longterm.items import MemoryItem, MemoryKind, Source, check_kind
from memory.longterm.operations import Operation, OwedTurn
from memory.longterm.recall import Recalled, recall
from memory.redaction import without_traces
from memory.schema import Clock, require_storable, require_text, utcnow
from memory.storage import storage_errors
from memory.storage.documents import InTransaction, items_step
from memory.storage.locks import DEFAULT_LOCK_TIMEOUT, KeyedLocks

logger = logging.getLogger(__name__)

NAMESPACE = "user-memory"
LOCK_PREFIX = "user-memory-lock"
READ_LIMIT = (MAX_MEMORY_ITEMS + MAX_HISTORY_ITEMS) * 2
"""Items read per session: the limits, with room for what a crashed writer left over."""
TEXT_TOO_LONG = "a memory is at most {limit} characters (got {length})"
TEXT_EMPTY = "a memory must not be empty"
_MAX_REFRESH_MARKS = 10_000
_MAX_PARSED = 20_000
_NAMESPACE_PAGE = 1_000
Forget = Callable[[Sequence[MemoryItem], InTransaction], object]
"""Forgets the items that go everywhere else the session keeps their texts (the archive,
the session's memory, with a tombstone of each: `memory.redaction.forget_texts`) and
runs the step it is given, the item store's own write, in the same transaction."""
Reread = Callable[[Sequence[OwedTurn]], Sequence[OwedTurn]]
"""The owed turns as their conversation stores them now, in the same order (a turn no
longer stored reads empty); a forgetting redacts the stored copies."""
_MEMORY_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(eq=False, repr=False)
class LongTermMemory:
    """A session's long-term items: recall, the gated writes, and deletion.

    Args:
        store: the `BaseStore` (`ThreadStore.open_items`), with a vector index when
            `semantic` (rank by it instead of lexically).
        locks: the thread store's keyed locks (serialise a session's writers).
        ttl_minutes: items expire this long after they were last written or recalled
            (None: never); the store sweeps them.
    """

    store: BaseStore
    locks: KeyedLocks
    ids: ThreadIds
    _: KW_ONLY
    semantic: bool = False
    ttl_minutes: float | None = None
    clock: Clock = utcnow
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    _refreshed: dict[tuple[str, ...], date] = field(default_factory=dict, init=False)
    _parsed: dict[tuple[object, ...], MemoryItem | None] = field(default_factory=dict, init=False)
    """Validated items by (namespace key, item key, the value's `updated_at`,
    `invalid_at`, `superseded_by` and quote): every turn reads a session's items, and
    most of them have not changed since the last."""

    def namespace(self, session_id: str) -> tuple[str, str]:
        return (NAMESPACE, self.ids.session_key(session_id))

    # -- reads ------------------------------------------------------------------------

    def _parse(self, hits: Sequence[Item]) -> list[MemoryItem]:
        """The valid items among `hits` (a value that does not validate is skipped)."""
        if len(self._parsed) > _MAX_PARSED:
            self._parsed.clear()
        items = []
        for hit in hits:
            # the value's own times, not only the store's (SQLite's has whole seconds): an
            # item changed within a second of its last write is a new value; and what a
            # forgetting rewrites without moving them
            value = hit.value
            provenance = value.get("provenance")
            quote = provenance.get("quote") if isinstance(provenance, dict) else None
            changes = (value.get("updated_at"), value.get("invalid_at"))
            mark = (hit.namespace[-1], hit.key, *changes, value.get("superseded_by"), quote)
            if mark not in self._parsed:
                self._parsed[mark] = MemoryItem.from_value(hit.key, hit.value)
            item = self._parsed[mark]
            if item is not None:
                items.append(item)
        return items

    def _read(self, namespace: tuple[str, ...], query: str | None = None) -> list[SearchItem]:
        return self.store.search(namespace, query=query, limit=READ_LIMIT, refresh_ttl=False)

    def items(self, session_id: str) -> list[MemoryItem]:
        """The session's current items, newest first."""
        return [item for item in self.all_items(session_id) if item.current]

    def history(self, session_id: str) -> list[MemoryItem]:
        """The items later statements changed, most recently changed first (at most
        `MAX_HISTORY_ITEMS`)."""
        changed = [item for item in self.all_items(session_id) if not item.current]
        changed.sort(key=lambda item: item.invalid_at or item.updated_at, reverse=True)
        return changed[:MAX_HISTORY_ITEMS]

    @storage_errors
    def all_items(self, session_id: str) -> list[MemoryItem]:
        """Every item of the session, current and history, newest first."""
        found = self._parse(self._read(self.namespace(session_id)))
        return sorted(found, key=lambda item: item.updated_at, reverse=True)

    def recall(self, session_id: str, query: str) -> list[MemoryItem]:
        """What a turn about `query` gets (`memory.longterm.recall`)."""
        return self.recall_with_changes(session_id, query)[0]

    @storage_errors
    def recall_with_changes(self, session_id: str, query: str) -> Recalled:
        """`recall`, with what else a turn needs of the session's items, in one read."""
        namespace = self.namespace(session_id)
        hits = self._read(namespace, query if self.semantic else None)
        scores = {hit.key: float(hit.score or 0.0) for hit in hits} if self.semantic else None
        items = self._parse(hits)
        current = [item for item in items if item.current]
        changed = frozenset(
            item.provenance.message_id
            for item in items
            if not item.current and item.provenance and item.provenance.message_id
        )
        chosen = recall(current, query, self.clock(), scores=scores)
        # the recalled items' TTL moves on at most once a day per session: a write each
        # turn would cost more than a day's precision on a months-long TTL is worth
        if self.ttl_minutes is not None and chosen:
            today = self.clock().date()
            if self._refreshed.get(namespace) != today:
                if len(self._refreshed) > _MAX_REFRESH_MARKS:
                    self._refreshed.clear()
                self.store.batch([GetOp(namespace, item.id, refresh_ttl=True) for item in chosen])
                self._refreshed[namespace] = today
        return Recalled(chosen, changed, tuple(items))

    # -- writes -----------------------------------------------------------------------

    def lock(self, session_id: str) -> AbstractContextManager[None]:
        """The lock every writer of the session's items holds (taken before the lock of
        the session's documents, when a write holds both)."""
        return self.locks.hold(
            f"{LOCK_PREFIX}:{self.ids.session_key(session_id)}", self.lock_timeout
        )

    def _commit(
        self,
        session_id: str,
        stored: Sequence[MemoryItem],
        puts: Sequence[MemoryItem],
        deletes: Sequence[str],
        forgotten: Sequence[MemoryItem],
        forget: Forget | None,
    ) -> None:
        """Write `puts` and `deletes` over the `stored` items as one transaction: with
        `forgotten` items and `forget`, the one that forgets them everywhere else too (all
        or nothing), the items kept losing their traces; else a batch of the store's."""
        if forget is not None and forgotten:
            kept = {item.id: item for item in [*stored, *puts] if item.id not in deletes}
            written = {item.id: item for item in [*puts, *without_traces(kept.values(), forgotten)]}
            puts = list(written.values())
        namespace = self.namespace(session_id)
        ops = [PutOp(namespace, item.id, item.to_value(), ttl=self.ttl_minutes) for item in puts]
        ops.extend(PutOp(namespace, item_id, None) for item_id in deletes)
        if forget is not None and forgotten:
            forget(forgotten, items_step(self.store, ops))
        elif ops:
            self.store.batch(ops)

    @storage_errors
    def _write(
        self,
        session_id: str,
        operations: Sequence[Operation],
        turns: Sequence[OwedTurn],
        source: Source,
        forget: Forget | None = None,
        reread: Reread | None = None,
    ) -> WritePlan:
        """The plan the gate makes of `operations`, written (what it forgets goes to
        `forget`), each checked against its turn as `reread` finds it under the lock."""
        with self.lock(session_id):
            if reread is not None:
                turns = reread(turns)
            items = self.all_items(session_id)
            plan = plan_write(items, operations, turns, source=source)
            if plan.altered:  # a plan the gate refused whole writes nothing
                self._commit(session_id, items, plan.puts, plan.deletes, plan.forgotten, forget)
        return plan

    def remember_turns(
        self,
        session_id: str,
        turns: Sequence[OwedTurn],
        extractor: Extractor,
        *,
        forget: Forget | None = None,
        reread: Reread | None = None,
    ) -> WritePlan:
        """Extract from the owed turns (one call for all, before the lock is taken) and
        write what the gate lets through, each quote checked against the turns as `reread`
        finds them under the lock: what a forgetting took out meanwhile is never written."""
        if not turns:
            return WritePlan()
        operations = extractor(turns, self.all_items(session_id))
        plan = self._write(session_id, operations, turns, extractor.source, forget, reread)
        for refusal in plan.refused:
            logger.info("long-term gate refused an operation: %s", refusal.reason.value)
        return plan

    def remember(
        self,
        session_id: str,
        text: object,
        *,
        kind: object = None,
        conversation_id: str | None = None,
    ) -> MemoryItem:
        """Add an item the user asked for directly (the same gate as a turn's): the new
        item, or the one it repeats, refreshed. Raises `InvalidInput` (not a string, an
        unknown kind) or `MemoryRefused` (empty, too long, or the gate's reason)."""
        body = strip_form(require_storable(require_text(text, "memory text"), "memory text"))
        if len(body) > MAX_MEMORY_TEXT_CHARS:
            raise MemoryRefused(TEXT_TOO_LONG.format(limit=MAX_MEMORY_TEXT_CHARS, length=len(body)))
        if not tokens(body):  # "remember that" alone holds nothing to remember
            raise MemoryRefused(TEXT_EMPTY)
        # what the user adds directly is kept as written: no code judges its meaning
        chosen: MemoryKind = "fact" if kind is None else check_kind(kind)
        operation, turn = explicit(body, chosen, MAX_IMPORTANCE, self.clock())
        plan = self._write(session_id, [operation], [turn], "explicit")
        if plan.refused:
            raise MemoryRefused(plan.refused[0].message)
        return (plan.added or plan.refreshed)[0]

    @storage_errors
    def forget(self, session_id: str, memory_id: object, *, forget: Forget | None = None) -> None:
        """Delete one item (through `forget`, in its transaction); the very next turn no
        longer recalls it. `MemoryNotFound`: not an item of this session."""
        if not isinstance(memory_id, str) or not _MEMORY_ID.fullmatch(memory_id):
            raise MemoryNotFound()  # no stored id has another form: nothing to look up
        with self.lock(session_id):
            found = self.store.get(self.namespace(session_id), memory_id, refresh_ttl=False)
            if found is None:
                raise MemoryNotFound()
            items = self.all_items(session_id)
            self._commit(session_id, items, (), [memory_id], self._parse([found]), forget)

    @storage_errors
    def sweep_expired(self) -> int:
        """Delete the items whose TTL ran out (every session); returns how many."""
        sweep = getattr(self.store, "sweep_ttl", None)
        return int(sweep()) if self.ttl_minutes is not None and callable(sweep) else 0

    @storage_errors
    def sweep_unused_sessions(
        self, cutoff: datetime, *, chatted: Collection[str], dry_run: bool = False
    ) -> tuple[int, int]:
        """Delete the items of every session that never chatted (not in `chatted`, no item
        from a conversation) and has added nothing since `cutoff`: it cannot outlive the
        retention of conversations it never had. Returns (sessions, items) removed."""
        sessions = items = 0
        for namespace in self._session_namespaces():
            if namespace[-1] in chatted:
                continue
            with self.locks.hold(f"{LOCK_PREFIX}:{namespace[-1]}", self.lock_timeout):
                found = self._read(namespace)
                if not found or any(item.conversation_id for item in self._parse(found)):
                    continue
                # SQLite's store reads its timestamps naive, in UTC
                said = max(h.updated_at.replace(tzinfo=h.updated_at.tzinfo or UTC) for h in found)
                if said >= cutoff:
                    continue
                if not dry_run:
                    self.store.batch([PutOp(namespace, hit.key, None) for hit in found])
            sessions, items = sessions + 1, items + len(found)
        return sessions, items

    def _session_namespaces(self) -> list[tuple[str, ...]]:
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
        """Delete every item of the session (through `forget`); returns how many."""
        with self.lock(session_id):
            found = self._read(self.namespace(session_id))
            if found:
                deletes = [hit.key for hit in found]
                self._commit(session_id, (), (), deletes, self._parse(found), forget)
        return len(found)
