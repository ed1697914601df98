"""Long-term memory routes: list, add, forget one, forget all (the session's own items)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from pydantic import StrictStr

from agent.api.deps import AgentDep, JsonBody, SessionDep
from memory.longterm import MemoryKind

router = APIRouter(prefix="/api/memories", tags=["memories"])


class MemoryBody(JsonBody):
    """`POST /api/memories`: something the user asks to be remembered."""

    text: StrictStr
    kind: MemoryKind | None = None


@router.get("")
def memories(agent: AgentDep, session_id: SessionDep, history: bool = False) -> dict[str, Any]:
    """`{"memories": [item…], "limit": 100}`, the current items newest first; with
    `history=true` also `"history": [item…]`, the items later statements changed (each
    with `invalidAt` and `supersededBy`), most recently changed first."""
    return agent.memories(session_id=session_id, include_history=history)


@router.post("", status_code=201)
def remember(body: MemoryBody, agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """Add an item through the write gate (400 `invalid_request` says why a text is refused)."""
    return agent.remember(body.text, session_id=session_id, kind=body.kind)


@router.delete("/{memory_id}", status_code=204)
def forget(memory_id: str, agent: AgentDep, session_id: SessionDep) -> Response:
    """Delete one item (404 `memory_not_found` for an unknown or another session's id)."""
    agent.forget(memory_id, session_id=session_id)
    return Response(status_code=204)


@router.delete("")
def forget_all(agent: AgentDep, session_id: SessionDep) -> dict[str, int]:
    """Delete every item of the session: `{"removed": n}`."""
    return {"removed": agent.forget_all(session_id=session_id)}
