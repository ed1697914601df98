"""Search routes: the session's archive of earlier conversations, searched and forgotten."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from agent.api.deps import AgentDep, SessionDep
from agent.api.error_responses import error_response
from agent.errors import InvalidRequest

DEFAULT_LIMIT = 10

router = APIRouter(prefix="/api", tags=["search"])


@router.get("/search", response_model=None)
def search(
    agent: AgentDep,
    session_id: SessionDep,
    q: str = "",
    limit: str = str(DEFAULT_LIMIT),
    conversationId: str | None = None,
) -> dict[str, Any] | Response:
    """`{"query", "results": [{id, conversationId, title, messageId, role, createdAt,
    text}], "limit"}`: at most `limit` (1-50, default 10) of the session's own archived
    lines sharing words with `q`, most relevant first (conversations pruned from the list
    included; only `conversationId`'s when given). 422 `invalid_query` for an empty or
    over-long `q` (500 characters), a `limit` that is no integer of 1-50 or an invalid
    `conversationId`."""
    # read here, not by FastAPI, whose parsing answers a non-number with a 400: a limit
    # that is no number is out of range like any other
    count = int(limit) if limit.isdecimal() else 0
    try:
        results = agent.search_conversations(
            q, session_id=session_id, limit=count, conversation_id=conversationId
        )
    except InvalidRequest as exc:
        return error_response(422, "invalid_query", str(exc))
    return {"query": q.strip(), "results": results, "limit": count}


@router.delete("/search-history")
def forget_history(agent: AgentDep, session_id: SessionDep) -> dict[str, int]:
    """Forget the session's archive of earlier conversations: `{"removed": n}` lines. The
    conversations, their memory and the long-term items stay."""
    return {"removed": agent.forget_history(session_id=session_id)}
