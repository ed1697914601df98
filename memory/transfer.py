"""Export and import: a session's export document (`memory.export_document`) read from
its stores, and brought back into a session.

An export is read under the session's locks, so that no turn's write lands half in it.
An import is checked whole (`memory.export_document`) before any lock is taken, then
written in one transaction under the session's locks, or not at all. What the session
holds always stays (a conversation, item or line it has is skipped, so importing twice
changes nothing), what it forgot stays forgotten (each repeating sentence reads
`[forgotten]`), and the document's tombstones never displace the session's own.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

from langgraph.store.base import PutOp
from pydantic.alias_generators import to_camel

from memory.analysis import redact_secrets
from memory.archive.lines import FORGOTTEN, ArchiveRow, ArchiveWrite
from memory.conversations import ConversationMemory
from memory.errors import InvalidInput
from memory.export_document import (
    FORMAT,
    VERSION,
    ExportDocument,
    ExportedConversation,
    ExportedItem,
    ExportedLine,
    checked,
    read_document,
    renamed,
    rewritten,
)
from memory.hydration import assert_client_safe
from memory.limits import MAX_HISTORY_ITEMS, MAX_MEMORY_ITEMS, MAX_TITLE_CHARS, MAX_TOMBSTONES
from memory.longterm.items import MemoryItem
from memory.longterm.store import LongTermMemory
from memory.registry import (
    ConversationEntry,
    RegistryChange,
    RegistryState,
    make_title,
    ordered,
    with_listed,
)
from memory.schema import ThreadState
from memory.storage.documents import items_step
from memory.tombstones import Forgotten

TOO_MANY_ITEMS = (
    "the import would leave {count} long-term items ({what}); a session keeps at most "
    "{limit}: forget some first"
)


def export_session(
    memory: ConversationMemory, long_term: LongTermMemory, session_id: str
) -> dict[str, Any]:
    """Everything `session_id` owns, as a document `read_document` takes back."""
    with long_term.lock(session_id), memory.documents.lock(session_id):
        registry = memory.registry(session_id)
        listed = ordered(registry.conversations)
        threads = [memory.memory_thread(session_id, entry.id) for entry in listed]
        stored = memory.threads.get_many(threads)
        items = long_term.all_items(session_id)
        lines = memory.archive.lines(session_id)
    cleared = registry.history_cleared_at
    document = {
        "format": FORMAT,
        "version": VERSION,
        "exportedAt": memory.clock().isoformat(),
        "conversations": [
            {
                **entry.to_dto(),
                "memory": renamed(ThreadState.from_document(stored.get(thread, {})).to_document()),
            }
            for entry, thread in zip(listed, threads, strict=True)
        ],
        # which path wrote an item is internal: `source` is a key no client payload carries
        "memories": [renamed(item.model_dump(mode="json", exclude={"source"})) for item in items],
        "archive": [  # the fields of the document's line, as the row holds them
            {
                **{to_camel(name): getattr(row, name) for name in ExportedLine.model_fields},
                "createdAt": row.created_at.isoformat(),
            }
            for row in lines
        ],
        "tombstones": list(dict.fromkeys([*registry.forgotten, *registry.imported_forgotten])),
        "historyClearedAt": None if cleared is None else cleared.isoformat(),
    }
    assert_client_safe(document)
    return document


def import_session(
    memory: ConversationMemory, long_term: LongTermMemory, session_id: str, raw: object
) -> dict[str, Any]:
    """Import the document in `raw` into `session_id` by the module's rules; returns the
    counts of what was imported, skipped, pruned (listed conversations pushed past ten)
    and redacted. `InvalidInput` (its checks, or more items than a session keeps)."""
    now = memory.clock()
    document = checked(read_document(raw, now), now)
    scanned = _rows(memory, session_id, document.archive)  # the secret scans, unlocked
    with long_term.lock(session_id), memory.documents.lock(session_id):
        registry = memory.registry(session_id)
        forgotten = Forgotten(registry.forgotten_marks, memory.ids.mark)
        held = long_term.all_items(session_id)
        tombstones = {*registry.forgotten, *registry.imported_forgotten, *document.tombstones}
        kept = [item for item in document.memories if forgotten(item.text) == item.text]
        items = _new_items(kept, held, tombstones)
        new = [_forget_in(c, forgotten) for c in document.conversations if not registry.owns(c.id)]
        entries = [*registry.conversations, *(_entry(memory, session_id, c) for c in new)]
        listed = with_listed(registry, entries)
        change = RegistryChange(_with_marks(listed.state, document), listed.pruned)
        states = {c.id: c.memory for c in new if c.id not in change.pruned}
        rows = _unarchived(scanned, registry, memory.archive.lines(session_id), forgotten)
        namespace = long_term.namespace(session_id)
        puts = [PutOp(namespace, i.id, i.to_value(), ttl=long_term.ttl_minutes) for i in items]
        listing = change if change.state != registry else None
        if listing or rows or puts:
            memory.documents.commit(
                session_id,
                registry,
                listing,
                states,
                ArchiveWrite(rows=rows),
                also=items_step(long_term.store, puts) if puts else None,
            )
    said = {(line.conversation_id, line.message_id): line.text for line in document.archive}
    return {
        "conversations": {
            "imported": len(states),
            "skipped": len(document.conversations) - len(new),
            "pruned": len(change.pruned),
        },
        "memories": {"imported": len(items), "skipped": len(document.memories) - len(items)},
        "archive": {
            "imported": len(rows),
            "skipped": len(document.archive) - len(rows),
            "redacted": sum(row.text != said[row.conversation_id, row.message_id] for row in rows),
        },
    }


def _forget_in(conversation: ExportedConversation, forgotten: Forgotten) -> ExportedConversation:
    """`conversation` with each sentence that repeats a forgotten text read `[forgotten]`."""
    if not forgotten.texts:
        return conversation
    title = forgotten(conversation.title)[:MAX_TITLE_CHARS]
    return rewritten(conversation, forgotten, FORGOTTEN).model_copy(update={"title": title})


def _new_items(
    items: list[ExportedItem], held: list[MemoryItem], forgotten: set[str]
) -> list[ExportedItem]:
    """The `items` to import beside the `held` ones: not one the session has (by id, or
    a current one by text) or a tombstone names. `InvalidInput`: more than it keeps."""
    skipped = {item.id for item in held} | forgotten
    keys = {item.key for item in held if item.current}
    new = [
        item for item in items if item.id not in skipped and not (item.current and item.key in keys)
    ]
    for what, current, limit in (
        ("current", True, MAX_MEMORY_ITEMS),
        ("history", False, MAX_HISTORY_ITEMS),
    ):
        count = sum(item.current == current for item in [*held, *new])
        if count > limit:
            raise InvalidInput(TOO_MANY_ITEMS.format(count=count, what=what, limit=limit))
    return new


def _with_marks(registry: RegistryState, document: ExportDocument) -> RegistryState:
    """`registry` with the document's tombstones kept apart from its own (the newest of
    them kept), and the later of the two times the archive was forgotten."""
    own = set(registry.forgotten)
    both = dict.fromkeys([*registry.imported_forgotten, *document.tombstones])
    imported = [t for t in both if t not in own]
    times = [t for t in (registry.history_cleared_at, document.history_cleared_at) if t]
    return registry.model_copy(
        update={
            "imported_forgotten": imported[-MAX_TOMBSTONES:],
            "history_cleared_at": max(times, default=None),
        }
    )


def _entry(
    memory: ConversationMemory, session_id: str, c: ExportedConversation
) -> ConversationEntry:
    fields = {**c.model_dump(exclude={"memory"}), "title": _kept(c.title)}
    return ConversationEntry(**fields, key=memory.ids.conversation_key(session_id, c.id))


def _unarchived(
    rows: list[ArchiveRow],
    registry: RegistryState,
    archived: list[ArchiveRow],
    forgotten: Forgotten,
) -> list[ArchiveRow]:
    """The `rows` to import: not of a conversation the session owns, nor archived (a
    line the document repeats is imported once); each sentence in them that repeats a
    forgotten text reads `[forgotten]`."""
    seen = {(row.conversation_id, row.message_id) for row in archived}
    chosen = []
    for row in rows:
        mark = (row.conversation_id, row.message_id)
        if not registry.owns(row.conversation_id) and mark not in seen:
            indexed = None if row.indexed is None else forgotten(row.indexed)
            title = forgotten(row.title)[:MAX_TITLE_CHARS]
            chosen.append(replace(row, text=forgotten(row.text), title=title, indexed=indexed))
            seen.add(mark)
    return chosen


def _rows(
    memory: ConversationMemory, session_id: str, lines: list[ExportedLine]
) -> list[ArchiveRow]:
    """`lines` as the session's archived lines, secrets redacted."""
    session_key = memory.ids.session_key(session_id)
    return [
        ArchiveRow(
            session_key=session_key,
            conversation_key=memory.ids.conversation_key(session_id, line.conversation_id),
            **{
                **dict(line),
                "title": _kept(line.title),
                "text": redact_secrets(line.text),
                "indexed": None if line.indexed is None else redact_secrets(line.indexed),
            },
        )
        for line in lines
    ]


@functools.lru_cache(maxsize=1024)  # a conversation's lines share its title
def _kept(title: str) -> str:
    """A title as the registry and the archive keep it: secrets redacted, one line."""
    return make_title(redact_secrets(title))
