"""What an import checks of an export document before anything is written: the document
is user input, however it was made.

Each item passes the write gate as one the user adds by hand (its provenance proves
nothing: a quote is kept only when it passes a quote's checks); one refused item refuses
the whole import. Conversations' texts are redacted as a turn's archived ones. Every
time is bounded by now: a conversation dated in the future would otherwise outrank
every other and never be idle.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel

from memory.analysis import redact_secrets
from memory.archive.lines import REDACTED
from memory.errors import InvalidInput
from memory.export_document import ExportDocument, ExportedConversation, ExportedItem
from memory.longterm.evidence import MESSAGES, verify
from memory.longterm.gate import explicit, plan_write
from memory.longterm.secrets import find_secret
from memory.schema import ThreadState

CLOCK_SKEW = timedelta(minutes=5)
"""How far ahead of this server's clock another server's may run."""
FUTURE_TIME = "invalid export document: {path}: a time after now"
REFUSED_ITEM = "invalid export document: memories.{index} ({id}): {why}; nothing was imported"
SECRET_FIELD = "its {field} holds a secret"


def checked(document: ExportDocument, now: datetime) -> ExportDocument:
    """`document` as an import may write it; `InvalidInput` names a time too far ahead
    of `now` or a refused item by its place, never its text."""
    bounded: ExportDocument = _bounded(document, now, "")
    return bounded.model_copy(
        update={
            "memories": [_gated(n, item, now) for n, item in enumerate(bounded.memories)],
            "conversations": [_without_secrets(c) for c in bounded.conversations],
        }
    )


def _bounded(value: Any, now: datetime, path: str) -> Any:
    """`value` with each time in it at most `now` (the very same object when none was
    later); `path` names where it is, by the document's keys."""
    if isinstance(value, datetime):
        if value > now + CLOCK_SKEW:
            raise InvalidInput(FUTURE_TIME.format(path=path or "document"))
        return now if value > now else value
    if isinstance(value, list):
        walked = [_bounded(v, now, f"{path}.{n}") for n, v in enumerate(value)]
        return walked if any(a is not b for a, b in zip(walked, value, strict=True)) else value
    if isinstance(value, BaseModel):
        changed = {}
        for name, field in type(value).model_fields.items():
            old = getattr(value, name)
            new = _bounded(old, now, f"{path}.{field.alias or name}".lstrip("."))
            if new is not old:
                changed[name] = new
        return value.model_copy(update=changed) if changed else value
    return value


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


def _without_secrets(conversation: ExportedConversation) -> ExportedConversation:
    """`conversation` with each sentence of its memory that holds a secret redacted."""
    memory = without_marked(conversation.memory.with_texts(redact_secrets), REDACTED)
    if memory == conversation.memory:
        return conversation
    return conversation.model_copy(update={"memory": memory})


def without_marked(memory: ThreadState, marker: str) -> ThreadState:
    """`memory` without the pins and open questions that read `marker` alone: a
    redacted decision binds nothing."""
    pins = [pin for pin in memory.pinned_decisions if pin != marker]
    questions = [question for question in memory.open_questions if question != marker]
    if len(pins) == len(memory.pinned_decisions) and len(questions) == len(memory.open_questions):
        return memory
    return memory.model_copy(update={"pinned_decisions": pins, "open_questions": questions})
