"""The export document: everything a session owns as one versioned JSON document, its
schema and what an import checks of it before anything is written.

Archived lines keep their order, which breaks a search's ties. No session id, thread id
or hashed key is in it, nor the marks of forgotten texts (keyed under the server's
secret): `memory.transfer` files everything again under the importing session's keys.
Every key is camelCase, as the API's; a document of an earlier release, whose memories
and items kept the stored snake_case keys, reads the same.

A document is user input, however it was made. Each item passes the write gate as one
the user adds by hand (its provenance proves nothing: a quote is kept only when it
passes a quote's checks); one refused item refuses the whole import. Conversations'
texts are redacted as a turn's archived ones, and every time is bounded by now.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel, to_snake

from memory.analysis import redact_secrets
from memory.archive.lines import REDACTED, ArchiveRole
from memory.errors import InvalidInput
from memory.limits import (
    MAX_CONVERSATIONS,
    MAX_EXPORT_BYTES,
    MAX_EXPORT_LINES,
    MAX_EXPORT_TEXT_CHARS,
    MAX_HISTORY_ITEMS,
    MAX_ID_CHARS,
    MAX_IMPORTANCE,
    MAX_MEMORY_ITEMS,
    MAX_MEMORY_TEXT_CHARS,
    MAX_TITLE_CHARS,
    MAX_TOMBSTONES,
    MIN_IMPORTANCE,
)
from memory.longterm.evidence import MESSAGES, verify
from memory.longterm.gate import explicit, plan_write
from memory.longterm.items import MemoryItem
from memory.longterm.secrets import find_secret
from memory.schema import MessageId, ThreadState, UtcDatetime, require_storable

FORMAT = "langgraph-memory-agent.export"
VERSION = 1
TOO_LARGE = "an export document is at most {limit:,} bytes"
NOT_JSON = "the export document is not JSON"
INVALID_DOCUMENT = "invalid export document: {problems}"
TEXT_TOO_LONG = f"a text is at most {MAX_EXPORT_TEXT_CHARS:,} characters"
DUPLICATE = "each {what} appears once"
REFUSED_ITEM = "invalid export document: memories.{index} ({id}): {why}; nothing was imported"
SECRET_FIELD = "its {field} holds a secret"
_SHOWN_PROBLEMS = 3

ItemId = Annotated[StrictStr, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
"""A long-term item's id, as `LongTermMemory.forget` takes it."""
Title = Annotated[StrictStr, Field(max_length=MAX_TITLE_CHARS)]


def renamed(value: Any, rule: Callable[[str], str] = to_camel) -> Any:
    """`value` (JSON) with every object key renamed by `rule`: camelCase, as the document
    writes them, or `to_snake`, as the stored models name them (a document of an earlier
    release spelt a conversation's memory and its items so)."""
    if isinstance(value, dict):
        return {rule(key): renamed(item, rule) for key, item in value.items()}
    if isinstance(value, list):
        return [renamed(item, rule) for item in value]
    return value


_stored_names = functools.partial(renamed, rule=to_snake)


def _texts_fit(memory: ThreadState) -> ThreadState:
    if any(len(m.text) > MAX_EXPORT_TEXT_CHARS for m in [*memory.messages, *memory.upkeep_owed]):
        raise ValueError(TEXT_TOO_LONG)
    return memory


class _Part(BaseModel):
    """A part of the document: camelCase keys, no others."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel)


class ExportedConversation(_Part):
    """A listed conversation and its memory, as stored."""

    id: MessageId
    title: Title
    created_at: UtcDatetime
    last_active_at: UtcDatetime
    memory: Annotated[ThreadState, BeforeValidator(_stored_names), AfterValidator(_texts_fit)]


class ExportedLine(_Part):
    """An archived line: what the archive's index and its searches read."""

    conversation_id: MessageId
    title: Title
    message_id: MessageId
    role: ArchiveRole
    created_at: UtcDatetime
    text: Annotated[StrictStr, Field(min_length=1, max_length=MAX_EXPORT_TEXT_CHARS)]
    covers: Annotated[StrictStr, Field(max_length=2 * MAX_ID_CHARS + 2)] | None = None
    indexed: Annotated[StrictStr, Field(max_length=MAX_EXPORT_TEXT_CHARS)] | None = None
    """What a search finds the line by, when not its whole text (an answer without what
    it repeats of its context: empty when that is all it says)."""


class ExportedItem(MemoryItem):
    """A long-term item's stored value and its id: the item's own fields, no others,
    strictly typed (`importance: true` is no number). Its `key` and `subject` are the
    gate's to derive (`checked`): here they are only bounded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: ItemId
    importance: StrictInt = Field(ge=MIN_IMPORTANCE, le=MAX_IMPORTANCE)
    key: Annotated[StrictStr, Field(max_length=2 * MAX_MEMORY_TEXT_CHARS)]
    subject: Title | None = None


class ExportDocument(_Part):
    """Everything a session owns (see the module docstring)."""

    format: Literal["langgraph-memory-agent.export"]
    version: Annotated[StrictInt, Field(ge=VERSION, le=VERSION)]
    exported_at: UtcDatetime
    conversations: list[ExportedConversation] = Field(max_length=MAX_CONVERSATIONS)
    memories: list[Annotated[ExportedItem, BeforeValidator(_stored_names)]] = Field(
        max_length=MAX_MEMORY_ITEMS + MAX_HISTORY_ITEMS
    )
    archive: list[ExportedLine] = Field(max_length=MAX_EXPORT_LINES)
    tombstones: list[ItemId] = Field(max_length=2 * MAX_TOMBSTONES)
    """The session's own tombstones, then those it imported."""
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


def read_document(raw: object, now: datetime) -> ExportDocument:
    """The export document in `raw` (JSON text or bytes, or the parsed object), checked,
    each time in it bounded by `now` (`memory.schema.CLOCK_SKEW`): `InvalidInput` names
    the first problems (never the document's values)."""
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
        document = ExportDocument.model_validate(raw, context={"now": now})
    except ValidationError as exc:
        shown = []
        for error in exc.errors()[:_SHOWN_PROBLEMS]:  # each place named as the document spells it
            place = ".".join(to_camel(p) if isinstance(p, str) else str(p) for p in error["loc"])
            shown.append(f"{place or 'document'}: {error['msg']}")
        more = exc.error_count() - len(shown)
        problems = "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")
        raise InvalidInput(INVALID_DOCUMENT.format(problems=problems)) from None
    _require_storable(raw)
    return document


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


def checked(document: ExportDocument, now: datetime) -> ExportDocument:
    """`document` as an import may write it; `InvalidInput` names a refused item by its
    place, never its text."""
    return document.model_copy(
        update={
            "memories": [_gated(n, item, now) for n, item in enumerate(document.memories)],
            # each sentence of a memory that holds a secret redacted, as a turn's
            "conversations": [
                rewritten(c, redact_secrets, REDACTED) for c in document.conversations
            ],
        }
    )


def _gated(index: int, item: ExportedItem, now: datetime) -> ExportedItem:
    """`item` as the gate makes it when the user adds its text by hand (`InvalidInput`:
    the gate refuses it, its quote, or a secret in its key or subject)."""

    def refuse(why: str) -> InvalidInput:
        return InvalidInput(REFUSED_ITEM.format(index=index, id=item.id, why=why))

    for field, text in (("key", item.key), ("subject", item.subject)):
        if text and find_secret(text) is not None:
            raise refuse(SECRET_FIELD.format(field=field))
    operation, turn = explicit(item.text, item.kind, item.importance, now)
    plan = plan_write([], [operation], [turn], source="explicit")
    if plan.refused:
        raise refuse(plan.refused[0].message)
    quote = item.provenance.quote if item.provenance is not None else ""
    if quote.strip():
        said, heard = explicit(quote, item.kind, item.importance, now)
        refused = verify(said, [heard])
        if refused is not None:
            reason, kind = refused
            raise refuse("its quote: " + MESSAGES[reason].format(kind=kind))
    (made,) = plan.added
    return item.model_copy(
        update={"text": made.text, "key": made.key, "subject": made.subject, "source": "explicit"}
    )


def rewritten(
    conversation: ExportedConversation, rule: Callable[[str], str], marker: str
) -> ExportedConversation:
    """`conversation` with `rule` applied to its memory's texts, without the pins and open
    questions that then read `marker` alone: a redacted decision binds nothing."""
    memory = conversation.memory.with_texts(rule)
    pins = [pin for pin in memory.pinned_decisions if pin != marker]
    questions = [question for question in memory.open_questions if question != marker]
    memory = memory.model_copy(update={"pinned_decisions": pins, "open_questions": questions})
    if memory == conversation.memory:
        return conversation
    return conversation.model_copy(update={"memory": memory})
