"""The request body limit, counted as the body streams in (chunked uploads included)."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.api.error_responses import error_response

MAX_BODY_BYTES = 256 * 1024
TOO_LARGE = "request bodies are limited to {limit:,} bytes"


class BodyLimit:
    """ASGI middleware: read a body under `prefixes` (not LangGraph's routes) in full, up
    to `MAX_BODY_BYTES` (`larger` for some paths: an import), before the app runs; 413 as
    soon as it (declared or streamed) goes past, the rest unread."""

    def __init__(
        self, app: ASGIApp, *, prefixes: tuple[str, ...], larger: Mapping[str, int]
    ) -> None:
        self.app, self.prefixes, self.larger = app, prefixes, dict(larger)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        limit = self.larger.get(scope["path"], MAX_BODY_BYTES)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await self._too_large(limit, scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > limit:
                await self._too_large(limit, scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(bytes(body), receive), send)

    async def _too_large(self, limit: int, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, "payload_too_large", TOO_LARGE.format(limit=limit))
        response.headers["Connection"] = "close"
        await response(scope, receive, send)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that hands the buffered body over once, then the real messages
    (a streaming response listens on them for the client's disconnect)."""
    pending = True

    async def replay() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
