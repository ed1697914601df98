"""The client events of a turn, typed: what `ChatAgent.astream` yields, the HTTP app sends
as server-sent events (`event: <name>`, `data: <the other keys as JSON>`), the chat
page reads and the terminal chat prints.

Each event is a `TypedDict` tagged by its `event` key; `ClientEvent` is their union.
A turn's stream starts with `conversation` and ends with `done` or `error`, and the
`memory` events of the upkeep it left owed may follow `done`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict


class TurnResultDTO(TypedDict):
    """A `TurnResult` in camelCase, as `done` carries it (`TurnResult.to_dict`)."""

    conversationId: str
    status: str
    route: str
    text: str
    interrupt: dict[str, Any] | None
    memoryWritten: bool
    compaction: str
    degraded: bool
    conversationDeleted: bool
    remembered: list[str]
    upkeep: str


class ConversationEvent(TypedDict):
    """The conversation the turn runs in (a new one for a draft's first message)."""

    event: Literal["conversation"]
    conversationId: str


class TokenEvent(TypedDict):
    """A piece of the answer, as the chat model streams it."""

    event: Literal["token"]
    text: str


class StatusEvent(TypedDict):
    """Where the turn is: its route (`stage: route`), a tool call (`stage: tool`), or a
    workflow's progress (a delivery's stages, a task list's steps)."""

    event: Literal["status"]
    stage: str
    route: NotRequired[str | None]
    name: NotRequired[str | None]
    workflow: NotRequired[str]
    status: NotRequired[str]
    step: NotRequired[str]
    reviewer: NotRequired[str | None]
    words: NotRequired[int]
    tasks: NotRequired[int]
    deliverables: NotRequired[int]
    task: NotRequired[int]
    done: NotRequired[int]
    passed: NotRequired[bool]
    chars: NotRequired[int]
    taskId: NotRequired[str]
    title: NotRequired[str]
    index: NotRequired[int]
    total: NotRequired[int]
    issues: NotRequired[int]


PROGRESS_FIELDS = tuple(key for key in StatusEvent.__annotations__ if key != "event")
"""The fields a workflow's progress event may carry to the client."""


class MemoryEvent(TypedDict):
    """What the memory did: a recall, the write, an extraction, a compaction, the end of
    an upkeep, or a conversation listed as waiting for its review."""

    event: Literal["memory"]
    stage: str
    status: str
    reason: NotRequired[str]
    messages: NotRequired[int]
    summaryChars: NotRequired[int]
    pinnedDecisions: NotRequired[int]
    summaryVersion: NotRequired[int]
    remembered: NotRequired[int]
    retired: NotRequired[int]
    lines: NotRequired[list[int]]
    pruned: NotRequired[list[str]]


MEMORY_FIELDS = tuple(key for key in MemoryEvent.__annotations__ if key != "event")
"""The fields a memory event may carry to the client."""


class InterruptEvent(TypedDict):
    """The turn waits for a review: its payload (what `resume` answers)."""

    event: Literal["interrupt"]
    interrupt: dict[str, Any]


class DoneEvent(TypedDict):
    """The turn's result: the last event of a turn that ran to its end."""

    event: Literal["done"]
    result: TurnResultDTO


class ErrorEvent(TypedDict):
    """The turn failed or was refused: a stable code and a message safe to show."""

    event: Literal["error"]
    code: str
    message: str


ClientEvent = (
    ConversationEvent
    | TokenEvent
    | StatusEvent
    | MemoryEvent
    | InterruptEvent
    | DoneEvent
    | ErrorEvent
)
"""Any event of a turn's stream, told apart by its `event` key."""
