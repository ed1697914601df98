"""Server-sent events: a turn's events as an `EventSourceResponse` (sse-starlette). The
first is awaited before the response starts, so an error at the turn's opening is an
ordinary JSON error; the last is `done` or `error` (or the upkeep's, with
`?followUpkeep=true`); pings keep a long silent stage's connection alive.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator

from sse_starlette import EventSourceResponse

from agent.client_events import ClientEvent, ErrorEvent

logger = logging.getLogger(__name__)

PING_SECONDS = 15
STREAM_FAILED: ErrorEvent = {
    "event": "error",
    "code": "internal_error",
    "message": "internal error",
}


def as_sse(event: ClientEvent) -> dict[str, str]:
    """One client event as an SSE message: `event: <name>`, `data: <json>`."""
    payload = {key: value for key, value in event.items() if key != "event"}
    data = json.dumps(payload, ensure_ascii=False)
    try:
        data.encode("utf-8")
    except UnicodeEncodeError:  # a model produced a lone surrogate: escape it, don't crash
        data = json.dumps(payload)
    return {"event": event["event"], "data": data}


async def event_stream(
    events: AsyncGenerator[ClientEvent, None], *, follow_upkeep: bool = False
) -> EventSourceResponse:
    """Stream `events` (its first event opens the response; errors before it raise) up to
    `done`; with `follow_upkeep`, the upkeep's `memory` events follow until it ends."""
    first = await anext(events)

    async def body() -> AsyncIterator[dict[str, str]]:
        try:
            yield as_sse(first)
            async for event in events:
                yield as_sse(event)
                if event["event"] == "done" and not follow_upkeep:
                    return
        except Exception:
            logger.exception("the event stream failed")
            yield as_sse(STREAM_FAILED)
        finally:
            await events.aclose()

    headers = {"X-Accel-Buffering": "no"}
    if first["event"] == "conversation":
        headers["X-Conversation-Id"] = first["conversationId"]
    return EventSourceResponse(body(), ping=PING_SECONDS, sep="\n", headers=headers)
