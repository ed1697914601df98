"""The client events of a turn (`TypedDict`s tagged by `event`; `ClientEvent` their union)
and their translation from LangGraph stream parts: what `ChatAgent.astream` yields, SSE
carries, the page and the terminal chat show. A stream starts with `conversation`, ends
with `done` or `error`, and the upkeep's `memory` events may follow `done`. Only answer
tokens and public status fields cross: never tool arguments, results, prompts or ids.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NotRequired, cast

from langchain_core.messages import AIMessageChunk
from typing_extensions import TypedDict

ANSWER_NODES = frozenset({("", "chat"), ("tool", "call_model")})
"""Where the answer's tokens come from, as (the subgraph directly under the agent graph,
"" for the agent graph itself; the node): the chat node and the tool subgraph's model,
not compaction, not a workflow's planning or sub-agents."""


def token_event(namespace: tuple[str, ...], chunk: tuple[Any, dict[str, Any]]) -> TokenEvent | None:
    """A `token` event for an answer chunk of the `messages` stream, else None."""
    message, metadata = chunk
    if len(namespace) > 1:
        return None
    graph = namespace[0].partition(":")[0] if namespace else ""
    if (graph, metadata.get("langgraph_node")) not in ANSWER_NODES:
        return None
    if not isinstance(message, AIMessageChunk) or message.tool_call_chunks:
        return None
    text = message.text
    return {"event": "token", "text": text} if text else None


TOOL_CALL_OPENERS = ("{", "```", "<tool_call", "<|tool_call")
"""How a tool call written as text starts (`graphs.text_tool_calls`): answer text from
one of these on is held back until the run has its answer."""


def _opening(text: str) -> tuple[int, bool]:
    """Where `text` may start a written tool call, and whether it surely does there (an
    opener in full) or only may (its end is the start of one: the next token decides)."""
    found = [i for i in (text.find(opener) for opener in TOOL_CALL_OPENERS) if i != -1]
    if found:
        return min(found), True
    for start in range(max(len(text) - len(max(TOOL_CALL_OPENERS, key=len)), 0), len(text)):
        if any(opener.startswith(text[start:]) for opener in TOOL_CALL_OPENERS):
            return start, False
    return len(text), False


@dataclass
class _Answer:
    shown: str = ""
    held: str = ""
    holding: bool = False


class AnswerTokens:
    """A run's `token` events, holding back a tool call a weak model wrote as text (which
    `graphs.text_tool_calls` handles once the reply is whole): a reply streams up to where
    such a call may start, and `release` lets the rest out only if it is in the answer."""

    def __init__(self) -> None:
        self._answers: dict[tuple[tuple[str, ...], str], _Answer] = {}

    def event(self, namespace: tuple[str, ...], mode: str, chunk: Any) -> ClientEvent | None:
        """The client event for one part of a run's `messages` or `custom` stream, if any:
        a `token`'s text less what is held back."""
        if mode == "custom":
            return custom_event(chunk)
        event = token_event(namespace, chunk) if mode == "messages" else None
        if event is None:
            return None
        key = (namespace, str(chunk[0].id or ""))
        answer = self._answers.setdefault(key, _Answer())
        text = answer.held + event["text"]
        if answer.holding:
            answer.held = text
            return None
        start, sure = _opening(text)
        answer.held, answer.holding = text[start:], sure
        answer.shown += text[:start]
        return {"event": "token", "text": text[:start]} if start else None

    def release(self, answer_text: str) -> list[TokenEvent]:
        """The held text of the reply that became the run's answer (`answer_text`)."""
        released: list[TokenEvent] = []
        for answer in self._answers.values():
            whole = (answer.shown + answer.held).strip()
            if answer.held and whole and whole in answer_text:
                released.append({"event": "token", "text": answer.held})
        self._answers.clear()
        return released


def custom_event(payload: Any) -> StatusEvent | MemoryEvent | None:
    """A `status` or `memory` event for a custom stream payload, else None. The payload
    comes from the graph's own nodes (`graphs.events.emit`): its known fields pass."""
    if not isinstance(payload, dict):
        return None
    kind = payload.get("event")
    if kind == "route":
        return {"event": "status", "stage": "route", "route": payload.get("route")}
    if kind == "tool_call":
        return {"event": "status", "stage": "tool", "name": payload.get("name")}
    if kind == "memory":
        fields = {key: payload[key] for key in MEMORY_FIELDS if payload.get(key) is not None}
        return cast(MemoryEvent, {"event": "memory", **fields})
    if kind == "progress":
        fields = {key: value for key, value in payload.items() if key in PROGRESS_FIELDS}
        return cast(StatusEvent, {"event": "status", **fields})
    return None


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
    refused: NotRequired[dict[str, int]]
    structured: NotRequired[dict[str, int]]
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
