"""Sessions: an HttpOnly, SameSite=Lax cookie holding a random id signed with the secret.

A pure ASGI middleware reads the cookie of every request to the app's own paths,
starts a new session when it is missing or tampered with, and sets the cookie on the
response (errors included). Routes read the id from `request.state.session_id`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE_NAME = "agent_session"
COOKIE_MAX_AGE = 60 * 60 * 24 * 365
SESSION_ID_BYTES = 24


def sign(secret: str, session_id: str) -> str:
    """The cookie signature of `session_id`."""
    return hmac.new(
        secret.encode(), f"session-cookie:{session_id}".encode(), hashlib.sha256
    ).hexdigest()


def read_cookie(secret: str, raw: str) -> str | None:
    """The session id of a valid cookie value, else None (missing or tampered)."""
    session_id, _, signature = raw.partition(".")
    if session_id and hmac.compare_digest(signature, sign(secret, session_id)):
        return session_id
    return None


def cookie_header(secret: str, session_id: str, *, secure: bool) -> str:
    """The `Set-Cookie` value that hands `session_id` to the browser (the value is
    URL-safe base64 and hex: nothing to quote)."""
    value = f"{session_id}.{sign(secret, session_id)}"
    flags = "; Secure" if secure else ""
    return f"{COOKIE_NAME}={value}; Max-Age={COOKIE_MAX_AGE}; Path=/; HttpOnly; SameSite=Lax{flags}"


class SessionCookies:
    """ASGI middleware: a session for every request to the app's own paths.

    Args:
        app: the wrapped ASGI app.
        secret: returns the signing secret (the agent's, known once it is open).
        secure: always mark the cookie `Secure` (it is marked on HTTPS requests anyway;
            behind a TLS proxy, run uvicorn with `--proxy-headers`).
        prefixes: paths that carry a session.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        secret: Callable[[], str],
        secure: Callable[[], bool],
        prefixes: tuple[str, ...] = ("/api/",),
    ) -> None:
        self.app, self.secret, self.secure, self.prefixes = app, secret, secure, prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        secret = self.secret()
        session_id = read_cookie(secret, Request(scope).cookies.get(COOKIE_NAME, ""))
        issued = session_id is None
        if session_id is None:
            session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        scope.setdefault("state", {})["session_id"] = session_id
        if not issued:
            await self.app(scope, receive, send)
            return
        secure = self.secure() or scope.get("scheme") == "https"
        header = cookie_header(secret, session_id, secure=secure)

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", header)
            await send(message)

        await self.app(scope, receive, send_with_cookie)
