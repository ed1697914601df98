"""Validation of a turn's input: message, mode, ids and the workflow prefixes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from langchain_core.messages import HumanMessage, convert_to_messages

from graphs.state import MODES, AgentState, Context, Mode, RouteName
from memory.errors import InvalidInput
from memory.limits import MAX_MESSAGE_CHARS
from memory.schema import validate_id

MISSING_MESSAGE = (
    "a turn needs a message: pass {'message': '...'} or Studio chat input "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)
MESSAGE_NOT_TEXT = "message must be a string, got {type_name}"
EMPTY_MESSAGE = "message must not be empty"
MESSAGE_TOO_LONG = "message is too long ({length:,} characters; the limit is {limit:,})"
MALFORMED_MESSAGES = "messages must be a list of chat messages ending with a user message"
UNKNOWN_MODE = "unknown mode {mode!r}; use one of: {modes}"
EMPTY_WORKFLOW_REQUEST = "{prefix} needs a request after the prefix"
ROUTE_UNAVAILABLE = "the {route} route is not available in this agent"

PREFIXES: dict[str, RouteName] = {"/tasklist": "tasklist", "/delivery": "delivery"}


class InvalidTurnInput(InvalidInput):
    """The run's input cannot start a turn; nothing was read or written."""


@dataclass(frozen=True)
class TurnInput:
    """A validated turn: who, which conversation, which route, and the user's text."""

    session_id: str
    conversation_id: str
    route: RouteName
    tools_allowed: bool
    text: str


def _latest_human_text(messages: object) -> str:
    try:
        parsed = convert_to_messages(cast(Any, messages))
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise InvalidTurnInput(MALFORMED_MESSAGES) from exc
    if not parsed or not isinstance(parsed[-1], HumanMessage):
        raise InvalidTurnInput(MALFORMED_MESSAGES)
    return parsed[-1].text


def _message_text(state: AgentState) -> str:
    message = state.get("message")
    if message is None:
        messages = state.get("messages")
        if not messages:
            raise InvalidTurnInput(MISSING_MESSAGE)
        message = _latest_human_text(messages)
    if not isinstance(message, str):
        raise InvalidTurnInput(MESSAGE_NOT_TEXT.format(type_name=type(message).__name__))
    text = message.strip()
    if not text:
        raise InvalidTurnInput(EMPTY_MESSAGE)
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidTurnInput(MESSAGE_TOO_LONG.format(length=len(text), limit=MAX_MESSAGE_CHARS))
    return text


def _mode(value: object) -> Mode:
    if value not in MODES:
        raise InvalidTurnInput(UNKNOWN_MODE.format(mode=value, modes=", ".join(MODES)))
    return cast(Mode, value)


def choose_route(mode: Mode, text: str) -> tuple[RouteName, bool, str]:
    """(route, tools allowed, user text): an explicit mode wins, then a prefix, then chat."""
    if mode != "auto":
        return mode, mode == "tool", text
    head, _, rest = text.partition(" ")
    if head in PREFIXES:
        request = rest.strip()
        if not request:
            raise InvalidTurnInput(EMPTY_WORKFLOW_REQUEST.format(prefix=head))
        return PREFIXES[head], False, request
    if text in PREFIXES:
        raise InvalidTurnInput(EMPTY_WORKFLOW_REQUEST.format(prefix=text))
    return "chat", True, text


def parse_turn_input(
    state: AgentState, context: Context | None, thread_id: str | None, routes: set[str]
) -> TurnInput:
    """Validate the run input against the context.

    Args:
        state: the run state holding this turn's input.
        context: the run context (session, conversation, mode defaults).
        thread_id: the run's thread id, the conversation when none is given.
        routes: the routes this graph was built with.

    Raises:
        InvalidTurnInput: naming what is wrong; nothing has been written.
    """
    context = context or Context()
    try:
        session_id = validate_id(state.get("session_id") or context.session_id, "session id")
        conversation_id = validate_id(
            state.get("conversation_id") or context.conversation_id or thread_id,
            "conversation id",
        )
    except InvalidInput as exc:
        raise InvalidTurnInput(str(exc)) from None
    mode = _mode(state.get("mode") or context.mode)
    text = _message_text(state)
    route, tools_allowed, text = choose_route(mode, text)
    if route not in routes:
        raise InvalidTurnInput(ROUTE_UNAVAILABLE.format(route=route))
    return TurnInput(session_id, conversation_id, route, tools_allowed, text)
