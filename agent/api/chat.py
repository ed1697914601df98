"""Chat routes: a turn, a review's resume, a stopped run's recovery (streamed), hydration."""

from __future__ import annotations

from typing import Any, cast

from fastapi import APIRouter
from pydantic import Field, StrictBool, StrictStr
from sse_starlette import EventSourceResponse

from agent.api.deps import AgentDep, JsonBody, SessionDep
from agent.api.sse import event_stream
from graphs.request import HTTP, check_payload

router = APIRouter(prefix="/api/chat", tags=["chat"])


class ChatBody(JsonBody):
    """`POST /api/chat`: a message to a conversation, or the first of a new one."""

    message: StrictStr
    conversationId: StrictStr | None = None
    createConversation: StrictBool = False
    mode: StrictStr = "auto"


class ResumeBody(JsonBody):
    """`POST /api/chat/resume`: the decision for a pending review."""

    conversationId: StrictStr
    decision: dict[str, Any] = Field(min_length=1)


@router.post("", response_class=EventSourceResponse)
async def chat(
    body: ChatBody, agent: AgentDep, session_id: SessionDep, followUpkeep: bool = False
) -> EventSourceResponse:
    """Run one turn; events: conversation, token, status, memory, interrupt, done, error.
    The stream ends at `done`; `followUpkeep=true` keeps it open for the `memory` events
    of the upkeep after it (its outcome is also the thread DTO's `upkeep`)."""
    events = agent.astream(
        body.message,
        session_id=session_id,
        conversation_id=body.conversationId,
        create_conversation=body.createConversation,
        mode=cast(Any, body.mode),
        surface=HTTP,
    )
    return await event_stream(events, follow_upkeep=followUpkeep)


@router.post("/resume", response_class=EventSourceResponse)
async def resume(
    body: ResumeBody, agent: AgentDep, session_id: SessionDep, followUpkeep: bool = False
) -> EventSourceResponse:
    """Resume a turn that waits for a review, with the reviewer's decision."""
    check_payload(body.decision, "decision")
    events = agent.astream_resume(
        body.decision, session_id=session_id, conversation_id=body.conversationId
    )
    return await event_stream(events, follow_upkeep=followUpkeep)


class RecoverBody(JsonBody):
    """`POST /api/chat/recover`: continue a run a crash stopped."""

    conversationId: StrictStr


@router.post("/recover", response_class=EventSourceResponse)
async def recover(
    body: RecoverBody, agent: AgentDep, session_id: SessionDep, followUpkeep: bool = False
) -> EventSourceResponse:
    """Continue the conversation's unfinished task list or delivery from its last step."""
    events = agent.astream_recover(session_id=session_id, conversation_id=body.conversationId)
    return await event_stream(events, follow_upkeep=followUpkeep)


@router.get("/thread")
def thread(conversationId: str, agent: AgentDep, session_id: SessionDep) -> dict[str, Any]:
    """The conversation's hydration DTO."""
    return agent.hydrate(session_id=session_id, conversation_id=conversationId)
