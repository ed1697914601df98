"""Who a request is: an API key, an OIDC/JWT bearer token, a trusted proxy's user header,
or the cookie the page keeps after signing in with a key or a token.

One `Authenticator` serves LangGraph's auth handler (`agent/auth.py`) and the HTTP app
(`agent/api/sessions.py`). A signed-in user's session id is `mode:user` (`key:alice`,
`jwt:<sub>`, `proxy:<user>`), the user id escaped to the characters a session id holds.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import jwt
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection

from agent.settings import IdentityMode, Settings, SettingsError
from memory.limits import MAX_ID_CHARS

if TYPE_CHECKING:  # the app imports no storage before it starts
    from memory.ids import ThreadIds
    from memory.storage.threads import ThreadStore

logger = logging.getLogger(__name__)

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
"""Asymmetric signatures only: a shared-secret (HS*) or unsigned token is never taken."""
LEEWAY_SECONDS = 30
"""Clock skew allowed between the identity provider and this server (exp, nbf)."""
JWKS_CACHE_SECONDS = 300
SIGN_IN_PREFIX = "sign-in"
"""The thread ids of the users' sign-in generations (one small document each)."""
COOKIE_NAME = "agent_identity"
COOKIE_SECONDS = 12 * 3600
"""The longest a sign-in cookie lasts (never past its token's expiry)."""

NO_CREDENTIALS = "sign in: send an API key (x-api-key, or Authorization: Bearer) or a bearer token"
BAD_KEY = "the API key is not valid"
UNTRUSTED_PROXY = "the user header is only taken from a trusted proxy"
FORWARDED_PEER = (
    "a user header came from %s, an address the server took from X-Forwarded-For: run "
    "uvicorn with --no-proxy-headers so that the trusted proxy is the connection's peer"
)
NO_USER = "the credentials name no user"
LONG_USER = "the user id is too long for a session"
BAD_TOKEN = "the bearer token is not valid: {reason}"
NO_KEYS = "the token's signing keys cannot be fetched"
BAD_JWKS = "AGENT_JWKS: {reason}"
TOKEN_REASONS: tuple[tuple[type[Exception], str], ...] = (
    (jwt.ExpiredSignatureError, "it has expired"),
    (jwt.ImmatureSignatureError, "it is not valid yet"),
    (jwt.InvalidAudienceError, "it is meant for another audience"),
    (jwt.InvalidIssuerError, "it comes from another issuer"),
    (jwt.InvalidSignatureError, "its signature does not verify"),
    (jwt.MissingRequiredClaimError, "it lacks a required claim"),
    (jwt.InvalidAlgorithmError, "its algorithm is not accepted"),
)


class Unauthenticated(Exception):
    """A request without valid credentials (HTTP 401); the message says what to send."""


@dataclass(frozen=True)
class SignedIn:
    """A request's user: its session `mode:user`, the credentials it came `via`, when they
    `expires` (a token's `exp`), the hash of its API `key` (a cookie made from it is bound
    to it), a cookie's sign-in `generation` (signing out ends the older ones)."""

    session_id: str
    via: IdentityMode | Literal["cookie"]
    expires: float | None = None
    key: str = ""
    generation: int = 0


def session_of(mode: IdentityMode, user: str) -> str:
    """`mode:user`, every character of `user` but ASCII letters, digits and '-' written
    `_xx` per UTF-8 byte (so `auth0|42` is `auth0_7c42`: distinct users stay distinct);
    `Unauthenticated` for an empty user id, or one too long once escaped."""
    escaped = "".join(
        char if char.isascii() and (char.isalnum() or char == "-") else _escape(char)
        for char in user
    )
    if not escaped:
        raise Unauthenticated(NO_USER)
    if len(escaped) > MAX_ID_CHARS:
        raise Unauthenticated(LONG_USER)
    return f"{mode}:{escaped}"


def _escape(char: str) -> str:
    return "".join(f"_{byte:02x}" for byte in char.encode())


class SignIns:
    """Each user's sign-in generation, a document in the agent's storage keyed by the
    session's HMAC: signing out raises it, and every worker refuses older cookies."""

    def __init__(self, threads: ThreadStore, ids: ThreadIds) -> None:
        self.threads, self.ids = threads, ids

    def _thread(self, session_id: str) -> str:
        return f"{SIGN_IN_PREFIX}:{self.ids.session_key(session_id)}"

    def generation(self, session_id: str) -> int:
        """The user's current generation (0 before their first sign-out)."""
        document = self.threads.get(self._thread(session_id)) or {}
        return int(document.get("generation", 0))

    def sign_out(self, session_id: str) -> None:
        """End every sign-in cookie of the user made so far."""
        thread = self._thread(session_id)
        with self.threads.lock(thread):
            self.threads.put(thread, {"generation": self.generation(session_id) + 1})


class Authenticator:
    """Checks a request's credentials against the settings' modes; `secret()` signs the
    sign-in cookie; without `sign_ins` a cookie is checked by signature, expiry and key
    alone. Raises `SettingsError` for a JWKS file missing or without a usable key."""

    def __init__(
        self, settings: Settings, secret: Callable[[], str], sign_ins: SignIns | None = None
    ) -> None:
        self.settings, self._secret, self.sign_ins = settings, secret, sign_ins
        self.modes = settings.identity_modes
        self._key_sets: jwt.PyJWKSet | None = None
        self._jwks_client: jwt.PyJWKClient | None = None
        source = settings.jwks
        if source and source.startswith(("https://", "http://")):
            self._jwks_client = jwt.PyJWKClient(
                source, cache_keys=True, lifespan=JWKS_CACHE_SECONDS, timeout=5
            )
        elif source:
            try:
                self._key_sets = jwt.PyJWKSet.from_json(Path(source).read_text(encoding="utf-8"))
            except (OSError, ValueError, jwt.PyJWTError) as exc:
                raise SettingsError(BAD_JWKS.format(reason=exc)) from None

    @classmethod
    def from_settings(
        cls, settings: Settings, secret: Callable[[], str], sign_ins: SignIns | None = None
    ) -> Authenticator | None:
        """The authenticator of `settings`; None without an identity mode (anonymous sessions)."""
        return cls(settings, secret, sign_ins) if settings.identity_modes else None

    def authenticate(
        self,
        headers: Mapping[str, str],
        client: str | None,
        *,
        cookie: str | None = None,
        now: float | None = None,
    ) -> SignedIn:
        """The user a request's credentials name: the proxy's header (from a trusted address only),
        else `x-api-key`, else `Authorization: Bearer` (a key, else a token), else the sign-in
        `cookie`; `Unauthenticated` without valid ones (nothing is tried after a bad one)."""
        proxied = self._proxy_user(headers, client)
        if proxied is not None:
            return SignedIn(session_of("proxy", proxied), "proxy")
        scheme, _, bearer = (headers.get("authorization") or "").partition(" ")
        key, token = headers.get("x-api-key"), None
        if key is None and scheme.lower() == "bearer" and bearer.strip():
            key = token = bearer.strip()
        if key is not None:
            signed = self._by_key(key)
            if signed is not None:
                return signed
            if token is not None and "jwt" in self.modes:
                return self._by_token(token)
            raise Unauthenticated(BAD_KEY)
        signed = self._from_cookie(cookie, time.time() if now is None else now)
        if signed is None:
            raise Unauthenticated(NO_CREDENTIALS)
        return signed

    def connection_user(self, connection: HTTPConnection, *, cookie: bool = True) -> SignedIn:
        """`authenticate` a connection by its headers, its own peer and (with `cookie`) its
        sign-in cookie."""
        peer = connection.client.host if connection.client else None
        sign_in = connection.cookies.get(COOKIE_NAME) if cookie else None
        return self.authenticate(connection.headers, peer, cookie=sign_in)

    def cookie_for(self, signed: SignedIn, now: float | None = None) -> tuple[str, int]:
        """(value, max-age in seconds) of the sign-in cookie for `signed`, in the user's
        current sign-in generation, bound to the key it came with."""
        now = time.time() if now is None else now
        generation = self.sign_ins.generation(signed.session_id) if self.sign_ins else 0
        expires = int(min(now + COOKIE_SECONDS, signed.expires or math.inf))
        payload = f"{signed.session_id}.{expires}.{generation}"
        return f"{payload}.{self._sign(payload, signed.key)}", max(expires - int(now), 0)

    def _sign(self, payload: str, key: str) -> str:
        message = f"identity-cookie:{payload}:{key}".encode()
        return hmac.new(self._secret().encode(), message, hashlib.sha256).hexdigest()

    def _from_cookie(self, value: str | None, now: float) -> SignedIn | None:
        """The user of a valid, unexpired cookie whose mode still stands (its key still
        listed, tokens still taken)."""
        session_id, _, rest = (value or "").partition(".")  # session ids hold no '.'
        expires, _, rest = rest.partition(".")
        generation, _, signature = rest.partition(".")
        if not (expires.isdigit() and generation.isdigit()) or int(expires) <= now:
            return None
        payload = f"{session_id}.{expires}.{generation}"
        keys = [e.digest for e in self.settings.api_keys if session_of("key", e.user) == session_id]
        if session_id.partition(":")[0] == "jwt" and "jwt" in self.modes:
            keys = [""]
        # as bytes: a client may send any character, which a `str` comparison refuses
        valid = [
            hmac.compare_digest(signature.encode(), self._sign(payload, key).encode())
            for key in keys
        ]
        if not any(valid):
            return None
        if self.sign_ins is not None and self.sign_ins.generation(session_id) != int(generation):
            return None  # signed out since
        return SignedIn(session_id, "cookie", float(expires), generation=int(generation))

    def _by_key(self, key: str) -> SignedIn | None:
        digest = hashlib.sha256(key.encode()).hexdigest()
        user = None
        for entry in self.settings.api_keys:  # every entry compared: no early exit
            if hmac.compare_digest(digest, entry.digest):
                user = entry.user
        return None if user is None else SignedIn(session_of("key", user), "key", key=digest)

    def _by_token(self, token: str) -> SignedIn:
        settings = self.settings
        try:
            claims = jwt.decode(
                token,
                self._signing_key(token),
                algorithms=list(ALGORITHMS),
                audience=settings.jwt_audience,
                issuer=settings.jwt_issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.PyJWKClientConnectionError:
            logger.warning("the JWKS at %s cannot be fetched", settings.jwks, exc_info=True)
            raise Unauthenticated(NO_KEYS) from None
        except jwt.PyJWTError as exc:
            reason = next((text for kind, text in TOKEN_REASONS if isinstance(exc, kind)), None)
            raise Unauthenticated(BAD_TOKEN.format(reason=reason or "it cannot be read")) from None
        subject = claims.get("sub")
        if not isinstance(subject, str):
            raise Unauthenticated(NO_USER)
        return SignedIn(session_of("jwt", subject), "jwt", float(claims["exp"]))

    def _signing_key(self, token: str) -> jwt.PyJWK:
        """The issuer's key named by the token's `kid` (the only key when it names none)."""
        if self._jwks_client is not None:
            return self._jwks_client.get_signing_key_from_jwt(token)
        assert self._key_sets is not None
        kid = jwt.get_unverified_header(token).get("kid")
        keys = self._key_sets.keys
        if kid is None and len(keys) == 1:
            return keys[0]
        try:
            return self._key_sets[str(kid)]
        except KeyError:
            raise jwt.InvalidSignatureError("no signing key has that kid") from None

    def _proxy_user(self, headers: Mapping[str, str], client: str | None) -> str | None:
        header = self.settings.proxy_user_header
        value = headers.get(header) if header else None
        if value is None:
            return None
        if client is not None and client in forwarded_hosts(headers):
            # uvicorn's proxy headers put a forwarded address where the peer's was: only
            # the connection's own peer can be the proxy
            logger.warning(FORWARDED_PEER, client)
            raise Unauthenticated(UNTRUSTED_PROXY)
        if not self._trusted(client):
            raise Unauthenticated(UNTRUSTED_PROXY)
        return value.strip()

    def _trusted(self, client: str | None) -> bool:
        try:
            address = ipaddress.ip_address(client or "")
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # a dual-stack socket's view of an IPv4 peer
        return any(address in network for network in self.settings.trusted_proxies)


def forwarded_hosts(headers: Mapping[str, str]) -> set[str]:
    """The hosts every `X-Forwarded-For` of a request names (ports and IPv6 brackets
    dropped), each header counted, as a server that joins them would."""
    values = (
        headers.getlist("x-forwarded-for")
        if isinstance(headers, Headers)
        else [headers.get("x-forwarded-for", "")]
    )
    hosts = set()
    for entry in ",".join(values).split(","):
        entry = entry.strip()
        if entry.startswith("["):
            entry = entry[1:].partition("]")[0]
        elif entry.count(":") == 1:
            entry = entry.partition(":")[0]
        hosts.add(entry)
    return hosts
