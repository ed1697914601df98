"""Translation of LangGraph stream parts into the agent's client events
(`agent.client_events`).

Only final-answer tokens and public status fields cross this boundary: tool
arguments and results, prompts and internal ids never do.
"""

from __future__ import annotations

from typing import Any, cast

from langchain_core.messages import AIMessageChunk

from agent.client_events import (
    MEMORY_FIELDS,
    PROGRESS_FIELDS,
    ClientEvent,
    MemoryEvent,
    StatusEvent,
    TokenEvent,
)

ANSWER_SUBGRAPHS = frozenset({"chat", "tool"})
"""Subgraphs (directly under the agent graph) whose `call_model` tokens are the answer:
not compaction, not a workflow's planning or sub-agents."""


def token_event(namespace: tuple[str, ...], chunk: tuple[Any, dict[str, Any]]) -> TokenEvent | None:
    """A `token` event for an answer chunk of the `messages` stream, else None."""
    message, metadata = chunk
    if len(namespace) != 1 or namespace[0].partition(":")[0] not in ANSWER_SUBGRAPHS:
        return None
    if metadata.get("langgraph_node") != "call_model":
        return None
    if not isinstance(message, AIMessageChunk) or message.tool_call_chunks:
        return None
    text = message.text
    return {"event": "token", "text": text} if text else None


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


def client_event(namespace: tuple[str, ...], mode: str, chunk: Any) -> ClientEvent | None:
    """The client event for one part of a run's `messages` or `custom` stream, if any."""
    if mode == "messages":
        return token_event(namespace, cast(tuple[Any, dict[str, Any]], chunk))
    if mode == "custom":
        return custom_event(chunk)
    return None
