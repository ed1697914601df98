"""What a finished turn writes to memory, and what the memory becomes after each write.

Only the user-visible text of a completed (or blocked) turn is written: one user
message and one assistant message. Tool calls and results, task-list state and
delivery artifacts never get here: `graphs.turn.final_turn` takes the route's final
text only.
The memory after a write (a turn appended, a compaction stored over turns that landed
meanwhile, an upkeep settled) is a pure function of what was read:
`ConversationMemory` reads under the session's lock, calls them, and commits what they
return.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import partial

from langchain_core.messages import AIMessage, BaseMessage

from memory.compaction import local_fallback
from memory.limits import DELIVERY_REPORT_MAX_CHARS, HARD_MESSAGE_CAP
from memory.schema import ChatThreadMessage, ThreadState, new_message_id, require_text, validate_id


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
    `owe_remember`, its user message's extraction: none owed is ever given up, upkeep pays
    them in batches of `MAX_OWED_IN_ONE_CALL`; with `owe_embedding`, its user line's
    embedding): past `HARD_MESSAGE_CAP` messages the local fallback folds the oldest ones,
    so the bound holds even when no compaction ever succeeds."""
    said = [m for m in written if m.role == "user"]
    grown = current.model_copy(
        update={
            "messages": [*current.messages, *written],
            "version": current.version + 1,
            "upkeep_owed": [*current.upkeep_owed, *(said if owe_remember else ())],
            "embedding_owed": said[-1].id if owe_embedding and said else current.embedding_owed,
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


def settled(
    current: ThreadState, paid: Collection[str], *, failed: bool, batching: bool = False
) -> ThreadState:
    """`current` once an upkeep run ended: the extractions of the messages `paid` off
    the record, and the embedding owed when it was owed through one of them (a turn that
    landed meanwhile still owes its own), and the status of what is left (`failed` when
    the run failed, else `pending` while anything is still owed, else `done`; with
    `batching`, extractions left to wait for their batch count as done)."""
    owed = [m for m in current.upkeep_owed if m.id not in paid]
    embedding = None if current.embedding_owed in paid else current.embedding_owed
    left = current.model_copy(update={"upkeep_owed": owed, "embedding_owed": embedding})
    waiting = left.owes_upkeep and not (
        batching and left.embedding_owed is None and not left.compaction_owed
    )
    status = "failed" if failed else "pending" if waiting else "done"
    return left.model_copy(update={"upkeep": status, "version": current.version + 1})


TRUNCATION_MARKER = "[Report truncated: {kept:,} of {total:,} characters kept in memory.]"


class Route(StrEnum):
    """The subgraph that produced a turn."""

    CHAT = "chat"
    TOOL = "tool"
    TASKLIST = "tasklist"
    DELIVERY = "delivery"


class TurnStatus(StrEnum):
    """How a turn ended."""

    COMPLETED = "completed"
    BLOCKED = "blocked"
    FAILED = "failed"
    CANCELLED = "cancelled"


class SkipReason(StrEnum):
    """Why a finished turn wrote nothing."""

    STATUS = "status_not_written"
    EMPTY = "empty_text"
    DUPLICATE_ID = "duplicate_message_id"
    DUPLICATE_PAIR = "duplicate_last_pair"
    GONE = "conversation_gone"
    """The conversation was deleted or pruned while the turn ran: it stays deleted."""


@dataclass(frozen=True, kw_only=True)
class FinalTurn:
    """The user-visible outcome of one turn, as finalize sees it: `user_text` is the goal or
    request for workflows and `assistant_text` the final answer, summary or report; stable
    message ids make a write idempotent."""

    route: Route
    status: TurnStatus
    user_text: str
    assistant_text: str
    user_message_id: str | None = None
    assistant_message_id: str | None = None

    def __post_init__(self) -> None:
        set_field = partial(object.__setattr__, self)
        set_field("route", Route(self.route))
        set_field("status", TurnStatus(self.status))
        for name in ("user_text", "assistant_text"):
            set_field(name, require_text(getattr(self, name), name.replace("_", " ")))
        for name in ("user_message_id", "assistant_message_id"):
            if getattr(self, name) is not None:
                validate_id(getattr(self, name), name.replace("_", " "))


def final_ai_message(messages: Sequence[BaseMessage]) -> AIMessage | None:
    """The last assistant message that does not ask for a tool, if it is the last message."""
    if messages and isinstance(messages[-1], AIMessage) and not messages[-1].tool_calls:
        return messages[-1]
    return None


def chat_turn(
    user_text: str, answer: str, status: TurnStatus = TurnStatus.COMPLETED, **ids: str
) -> FinalTurn:
    """A chat turn of `user_text` and `answer` (what a caller outside the graph writes)."""
    return FinalTurn(
        route=Route.CHAT, status=status, user_text=user_text, assistant_text=answer, **ids
    )


def truncate_report(report: str, limit: int = DELIVERY_REPORT_MAX_CHARS) -> str:
    """`report` cut to at most `limit` characters: its head, then a marker line (in the limit)."""
    if len(report) <= limit:
        return report
    # The marker's length depends on the kept count; a bound on it is enough.
    marker_room = len(TRUNCATION_MARKER.format(kept=limit, total=len(report))) + 1
    kept = report[: limit - marker_room].rstrip()
    return f"{kept}\n{TRUNCATION_MARKER.format(kept=len(kept), total=len(report))}"


@dataclass(frozen=True)
class WritePlan:
    """What writing a turn would do: the messages to append, or why nothing is written."""

    messages: tuple[ChatThreadMessage, ...] = ()
    skipped: SkipReason | None = None


def plan_turn_write(state: ThreadState, turn: FinalTurn, now: datetime) -> WritePlan:
    """Apply the write rules to `turn` against the stored `state`."""
    if turn.status not in (TurnStatus.COMPLETED, TurnStatus.BLOCKED):
        return WritePlan(skipped=SkipReason.STATUS)
    if not turn.user_text or not turn.assistant_text:
        return WritePlan(skipped=SkipReason.EMPTY)
    pair = (
        ("user", turn.user_text, turn.user_message_id),
        ("assistant", turn.assistant_text, turn.assistant_message_id),
    )
    ids = {message_id for _, _, message_id in pair if message_id is not None}
    if ids & {message.id for message in state.messages}:
        return WritePlan(skipped=SkipReason.DUPLICATE_ID)
    last = [(message.role, message.text) for message in state.messages[-2:]]
    if not ids and last == [(role, text) for role, text, _ in pair]:
        return WritePlan(skipped=SkipReason.DUPLICATE_PAIR)
    return WritePlan(
        messages=tuple(
            ChatThreadMessage(id=mid or new_message_id(), role=role, text=text, created_at=now)
            for role, text, mid in pair
        )
    )
