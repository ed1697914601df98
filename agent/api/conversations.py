"""Conversation routes: the list, one conversation (with its pending review), select, delete."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import StrictStr

from agent.api.deps import AgentDep, JsonBody, SessionDep

router = APIRouter(prefix="/api/conversations", tags=["conversations"])


class SelectBody(JsonBody):
    """`POST /api/conversations/select`."""

    conversationId: StrictStr


@router.get("")
def conversations(agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """`{selectedConversationId, conversations, limit}`, newest activity first."""
    return agent.conversations(session_id=session_id)


@router.post("/select")
def select(body: SelectBody, agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """Select a conversation without reordering the list."""
    return agent.select(session_id=session_id, conversation_id=body.conversationId)


@router.get("/{conversation_id}")
def conversation(conversation_id: str, agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """The conversation's hydration DTO, with `review`: what a task list in it waits for
    (goal, plan, the answers it takes), or null."""
    return agent.hydrate(session_id=session_id, conversation_id=conversation_id)


@router.delete("/{conversation_id}")
def delete(conversation_id: str, agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """Delete a conversation with its memory and run threads."""
    return agent.delete_conversation(session_id=session_id, conversation_id=conversation_id)
