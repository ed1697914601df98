"""A conversation's memory after each kind of write: a turn appended, a compaction
stored over turns that landed meanwhile, an upkeep settled.

Pure functions of what was read: `ConversationMemory` reads under the session's lock,
calls them, and commits what they return.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from datetime import datetime

from memory.compaction import local_fallback
from memory.limits import HARD_MESSAGE_CAP, MAX_OWED_TEXTS
from memory.schema import ChatThreadMessage, ThreadState

logger = logging.getLogger(__name__)


def owed_after_turn(
    current: ThreadState, written: Sequence[ChatThreadMessage], owe_remember: bool
) -> list[ChatThreadMessage]:
    """The user messages owed a long-term extraction once `written` is appended (at
    most `MAX_OWED_TEXTS`: past it, the oldest are given up)."""
    owed = list(current.upkeep_owed)
    if owe_remember:
        owed += [m for m in written if m.role == "user"]
    if len(owed) > MAX_OWED_TEXTS:
        logger.warning(
            "upkeep fell behind: %d owed extractions given up", len(owed) - MAX_OWED_TEXTS
        )
        owed = owed[-MAX_OWED_TEXTS:]
    return owed


def with_turn(
    current: ThreadState,
    written: Sequence[ChatThreadMessage],
    *,
    owe_remember: bool,
    keep: int,
    now: datetime,
    owe_embedding: bool = False,
) -> ThreadState:
    """`current` with a turn's messages appended and the upkeep it leaves owed (with
    `owe_embedding`, its user line's embedding): past `HARD_MESSAGE_CAP` messages the
    local fallback folds the oldest ones, so the bound holds even when no compaction
    ever succeeds."""
    said = [m.id for m in written if m.role == "user"]
    grown = current.model_copy(
        update={
            "messages": [*current.messages, *written],
            "version": current.version + 1,
            "upkeep_owed": owed_after_turn(current, written, owe_remember),
            "embedding_owed": said[-1] if owe_embedding and said else current.embedding_owed,
        }
    )
    if len(grown.messages) > HARD_MESSAGE_CAP:
        grown = local_fallback(grown, keep, now)
    if grown.owes_upkeep:
        grown = grown.model_copy(update={"upkeep": "pending"})
    return ThreadState.model_validate(grown.to_document())


def rebase(
    snapshot: ThreadState, current: ThreadState, compacted: ThreadState, keep: int, now: datetime
) -> ThreadState | None:
    """Replay turns appended after `snapshot` on top of `compacted`, if only appends
    happened (None otherwise: another compaction got there first)."""
    seen = len(snapshot.messages)
    unchanged = (
        current.summary == snapshot.summary
        and current.summary_version == snapshot.summary_version
        and current.pinned_decisions == snapshot.pinned_decisions
        and current.messages[:seen] == snapshot.messages
    )
    if not unchanged:
        return None
    rebased = compacted.model_copy(
        update={"messages": [*compacted.messages, *current.messages[seen:]]}
    )
    if len(rebased.messages) > HARD_MESSAGE_CAP:
        rebased = local_fallback(rebased, keep, now)
    return rebased


def with_compaction(compacted: ThreadState, current: ThreadState) -> ThreadState:
    """A compaction's result as stored over `current`: what upkeep owes is the stored
    record's, never the snapshot's (turns may have added to it while the model ran)."""
    return compacted.model_copy(
        update={
            "version": current.version + 1,
            "upkeep": current.upkeep,
            "upkeep_owed": current.upkeep_owed,
            "embedding_owed": current.embedding_owed,
        }
    )


def settled(current: ThreadState, paid: Collection[str], *, failed: bool) -> ThreadState:
    """`current` once an upkeep run ended: the extractions of the messages `paid` off
    the record, and the embedding owed when it was owed through one of them (a turn that
    landed meanwhile still owes its own), and the status of what is left (`failed` when
    the run failed, else `pending` while anything is still owed, else `done`)."""
    owed = [m for m in current.upkeep_owed if m.id not in paid]
    embedding = None if current.embedding_owed in paid else current.embedding_owed
    left = current.model_copy(update={"upkeep_owed": owed, "embedding_owed": embedding})
    status = "failed" if failed else "pending" if left.owes_upkeep else "done"
    return left.model_copy(update={"upkeep": status, "version": current.version + 1})
