"""What an import checks of an export document before anything is written: the document
is user input, however it was made.

Each item passes the write gate as one the user adds by hand (its provenance proves
nothing: a quote is kept only when it passes a quote's checks); one refused item refuses
the whole import. Conversations' texts are redacted as a turn's archived ones. (Every
time was bounded by now as the document was read: `memory.export_document`.)
"""

from __future__ import annotations

from datetime import datetime

from memory.analysis import redact_secrets
from memory.archive.lines import REDACTED
from memory.errors import InvalidInput
from memory.export_document import ExportDocument, ExportedConversation, ExportedItem
from memory.longterm.evidence import MESSAGES, verify
from memory.longterm.gate import explicit, plan_write
from memory.longterm.secrets import find_secret
from memory.schema import ThreadState

REFUSED_ITEM = "invalid export document: memories.{index} ({id}): {why}; nothing was imported"
SECRET_FIELD = "its {field} holds a secret"


def checked(document: ExportDocument, now: datetime) -> ExportDocument:
    """`document` as an import may write it; `InvalidInput` names a refused item by its
    place, never its text."""
    return document.model_copy(
        update={
            "memories": [_gated(n, item, now) for n, item in enumerate(document.memories)],
            "conversations": [_without_secrets(c) for c in document.conversations],
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
