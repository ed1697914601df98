"""Sessions: an HttpOnly, SameSite=Lax cookie holding a random id signed with the secret.

A pure ASGI middleware puts each request's session id in `request.state.session_id`:
- a state-changing request from another origin (`Sec-Fetch-Site`, else `Origin`;
  non-browsers send neither) is refused, 403 `cross_site_request`, cookie or not;
- a session starts only on a safe request from the page's own origin, or with the header
  `X-Agent-Session: new` (no form can send it, no script without a CORS permission never
  given); else 403 `session_required`: a cross-site post never replaces a session;
- one address starts at most `per_minute` sessions a minute (429): sessions are free to
  make, their stored items are not.
With an identity mode (`agent/identity.py`) the session is the signed-in user's, or the
request gets 401 `unauthenticated`; no anonymous cookie is read or made.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from limits import RateLimitItemPerMinute
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent.api.error_responses import error_response
from agent.identity import Authenticator, Unauthenticated

logger = logging.getLogger(__name__)

COOKIE_NAME = "agent_session"
COOKIE_MAX_AGE = 60 * 60 * 24 * 365
SESSION_ID_BYTES = 24
SESSION_HEADER = "X-Agent-Session"
NEW_SESSION = "new"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
OWN_SITE = frozenset({"same-origin", "none"})
"""`Sec-Fetch-Site` values of requests the page itself (or the user, typing the URL)
makes; `same-site` is another port or subdomain, another origin all the same."""

CROSS_SITE = "requests from another site may not change anything here"
SESSION_REQUIRED = (
    "no session: start one with GET /api/conversations (keep its cookie), or send the "
    f"header {SESSION_HEADER}: {NEW_SESSION}"
)
TOO_MANY_SESSIONS = "too many new sessions from this address; try again in a minute"


def sign(secret: str, session_id: str) -> str:
    """The cookie signature of `session_id`."""
    return hmac.new(
        secret.encode(), f"session-cookie:{session_id}".encode(), hashlib.sha256
    ).hexdigest()


def read_cookie(secret: str, raw: str) -> str | None:
    """The session id of a valid cookie value, else None (missing or tampered)."""
    session_id, _, signature = raw.partition(".")
    # as bytes: a client may send any character, which a `str` comparison refuses
    if session_id and hmac.compare_digest(signature.encode(), sign(secret, session_id).encode()):
        return session_id
    return None


def cookie_header(secret: str, session_id: str, *, secure: bool) -> str:
    """The `Set-Cookie` value for `session_id` (base64url and hex: nothing to quote)."""
    value = f"{session_id}.{sign(secret, session_id)}"
    flags = "; Secure" if secure else ""
    return f"{COOKIE_NAME}={value}; Max-Age={COOKIE_MAX_AGE}; Path=/; HttpOnly; SameSite=Lax{flags}"


def from_another_origin(headers: Headers) -> bool:
    """Whether a browser says the request comes from another origin: `Sec-Fetch-Site`
    when sent, else an `Origin` whose host is not `Host` (`null` too; the scheme is not
    compared, a TLS proxy may hide it); with neither, it is not a browser's."""
    site = headers.get("sec-fetch-site")
    if site is not None:
        return site not in OWN_SITE
    origin = headers.get("origin")
    if origin is None:
        return False
    netloc = urlsplit(origin).netloc.lower()
    return not netloc or netloc != headers.get("host", "").lower()


class SessionCookies:
    """ASGI middleware: the session of every request to the app's own paths (`prefixes`
    but `sessionless`). Settings are read through callables: the agent's are known once it
    is open. `secure` always marks the cookie `Secure` (HTTPS requests are marked anyway);
    `per_minute` bounds the sessions one address starts (0: no bound). Behind a proxy, run
    uvicorn with `--proxy-headers`, so that the scheme and the address are the client's.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        secret: Callable[[], str],
        secure: Callable[[], bool],
        per_minute: Callable[[], int] = lambda: 0,
        prefixes: tuple[str, ...] = ("/api/",),
        sessionless: frozenset[str] = frozenset(),
        identity: Callable[[], Authenticator | None] = lambda: None,
    ) -> None:
        self.app, self.secret, self.secure, self.prefixes = app, secret, secure, prefixes
        self.sessionless, self.identity = sessionless, identity
        self.per_minute = per_minute
        self._limiter = MovingWindowRateLimiter(MemoryStorage())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        safe = scope["method"] in SAFE_METHODS
        foreign = from_another_origin(headers)
        if foreign and not safe:
            await self._refuse(403, "cross_site_request", CROSS_SITE, scope, receive, send)
            return
        if safe and scope["path"] in self.sessionless:
            await self.app(scope, receive, send)
            return
        authenticator = self.identity()
        if authenticator is not None:
            await self._signed_in(authenticator, scope, receive, send)
            return
        secret = self.secret()
        session_id = read_cookie(secret, Request(scope).cookies.get(COOKIE_NAME, ""))
        if session_id is not None:
            scope.setdefault("state", {})["session_id"] = session_id
            await self.app(scope, receive, send)
            return
        asked = headers.get(SESSION_HEADER, "").strip().lower() == NEW_SESSION
        if foreign or not (safe or asked):
            await self._refuse(403, "session_required", SESSION_REQUIRED, scope, receive, send)
            return
        if not self._may_start(scope):
            await self._refuse(429, "too_many_sessions", TOO_MANY_SESSIONS, scope, receive, send)
            return
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        scope.setdefault("state", {})["session_id"] = session_id
        secure = self.secure() or scope.get("scheme") == "https"
        header = cookie_header(secret, session_id, secure=secure)

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message).append("set-cookie", header)
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    async def _signed_in(
        self, authenticator: Authenticator, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Serve the request as its signed-in user, else answer 401."""
        try:  # in a worker thread: fetching a JWKS may block
            signed = await run_in_threadpool(authenticator.connection_user, Request(scope))
        except Unauthenticated as exc:
            await self._refuse(401, "unauthenticated", str(exc), scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state["session_id"], state["signed_in"] = signed.session_id, signed
        await self.app(scope, receive, send)

    def _may_start(self, scope: Scope) -> bool:
        """Count a new session against the client address's bound."""
        limit = self.per_minute()
        if limit <= 0:
            return True
        client = scope.get("client")
        address = client[0] if client else "unknown"
        return self._limiter.hit(RateLimitItemPerMinute(limit), "new-session", address)

    @staticmethod
    async def _refuse(
        status: int, code: str, message: str, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Answer without a session: nothing runs, no cookie is set, the body is unread."""
        logger.info("refused a %s request: %s", scope["method"], code)
        response = error_response(status, code, message)
        if status == 429:
            response.headers["Retry-After"] = "60"
        if status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        await response(scope, receive, send)
