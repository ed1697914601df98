"""What the agent's model clients send on the wire: each chat-completion request, its
HTTP status, its answer and its time, recorded under openai's own HTTP client."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import openai


@dataclass(frozen=True)
class Call:
    """One chat-completion request and what came back.

    Attributes:
        request: the JSON body sent.
        status: the HTTP status.
        answer: the JSON answer (None for a stream or an answer that is not JSON).
        seconds: from sending to the answer's headers (a stream) or its body.
    """

    request: dict[str, Any]
    status: int
    answer: dict[str, Any] | None
    seconds: float

    @property
    def structured(self) -> str | None:
        """The schema a structured call asks for, by the name the client gave it (a forced
        tool, or `response_format`'s schema), `json_object` for JSON mode, else None."""
        choice = self.request.get("tool_choice")
        if isinstance(choice, dict):
            return str(choice.get("function", {}).get("name"))
        response_format = self.request.get("response_format") or {}
        if response_format.get("type") == "json_schema":
            return str(response_format.get("json_schema", {}).get("name"))
        if response_format.get("type") == "json_object":
            return "json_object"
        return None

    @property
    def completion_tokens(self) -> int | None:
        """Tokens the server generated (None without an answer)."""
        usage = (self.answer or {}).get("usage") or {}
        tokens = usage.get("completion_tokens")
        return tokens if isinstance(tokens, int) else None

    def output(self) -> str | None:
        """The structured output as text: a tool call's arguments, else the content."""
        choices = (self.answer or {}).get("choices") or []
        if not choices:
            return None
        message = choices[0].get("message") or {}
        for call in message.get("tool_calls") or []:
            return str(call.get("function", {}).get("arguments"))
        content = message.get("content")
        return content if isinstance(content, str) else None


@dataclass
class Wire:
    """The calls recorded so far, in order."""

    calls: list[Call] = field(default_factory=list)


@contextmanager
def recording() -> Iterator[Wire]:
    """Record every chat-completion call of openai's clients (sync and async) meanwhile."""
    wire = Wire()
    # the HTTP client classes openai's own default clients derive from (httpx or a fork)
    sync_class: Any = openai.DefaultHttpxClient.__mro__[1]
    async_class: Any = openai.DefaultAsyncHttpxClient.__mro__[1]
    send, asend = sync_class.send, async_class.send

    def keep(request: Any, response: Any, started: float, streamed: bool) -> None:
        if not request.url.path.endswith("/chat/completions"):
            return
        answer = None
        if not streamed:
            try:
                answer = json.loads(response.content)
            except ValueError:
                answer = None
        seconds = time.monotonic() - started
        wire.calls.append(Call(json.loads(request.content), response.status_code, answer, seconds))

    def sync_send(client: Any, request: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        response = send(client, request, **kwargs)
        if not kwargs.get("stream"):
            response.read()
        keep(request, response, started, bool(kwargs.get("stream")))
        return response

    async def async_send(client: Any, request: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        response = await asend(client, request, **kwargs)
        if not kwargs.get("stream"):
            await response.aread()
        keep(request, response, started, bool(kwargs.get("stream")))
        return response

    sync_class.send, async_class.send = sync_send, async_send
    try:
        yield wire
    finally:
        sync_class.send, async_class.send = send, asend
