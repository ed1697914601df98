"""Writing a finished turn: its two messages appended to the conversation's memory once,
the conversation listed (pruning past ten) and its lines archived, in one commit; nothing
when the conversation is no longer the session's, and nothing of an item forgotten while
the turn ran."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from memory.errors import VersionConflict
from memory.longterm.items import MemoryItem
from memory.redaction import repeats_forgotten, said_of
from memory.registry import archives_summaries, entry_title, record_turn, settle_review
from memory.schema import Clock, ThreadState
from memory.session_documents import SessionDocuments, Snapshot
from memory.turns import FinalTurn, SkipReason, plan_turn_write


@dataclass(frozen=True)
class TurnWrite:
    """The outcome of writing a finished turn: the memory as stored, the conversations
    pruned from the registry (their threads are deleted) with their titles for a notice,
    and `forgotten`, the texts of items forgotten while the turn ran, taken out of what it
    wrote (`memory.redaction.repeats_forgotten`): the turn's own outcome loses them too."""

    written: bool
    skipped: SkipReason | None
    state: ThreadState
    pruned: tuple[str, ...] = ()
    pruned_titles: tuple[str, ...] = ()
    forgotten: tuple[str, ...] = ()


def commit_turn(
    documents: SessionDocuments,
    append: Callable[..., ThreadState],
    clock: Clock,
    session_id: str,
    conversation_id: str,
    turn: FinalTurn,
    kept: str,
    snapshot: Snapshot,
    owe_remember: bool,
    held: Sequence[MemoryItem],
    context: Sequence[str],
    *,
    checked: bool = False,
) -> TurnWrite:
    """`ConversationMemory.write_turn` from `snapshot`, under the session's lock: `append`
    adds the turn's messages to the memory (`memory.turns.with_turn`, bound to its keep), the
    clock dates it (`checked`: read before the lock, so the commit checks that the stored
    documents are still those)."""
    now = clock()
    current = snapshot.memory
    tombstones = set(snapshot.registry.forgotten)
    forgotten = tuple(said_of(item for item in held if item.id in tombstones))
    plan = plan_turn_write(current, turn, now)
    gone = not snapshot.registry.owns(conversation_id)
    if checked and (gone or plan.skipped is not None):  # decided on what is stored now
        raise VersionConflict(current.version, current.version)
    if gone:
        return TurnWrite(False, SkipReason.GONE, current, forgotten=forgotten)
    redact = repeats_forgotten(forgotten)
    if redact is not None:
        texts = tuple(m.model_copy(update={"text": redact(m.text)}) for m in plan.messages)
        plan, kept = replace(plan, messages=texts), redact(kept)
    if plan.skipped is not None:
        # a review this turn ended is over; with nothing stored, nothing is listed
        ended = settle_review(snapshot.registry, conversation_id, unlist=not current.messages)
        if ended.state is not snapshot.registry:
            documents.commit(session_id, snapshot.registry, ended)
        return TurnWrite(False, plan.skipped, current, forgotten=forgotten)
    state = append(current, plan.messages, owe_remember=owe_remember, now=now)
    key = documents.ids.conversation_key(session_id, conversation_id)
    change = record_turn(
        snapshot.registry, conversation_id, kept, now, key, retitle=not current.messages
    )
    archives = archives_summaries(snapshot.registry, conversation_id)
    folded = current if archives and state.summary_version != current.summary_version else None
    title = entry_title(change.state, conversation_id)
    lines = documents.archive.turn(
        session_id, conversation_id, title, plan.messages, folded, user_text=kept, context=context
    )
    memory = {conversation_id: state}
    read = (conversation_id, snapshot) if checked else None
    documents.commit(session_id, snapshot.registry, change, memory, lines, read=read)
    pruned_titles = tuple(e.title for e in snapshot.registry.conversations if e.id in change.pruned)
    return TurnWrite(True, None, state, change.pruned, pruned_titles, forgotten)
