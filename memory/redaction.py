"""Redaction: a forgotten text taken out of everything a session's memory keeps.

An earlier answer, a summary, a pin, a title or a workflow's run state could still
carry a forgotten item into a later context, and the archive could recall the turn it
was learnt from: `forget_texts` replaces the item's text and the user's words that
stated it (case and whitespace aside) with `[forgotten]` in every thread of the session
and in the archive, in the item store's own transaction. A turn that raced the
forgetting takes out the sentences that repeat the item as well (`repeats_forgotten`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from pydantic import BaseModel, ValidationError

from memory.archive.archive import Archive
from memory.archive.forgetting import forget_sentences
from memory.archive.lines import FORGOTTEN
from memory.ids import MEMORY_THREAD_PREFIX, ThreadIds, session_threads
from memory.limits import MAX_FORGOTTEN_MARKS, MAX_QUOTE_CHARS, MAX_TOMBSTONES
from memory.longterm.items import MemoryItem
from memory.registry import RegistryState
from memory.schema import ThreadState
from memory.storage import ThreadStore
from memory.storage.documents import InTransaction, in_order
from memory.tombstones import marks_of

_MAX_DEPTH = 64

Substitute = Callable[[str], str]
"""A string's forgotten parts replaced by `[forgotten]` (the very same string when none)."""


def forgotten_pattern(texts: Iterable[str]) -> re.Pattern[str] | None:
    """One pattern matching any of `texts` (case-insensitive, any run of whitespace
    between words), longest first; None when there is nothing to match."""
    alternatives = {r"\s+".join(map(re.escape, text.split())) for text in texts if text.split()}
    if not alternatives:
        return None
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True)), re.IGNORECASE)


def said_of(items: Iterable[MemoryItem]) -> list[str]:
    """What forgetting `items` takes out of a text: each one's text, and the user's words
    that stated it (its provenance quote) unless the text is within them, where the rest
    of the quote may state another item ("I live in Lisbon and I work as an engineer")."""
    texts = []
    for item in items:
        texts.append(item.text)
        quote = item.provenance.quote if item.provenance is not None else ""
        own = forgotten_pattern([item.text])
        if quote.strip() and (own is None or own.search(quote) is None):
            texts.append(quote)
    return texts


def without_traces(
    items: Iterable[MemoryItem], forgotten: Sequence[MemoryItem]
) -> list[MemoryItem]:
    """The `items` that keep a trace of the `forgotten` ones, rewritten without it: a quote
    holding their words (two items said in one sentence) reads `[forgotten]` there, and a
    history item one of them replaced names no successor (what replaced it is gone)."""
    pattern = forgotten_pattern(said_of(forgotten))
    gone = {item.id for item in forgotten}
    rewritten = []
    for item in items:
        update: dict[str, Any] = {}
        if item.superseded_by in gone:
            update["superseded_by"] = None
        provenance = item.provenance
        if pattern is not None and provenance is not None and pattern.search(provenance.quote):
            quote = pattern.sub(FORGOTTEN, provenance.quote)[:MAX_QUOTE_CHARS]
            update["provenance"] = provenance.model_copy(update={"quote": quote})
        if update:
            rewritten.append(item.model_copy(update=update))
    return rewritten


def repeats_forgotten(texts: Sequence[str]) -> Substitute | None:
    """What a turn that raced the forgetting of `texts` does to each string it writes: the
    texts, and each sentence that repeats one ("Since you live in Lisbon, …"), read
    `[forgotten]`, as the forgetting did to the archive (None: nothing was forgotten)."""
    pattern = forgotten_pattern(texts)
    if pattern is None:
        return None
    return lambda text: forget_sentences(pattern.sub(FORGOTTEN, text), texts)


def redact_value(value: Any, redact: Substitute, *, keep_length: bool = False) -> Any:
    """`value` with `redact` applied to the strings in it (dicts, lists, tuples, pydantic
    models, dataclasses); the very same object when nothing changed. `keep_length` cuts a
    string the marker grew back to its length (documents with length limits)."""
    return _walk(value, redact, keep_length, 0)


def _walk(value: Any, redact: Substitute, keep_length: bool, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return value
    if isinstance(value, str):
        redacted = redact(value)
        if redacted == value:
            return value
        return redacted[: len(value)] if keep_length else redacted
    if isinstance(value, dict):
        items = {key: _walk(item, redact, keep_length, depth + 1) for key, item in value.items()}
        if all(items[key] is item for key, item in value.items()):
            return value
        return items if type(value) is dict else type(value)(items)
    if isinstance(value, list | tuple):
        walked = [_walk(item, redact, keep_length, depth + 1) for item in value]
        if all(new is old for new, old in zip(walked, value, strict=True)):
            return value
        return walked if isinstance(value, list) else type(value)(walked)
    if isinstance(value, BaseModel):
        names: Iterable[str] = type(value).model_fields
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value) if f.init]
    else:
        return value
    fields = {name: _walk(getattr(value, name), redact, keep_length, depth + 1) for name in names}
    changed = {name: new for name, new in fields.items() if new is not getattr(value, name)}
    if not changed:
        return value
    if isinstance(value, BaseModel):
        return value.model_copy(update=changed)
    return dataclasses.replace(value, **changed)


def _redact_document(thread_id: str, value: Any, redact: Substitute, texts: Sequence[str]) -> Any:
    """A memory or registry document redacted so that it still validates (a string the
    marker would push past its limit keeps its length), a memory's sentences that repeat
    one of `texts` read `[forgotten]` too, as the archive's lines do ("Noted, a vegetarian
    since 2019."); the very same document when nothing changed. Its `version` moves on,
    so that a compaction computed from the text before fails its compare-and-set."""
    redacted = redact_value(value, redact)
    memory = thread_id.startswith(MEMORY_THREAD_PREFIX)
    if redacted is not value:
        try:
            (ThreadState if memory else RegistryState).model_validate(redacted)
        except ValidationError:
            redacted = redact_value(value, redact, keep_length=True)
        redacted = {**redacted, "version": int(redacted.get("version", 0)) + 1}
    if not memory:
        return redacted
    state = ThreadState.from_document(redacted)
    forgotten = state.with_texts(lambda text: forget_sentences(text, texts))
    if forgotten == state:
        return redacted
    return {**forgotten.to_document(), "version": state.version + 1}


def forget_texts(
    threads: ThreadStore,
    ids: ThreadIds,
    archive: Archive,
    session_id: str,
    items: Sequence[MemoryItem],
    also: InTransaction,
) -> None:
    """Forget `items` as the module docstring says (each thread's documents, run
    checkpoints and pending writes) and run `also`, the item store's delete, in one
    transaction, all or nothing. The registry keeps a tombstone of each id (a turn that
    recalled one meanwhile redacts it from what it writes) and marks of the texts (no
    later import brings them back).

    The caller holds the session's long-term lock (the items cannot change meanwhile);
    this takes the session's documents lock after it, the one every writer of the
    session's documents and archived lines holds (no turn lands a line between the
    archive's plan and its rewrite), then the database transaction.
    """
    texts = said_of(items)
    pattern = forgotten_pattern(texts)
    registry = ids.registry_thread(session_id)
    with threads.lock(registry):
        documents: dict[str, Any] = {}
        runs = None
        if pattern is not None:
            replace = partial(pattern.sub, FORGOTTEN)
            memory_prefix, run_prefix = session_threads(ids.session_key(session_id))
            stored = threads.get_many([registry, *threads.list_threads(memory_prefix)])
            redacted = {t: _redact_document(t, d, replace, texts) for t, d in stored.items()}
            documents = {t: new for t, new in redacted.items() if new is not stored[t]}
            # a run thread holds its turn's messages: an answer that restated the item in
            # its own words goes too, as in the conversation's memory
            in_runs = repeats_forgotten(texts) or replace
            runs = partial(
                threads.documents.redact_runs,
                thread_ids=threads.list_threads(run_prefix),
                redact=lambda _, value: redact_value(value, in_runs),
                serde=threads.checkpointer.serde,
            )
        listing = documents.get(registry) or threads.get(registry)
        if listing is not None:  # (a session that never chatted has no turn to race)
            tombstones = [*listing.get("forgotten", []), *(item.id for item in items)]
            added = [m.model_dump() for m in marks_of(texts, ids.mark)]
            marks = [*listing.get("forgotten_marks", []), *added]
            documents[registry] = {
                **listing,
                "forgotten": tombstones[-MAX_TOMBSTONES:],
                "forgotten_marks": marks[-MAX_FORGOTTEN_MARKS:],
                "version": int(listing.get("version", 0)) + 1,
            }
        steps = in_order(runs, archive.forgetter(session_id, texts), also)
        threads.put_many(documents, also=steps)
