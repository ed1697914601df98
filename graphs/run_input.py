"""What a run's input says: whose conversation it is, and the turn it asks for.

A turn run by `ChatAgent` carries a request validated at the boundary; a raw input
(Studio, the SDK, `langgraph dev`) is validated here with the same `parse_request`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import ensure_config

from graphs.request import (
    ROUTE_UNAVAILABLE,
    InvalidRequest,
    TurnRequest,
    check_id,
    check_text,
    graph_message,
    parse_request,
)
from graphs.state import DEFAULT_SESSION_ID, AgentState, Context
from memory.budget import ContextBudget

MISSING_FLAGS = "request must carry tools_allowed and create flags"
OTHER_SESSION = "session_id names another session: a signed-in user's session is their own"


def signed_in_user() -> str | None:
    """The identity of the run's signed-in user (`langgraph_auth_user`, which LangGraph's
    server sets from its auth handler and no client can set), else None."""
    user = ensure_config().get("configurable", {}).get("langgraph_auth_user")
    identity = user.get("identity") if isinstance(user, Mapping) else getattr(user, "identity", "")
    return identity if isinstance(identity, str) and identity else None


def run_ids(state: AgentState, context: Context | None, thread_id: str | None) -> tuple[str, str]:
    """(session id, conversation id) of a run: the signed-in user's (LangGraph's
    `langgraph_auth_user`), else its input's, else its context's; the conversation
    defaults to the run's thread (under `langgraph dev` a thread is a conversation).

    Raises:
        InvalidRequest: an id is malformed, or the input or context names a session
            other than the signed-in user's.
    """
    context = context or Context()
    named = state.get("session_id") or context.session_id
    user = signed_in_user()
    if user is not None and {named, context.session_id} - {user, DEFAULT_SESSION_ID}:
        raise InvalidRequest(OTHER_SESSION)
    session_id = check_id(user or named, "session id")
    conversation_id = check_id(
        state.get("conversation_id") or context.conversation_id or thread_id, "conversation id"
    )
    return session_id, conversation_id


def given_request(value: Mapping[str, Any], routes: frozenset[str]) -> TurnRequest:
    """A `request` key of a run's input, taken as validated: its route is not decided
    again.

    `ChatAgent` hands in a request it validated, but `request` is a key of the graph's
    input schema, so a client of the server (the SDK, Studio) can send one too without
    passing through `parse_request`; this is the only check such a request gets. Its
    conversation must already be the session's (`load_memory` does not admit it).
    """
    route = value.get("route")
    if route not in routes:
        raise InvalidRequest(ROUTE_UNAVAILABLE.format(route=route))
    if not isinstance(value.get("tools_allowed"), bool) or not isinstance(
        value.get("create"), bool
    ):
        raise InvalidRequest(MISSING_FLAGS)
    return TurnRequest(
        text=check_text(value.get("text")),
        route=route,
        tools_allowed=value["tools_allowed"],
        create=value["create"],
    )


def resolve_turn(
    state: AgentState,
    context: Context | None,
    thread_id: str | None,
    routes: frozenset[str],
    budget: ContextBudget | None = None,
    system_prompt: str | None = None,
) -> tuple[str, str, TurnRequest, bool]:
    """(session id, conversation id, request, admitted) of a run's input.

    A request from `ChatAgent` was admitted before the run: `load_memory` checks that
    its conversation is still the session's. A raw input (Studio, the SDK) is
    validated here, and its conversation is admitted by `load_memory`: under
    `langgraph dev` a thread starts a conversation.

    Raises:
        InvalidRequest: naming what is wrong; nothing has been read or written.
    """
    session_id, conversation_id = run_ids(state, context, thread_id)
    given = state.get("request")
    if given:
        return session_id, conversation_id, given_request(given, routes), True
    mode = state.get("mode") or (context or Context()).mode
    _, request = parse_request(
        graph_message(state),
        mode=mode,
        create_conversation=True,
        routes=routes,
        budget=budget,
        system_prompt=system_prompt,
    )
    return session_id, conversation_id, request, False
