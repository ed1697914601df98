"""Export and import: everything a session owns as one versioned JSON document, and
that document brought back into a session.

The document is `{"format", "version", "exportedAt", "conversations", "memories",
"archive", "tombstones", "historyClearedAt"}`. Each conversation is its listing (id,
title, times) with its memory as stored (`ThreadState`: messages, summary and its
version, what it covers, pins, open questions, upkeep); each long-term item, current or
history, is its stored value with its id, whatever fields the item has (provenance,
what changed it: the marks a search puts on lines that no longer hold); each archived
line is what the archive's index and its searches read (conversation, title, message
id, role, time, text, what a summary covered), in the order the lines were archived,
which breaks a search's ties; the tombstones are the ids of forgotten items, and
`historyClearedAt` when the archive was last forgotten. No session id, thread id or
hashed key is in it: an import files everything again under the importing session's
own keys.

An import is validated whole (the schema, its limits, text that every backend can
store) before anything is read, then written in one transaction under the session's
locks, or not at all. Its rules:
- a conversation the session already has (listed or pending) stays as it is: the
  document's copy and its archived lines are skipped. So importing a document twice
  changes nothing, and an import never overwrites what a session holds;
- the imported conversations are listed by their last activity; past ten, the least
  recently active are pruned as a turn prunes them (their archived lines stay);
- an item whose id the session already has, a current item whose text it holds as a
  current one, and an item a tombstone names are skipped; one whose text or quote the
  secret detector flags is refused (counted, never stored); the session keeps at most
  100 current items and 100 of history, or nothing is imported; the tombstones join
  the session's, and the later time its archive was forgotten holds;
- an archived line the session has (same conversation and message id) is skipped;
  lines and titles the secret detector flags are stored `[redacted]`, as the archive
  stores a turn's. A conversation's memory keeps its text as a turn's write does.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any, Literal

from langgraph.store.base import PutOp
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from memory.analysis import redact_secrets
from memory.archive.lines import ArchiveRole, ArchiveRow, ArchiveWrite
from memory.conversations import ConversationMemory
from memory.errors import InvalidInput
from memory.hydration import assert_client_safe
from memory.limits import (
    MAX_CONVERSATIONS,
    MAX_EXPORT_BYTES,
    MAX_EXPORT_LINES,
    MAX_EXPORT_TEXT_CHARS,
    MAX_HISTORY_ITEMS,
    MAX_ID_CHARS,
    MAX_MEMORY_ITEMS,
    MAX_TITLE_CHARS,
    MAX_TOMBSTONES,
)
from memory.longterm.items import MemoryItem
from memory.longterm.secrets import find_secret
from memory.longterm.store import LongTermMemory
from memory.registry import (
    ConversationEntry,
    RegistryChange,
    RegistryState,
    add_listed,
    make_title,
    ordered,
)
from memory.schema import MessageId, ThreadState, UtcDatetime, require_storable
from memory.storage.items import items_step

FORMAT = "langgraph-memory-agent.export"
VERSION = 1
TOO_LARGE = "an export document is at most {limit:,} bytes"
NOT_JSON = "the export document is not JSON"
INVALID_DOCUMENT = "invalid export document: {problems}"
TEXT_TOO_LONG = f"a text is at most {MAX_EXPORT_TEXT_CHARS:,} characters"
DUPLICATE = "each {what} appears once"
TOO_MANY_ITEMS = (
    "the import would leave {count} long-term items ({what}); a session keeps at most "
    "{limit}: forget some first"
)
_SHOWN_PROBLEMS = 3

ItemId = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
"""A long-term item's id, as `LongTermMemory.forget` takes it."""
Text = Annotated[StrictStr, Field(min_length=1, max_length=MAX_EXPORT_TEXT_CHARS)]
Title = Annotated[StrictStr, Field(max_length=MAX_TITLE_CHARS)]


class _Part(BaseModel):
    """A part of the document: camelCase keys, no others."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel)


class ExportedConversation(_Part):
    """A listed conversation and its memory, as stored."""

    id: MessageId
    title: Title
    created_at: UtcDatetime
    last_active_at: UtcDatetime
    memory: ThreadState

    @field_validator("memory")
    @classmethod
    def _texts_fit(cls, memory: ThreadState) -> ThreadState:
        if any(
            len(m.text) > MAX_EXPORT_TEXT_CHARS for m in [*memory.messages, *memory.upkeep_owed]
        ):
            raise ValueError(TEXT_TOO_LONG)
        return memory


class ExportedLine(_Part):
    """An archived line: what the archive's index and its searches read."""

    conversation_id: MessageId
    title: Title
    message_id: MessageId
    role: ArchiveRole
    created_at: UtcDatetime
    text: Text
    covers: Annotated[StrictStr, Field(max_length=2 * MAX_ID_CHARS + 2)] | None = None


class ExportedItem(MemoryItem):
    """A long-term item's stored value and its id: the item's own fields, no others."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ItemId


class ExportDocument(_Part):
    """Everything a session owns (see the module docstring)."""

    format: Literal["langgraph-memory-agent.export"]
    version: Literal[1]
    exported_at: UtcDatetime
    conversations: list[ExportedConversation] = Field(max_length=MAX_CONVERSATIONS)
    memories: list[ExportedItem] = Field(max_length=MAX_MEMORY_ITEMS + MAX_HISTORY_ITEMS)
    archive: list[ExportedLine] = Field(max_length=MAX_EXPORT_LINES)
    tombstones: list[ItemId] = Field(max_length=MAX_TOMBSTONES)
    history_cleared_at: UtcDatetime | None = None

    @model_validator(mode="after")
    def _unique(self) -> ExportDocument:
        for what, ids in (
            ("conversation id", [c.id for c in self.conversations]),
            ("memory id", [item.id for item in self.memories]),
        ):
            if len(set(ids)) < len(ids):
                raise ValueError(DUPLICATE.format(what=what))
        return self


def read_document(raw: object) -> ExportDocument:
    """The export document in `raw` (JSON text or bytes, or the parsed object), checked.

    Raises:
        InvalidInput: larger than `MAX_EXPORT_BYTES`, not JSON, not a document of this
            format and version, past a limit, or holding text a backend cannot store;
            the message names the first problems (never the document's values).
    """
    try:
        if isinstance(raw, str | bytes | bytearray):
            size = len(raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw)
            if size <= MAX_EXPORT_BYTES:
                raw = json.loads(raw)
        else:
            size = len(json.dumps(raw, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError, RecursionError):  # not JSON, or nested past Python's limit
        raise InvalidInput(NOT_JSON) from None
    if size > MAX_EXPORT_BYTES:
        raise InvalidInput(TOO_LARGE.format(limit=MAX_EXPORT_BYTES))
    try:
        document = ExportDocument.model_validate(raw)
    except ValidationError as exc:
        raise InvalidInput(INVALID_DOCUMENT.format(problems=_problems(exc))) from None
    _require_storable(raw)
    return document


def _problems(exc: ValidationError) -> str:
    shown = [
        f"{'.'.join(map(str, error['loc'])) or 'document'}: {error['msg']}"
        for error in exc.errors()[:_SHOWN_PROBLEMS]
    ]
    more = exc.error_count() - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _require_storable(value: object) -> None:
    """Every string of a validated document is one that every backend can store."""
    pending = [value]
    while pending:
        current = pending.pop()
        if isinstance(current, str):
            require_storable(current, "a text of the export document")
        elif isinstance(current, dict):
            pending.extend([*current.keys(), *current.values()])
        elif isinstance(current, list):
            pending.extend(current)


# -- export --------------------------------------------------------------------------------


def export_session(
    memory: ConversationMemory, long_term: LongTermMemory, session_id: str
) -> dict[str, Any]:
    """Everything `session_id` owns, as a document `read_document` takes back: read
    under the session's locks, so no turn's write lands half in it."""
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
                "id": entry.id,
                "title": entry.title,
                "createdAt": entry.created_at.isoformat(),
                "lastActiveAt": entry.last_active_at.isoformat(),
                "memory": ThreadState.from_document(stored.get(thread, {})).to_document(),
            }
            for entry, thread in zip(listed, threads, strict=True)
        ],
        "memories": [_item(item) for item in items],
        "archive": [
            {
                "conversationId": row.conversation_id,
                "title": row.title,
                "messageId": row.message_id,
                "role": row.role,
                "createdAt": row.created_at.isoformat(),
                "text": row.text,
                "covers": row.covers,
            }
            for row in lines
        ],
        "tombstones": list(registry.forgotten),
        "historyClearedAt": None if cleared is None else cleared.isoformat(),
    }
    assert_client_safe(document)
    return document


def _item(item: MemoryItem) -> dict[str, Any]:
    value = {"id": item.id, **item.to_value()}
    # which path wrote an item is internal: `source` is a key no client payload carries
    value.pop("source", None)
    return value


# -- import --------------------------------------------------------------------------------


def import_session(
    memory: ConversationMemory, long_term: LongTermMemory, session_id: str, raw: object
) -> dict[str, Any]:
    """Import the document in `raw` into `session_id` by the module's rules, in one
    transaction; returns what it did: `{"conversations": {imported, skipped, pruned},
    "memories": {imported, skipped, refused}, "archive": {imported, skipped, redacted}}`
    (`pruned`: listed conversations, the session's or imported ones, that the import
    pushed past ten; `refused`: items holding a secret).

    Raises:
        InvalidInput: see `read_document`; or the session would hold more than 100
            current items or 100 of history. Nothing was written.
    """
    document = read_document(raw)
    # the secret scans, before any lock is taken
    safe = [item for item in document.memories if not _holds_secret(item)]
    scanned = _rows(memory, session_id, document.archive)
    redacted = {
        (row.conversation_id, row.message_id)
        for row, line in zip(scanned, document.archive, strict=True)
        if row.text != line.text
    }
    with long_term.lock(session_id), memory.documents.lock(session_id):
        registry = memory.registry(session_id)
        held = long_term.all_items(session_id)
        items = _new_items(safe, held, {*registry.forgotten, *document.tombstones})
        new = [c for c in document.conversations if not registry.owns(c.id)]
        listed = add_listed(registry, [_entry(memory, session_id, c) for c in new])
        change = RegistryChange(_with_marks(listed.state, document), listed.pruned)
        states = {c.id: c.memory for c in new if c.id not in change.pruned}
        rows = _unarchived(scanned, registry, memory.archive.lines(session_id))
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
    return {
        "conversations": {
            "imported": len(states),
            "skipped": len(document.conversations) - len(new),
            "pruned": len(change.pruned),
        },
        "memories": {
            "imported": len(items),
            "skipped": len(safe) - len(items),
            "refused": len(document.memories) - len(safe),
        },
        "archive": {
            "imported": len(rows),
            "skipped": len(document.archive) - len(rows),
            "redacted": sum((row.conversation_id, row.message_id) in redacted for row in rows),
        },
    }


def _holds_secret(item: MemoryItem) -> bool:
    quote = item.provenance.quote if item.provenance is not None else ""
    return find_secret(item.text) is not None or find_secret(quote) is not None


def _new_items(
    items: list[ExportedItem], held: list[MemoryItem], forgotten: set[str]
) -> list[ExportedItem]:
    """The `items` to import beside the `held` ones (see the module's rules).

    Raises:
        InvalidInput: the session would hold more current items, or more of history,
            than it keeps.
    """
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
    """`registry` with the document's tombstones after its own (the newest kept) and the
    later of the two times the archive was forgotten."""
    forgotten = [*registry.forgotten]
    forgotten += [t for t in dict.fromkeys(document.tombstones) if t not in forgotten]
    times = [t for t in (registry.history_cleared_at, document.history_cleared_at) if t]
    return registry.model_copy(
        update={
            "forgotten": forgotten[-MAX_TOMBSTONES:],
            "history_cleared_at": max(times, default=None),
        }
    )


def _entry(
    memory: ConversationMemory, session_id: str, c: ExportedConversation
) -> ConversationEntry:
    return ConversationEntry(
        id=c.id,
        title=_kept(c.title),
        created_at=c.created_at,
        last_active_at=c.last_active_at,
        key=memory.ids.conversation_key(session_id, c.id),
    )


def _unarchived(
    rows: list[ArchiveRow], registry: RegistryState, archived: list[ArchiveRow]
) -> list[ArchiveRow]:
    """The `rows` to import: not of a conversation the session owns, nor archived (a
    line the document repeats is imported once)."""
    seen = {(row.conversation_id, row.message_id) for row in archived}
    chosen = []
    for row in rows:
        mark = (row.conversation_id, row.message_id)
        if not registry.owns(row.conversation_id) and mark not in seen:
            chosen.append(row)
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
            conversation_id=line.conversation_id,
            title=_kept(line.title),
            message_id=line.message_id,
            role=line.role,
            created_at=line.created_at,
            text=redact_secrets(line.text),
            covers=line.covers,
        )
        for line in lines
    ]


@functools.lru_cache(maxsize=1024)  # a conversation's lines share its title
def _kept(title: str) -> str:
    """A title as the registry and the archive keep it: secrets redacted, one line."""
    return make_title(redact_secrets(title))
