"""Request dependencies: the app's agent and the request's session; the JSON bodies' base."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, cast

from fastapi import Depends, Request
from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from agent.service import ChatAgent


def get_agent(request: Request) -> ChatAgent:
    """The agent the app opened in its lifespan."""
    return cast("ChatAgent", request.app.state.agent)


def get_session(request: Request) -> str:
    """The session id `SessionCookies` resolved for this request."""
    return cast(str, request.state.session_id)


if TYPE_CHECKING:
    AgentDep = Annotated[ChatAgent, Depends(get_agent)]
else:  # FastAPI reads the hint when a route is declared: the agent is imported at start-up
    AgentDep = Annotated[Any, Depends(get_agent)]
SessionDep = Annotated[str, Depends(get_session)]


class JsonBody(BaseModel):
    """A route's JSON body: a key it does not name is refused, never ignored."""

    model_config = ConfigDict(extra="forbid")
