"""Headers every response carries, whatever produced it (a route, a handler, a middleware)."""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NOSNIFF = ("X-Content-Type-Options", "nosniff")
"""Browsers must take a response's declared type as given: a JSON answer that echoes the
user's text is never sniffed into HTML or script."""


class NoSniff:
    """ASGI middleware: `nosniff` on every response at `/` and under `prefixes` (the app's
    own paths; LangGraph's are left alone)."""

    def __init__(self, app: ASGIApp, *, prefixes: tuple[str, ...] = ("/",)) -> None:
        self.app, self.prefixes = app, prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/" or path.startswith(self.prefixes)):
            await self.app(scope, receive, send)
            return

        async def send_nosniff(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[NOSNIFF[0]] = NOSNIFF[1]
            await send(message)

        await self.app(scope, receive, send_nosniff)
