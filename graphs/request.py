"""The turn request, validated once by `parse_request` for every way in (the HTTP app,
`ChatAgent`, Studio and the SDK), its route decided there and carried in the run state.
Messages name fields as the caller spells them (`conversation_id`, `conversationId`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from memory.errors import InvalidInput
from memory.limits import MAX_MESSAGE_CHARS, MAX_SEARCH_QUERY_CHARS, MAX_SEARCH_RESULTS
from memory.schema import validate_id

if TYPE_CHECKING:
    from memory.context import ContextBudget

Mode = Literal["auto", "chat", "tool", "tasklist", "delivery"]
RouteName = Literal["chat", "tool", "tasklist", "delivery"]
MODES: tuple[str, ...] = get_args(Mode)
PREFIXES: dict[str, RouteName] = {"/tasklist": "tasklist", "/delivery": "delivery"}
WORKFLOW_ROUTES: frozenset[RouteName] = frozenset({"tasklist", "delivery"})
"""The routes that run a workflow subgraph (reviews, steps, recovery)."""
MAX_DEPTH = 16
"""Deepest nesting accepted in a structured request value (a review decision)."""

DEFAULT_SESSION_ID = "studio"
"""The session of a run that names none (Studio, the SDK, without sign-in)."""
OTHER_SESSION = "session_id names another session: a signed-in user's session is their own"
MISSING_MESSAGE = (
    "a turn needs a message: pass {'message': '...'} or Studio chat input "
    "{'messages': [{'role': 'user', 'content': '...'}]}"
)
NOT_TEXT = "{what} must be a string, got {type_name}"
EMPTY_TEXT = "{what} must not be empty"
EMPTY_SEARCH = "a search needs at least one word"
SEARCH_TOO_LONG = "a search is at most {limit} characters (got {length})"
BAD_SEARCH_LIMIT = "limit must be an integer from 1 to {limit}"
TEXT_TOO_LONG = "{what} is too long ({length:,} characters; the limit is {limit:,})"
NOT_UNICODE = (
    "{what} contains characters that are not valid Unicode text "
    "(an unpaired surrogate); send UTF-8 text"
)
HAS_NUL = "{what} contains a NUL character, which cannot be stored; send text without it"
TOO_DEEP = "{what} is nested too deeply (more than {limit} levels)"
MALFORMED_MESSAGES = "messages must be a list of chat messages ending with a user message"
UNKNOWN_MODE = "unknown mode {mode!r}; use one of: {modes}"
EMPTY_WORKFLOW_REQUEST = "{prefix} needs a request after the prefix"
ROUTE_UNAVAILABLE = "the {route} route is not available in this agent"
BOTH_OR_NEITHER = "pass exactly one of {conversation_id} or {create_conversation}"
OVER_BUDGET = (
    "the message is too long for the model's context ({tokens:,} tokens; at most "
    "{limit:,} fit beside the conversation's memory)"
)


class InvalidRequest(InvalidInput):
    """The request is malformed (ids, message, mode, decision); nothing was written."""


class MessageTooLong(InvalidRequest):
    """The message alone is longer than the agent accepts (HTTP 413)."""


Surface = Mapping[str, str]
"""How a caller spells the request's fields, for error messages."""

PYTHON: Surface = {
    "conversation_id": "conversation_id",
    "create_conversation": "create_conversation=True",
}
HTTP: Surface = {
    "conversation_id": "conversationId",
    "create_conversation": '"createConversation": true',
}


@dataclass(frozen=True)
class TurnRequest:
    """A validated turn, built only by `parse_request`: a run handed one (in its `Context`)
    never validates it again, and a server's client cannot forge one (JSON is a dict).
    `text` is stripped of a workflow prefix; `create`: a draft's first message."""

    text: str
    route: RouteName
    tools_allowed: bool
    create: bool


def check_text(value: object, what: str = "message", limit: int = MAX_MESSAGE_CHARS) -> str:
    """`value` stripped, if it is non-empty Unicode text (else `InvalidRequest`) of at most
    `limit` characters (else `MessageTooLong`)."""
    if not isinstance(value, str):
        raise InvalidRequest(NOT_TEXT.format(what=what, type_name=type(value).__name__))
    text = value.strip()
    if not text:
        raise InvalidRequest(EMPTY_TEXT.format(what=what))
    if len(text) > limit:
        raise MessageTooLong(TEXT_TOO_LONG.format(what=what, length=len(text), limit=limit))
    check_unicode(text, what)
    return text


def check_unicode(text: str, what: str = "request") -> None:
    """Raise `InvalidRequest` for a lone surrogate or a NUL: JSON allows both escaped, and
    they would break storage (PostgreSQL refuses NUL) and the event stream."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequest(NOT_UNICODE.format(what=what)) from None
    if "\x00" in text:
        raise InvalidRequest(HAS_NUL.format(what=what))


def check_payload(value: object, what: str = "request", max_depth: int = MAX_DEPTH) -> None:
    """Check a structured value (a review decision): valid Unicode strings, nesting at most
    `max_depth` (iterative: no input exhausts the stack). Raises `InvalidRequest`."""
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if depth > max_depth:
            raise InvalidRequest(TOO_DEEP.format(what=what, limit=max_depth))
        if isinstance(item, str):
            check_unicode(item, what)
        elif isinstance(item, Mapping):
            pending.extend((part, depth + 1) for pair in item.items() for part in pair)
        elif isinstance(item, list | tuple):
            pending.extend((part, depth + 1) for part in item)


def check_mode(value: object) -> Mode:
    """`value` if it is a mode, else `InvalidRequest` listing the modes."""
    if value not in MODES:
        raise InvalidRequest(UNKNOWN_MODE.format(mode=value, modes=", ".join(MODES)))
    return cast(Mode, value)


def check_id(value: object, what: str) -> str:
    """A session, conversation or message id, else `InvalidRequest`."""
    try:
        return validate_id(value, what)
    except InvalidInput as exc:
        raise InvalidRequest(str(exc)) from None


def check_search(query: object, limit: object) -> str:
    """A search's words, stripped; `InvalidRequest` for no word, too many characters, or a
    limit outside 1 to `MAX_SEARCH_RESULTS`."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequest(EMPTY_SEARCH)
    text = query.strip()
    if len(text) > MAX_SEARCH_QUERY_CHARS:
        raise InvalidRequest(SEARCH_TOO_LONG.format(limit=MAX_SEARCH_QUERY_CHARS, length=len(text)))
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 < limit <= MAX_SEARCH_RESULTS:
        raise InvalidRequest(BAD_SEARCH_LIMIT.format(limit=MAX_SEARCH_RESULTS))
    return text


def choose_route(mode: Mode, text: str) -> tuple[RouteName, bool, str]:
    """(route, tools allowed, user text): an explicit mode wins, then a prefix, then chat."""
    if mode != "auto":
        return mode, mode == "tool", text
    head, _, rest = text.partition(" ")
    if head in PREFIXES:
        request = rest.strip()
        if not request:
            raise InvalidRequest(EMPTY_WORKFLOW_REQUEST.format(prefix=head))
        return PREFIXES[head], False, request
    if text in PREFIXES:
        raise InvalidRequest(EMPTY_WORKFLOW_REQUEST.format(prefix=text))
    return "chat", True, text


def check_budget(text: str, budget: ContextBudget | None, system_prompt: str | None) -> None:
    """Refuse a message that cannot fit in the model's context beside the system prompt
    and the most that memory can hold (`MessageTooLong`, HTTP 413)."""
    if budget is None:
        return
    limit = budget.input_allowance(system_prompt)
    tokens = budget.input_tokens(text)
    if tokens > limit:
        raise MessageTooLong(OVER_BUDGET.format(tokens=tokens, limit=max(limit, 0)))


def parse_request(
    message: object,
    *,
    mode: object = "auto",
    conversation_id: object = None,
    create_conversation: object = False,
    routes: frozenset[str] | None = None,
    surface: Surface = PYTHON,
    budget: ContextBudget | None = None,
    system_prompt: str | None = None,
) -> tuple[str | None, TurnRequest]:
    """Validate a turn request: (the conversation id, None for a new one; the request).
    Exactly one of `conversation_id` and `create_conversation` is given; `routes` are
    those the agent offers (None: any); the message must fit `budget` beside
    `system_prompt`. `InvalidRequest` (`MessageTooLong`) names what is wrong."""
    create = create_conversation is True
    if (conversation_id is None) != create or not isinstance(create_conversation, bool):
        raise InvalidRequest(BOTH_OR_NEITHER.format(**surface))
    conversation = None if conversation_id is None else check_id(conversation_id, "conversation id")
    route, tools_allowed, text = choose_route(check_mode(mode), check_text(message))
    if routes is not None and route not in routes:
        raise InvalidRequest(ROUTE_UNAVAILABLE.format(route=route))
    check_budget(text, budget, system_prompt)
    return conversation, TurnRequest(
        text=text, route=route, tools_allowed=tools_allowed, create=create
    )


def signed_in_user() -> str | None:
    """The identity of the run's signed-in user (`langgraph_auth_user`, which LangGraph's
    server sets from its auth handler and no client can set), else None."""
    from langchain_core.runnables import ensure_config  # (this module loads no LangChain)

    user = ensure_config().get("configurable", {}).get("langgraph_auth_user")
    identity = user.get("identity") if isinstance(user, Mapping) else getattr(user, "identity", "")
    return identity if isinstance(identity, str) and identity else None


def run_ids(
    given: Mapping[str, Any], session_id: str, conversation_id: str | None, thread_id: str | None
) -> tuple[str, str]:
    """(session id, conversation id) of a run: the signed-in user's, else its input's, else
    its context's (`InvalidRequest` naming another session than the signed-in user's); the
    conversation defaults to the run's thread (`langgraph dev`'s)."""
    named = given.get("session_id") or session_id
    user = signed_in_user()
    if user is not None and {named, session_id} - {user, DEFAULT_SESSION_ID}:
        raise InvalidRequest(OTHER_SESSION)
    return (
        check_id(user or named, "session id"),
        check_id(given.get("conversation_id") or conversation_id or thread_id, "conversation id"),
    )


def _latest_human_text(messages: object) -> str:
    # LangChain's messages are for Studio's chat input only: the HTTP app validates its
    # requests here too, and imports nothing of LangChain's to do it
    from langchain_core.messages import HumanMessage, convert_to_messages

    try:
        parsed = convert_to_messages(cast(Any, messages))
    except (TypeError, ValueError, NotImplementedError) as exc:
        raise InvalidRequest(MALFORMED_MESSAGES) from exc
    if not parsed or not isinstance(parsed[-1], HumanMessage):
        raise InvalidRequest(MALFORMED_MESSAGES)
    return parsed[-1].text


def graph_message(state: Mapping[str, Any]) -> object:
    """The user's message of a raw graph input: `message`, else Studio's last human message."""
    message = state.get("message")
    if message is not None:
        return message
    messages = state.get("messages")
    if not messages:
        raise InvalidRequest(MISSING_MESSAGE)
    return _latest_human_text(messages)
