"""uvicorn's access log without conversation ids (each a short HMAC under the server
secret: one conversation's requests can be followed, and it names nothing) nor what a
query searched for.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from urllib.parse import parse_qsl, quote, unquote

ACCESS_LOGGER = "uvicorn.access"
CONVERSATIONS = "/api/conversations/"
OWN_SEGMENTS = frozenset({"select"})
"""Paths under `CONVERSATIONS` that are routes, not conversation ids."""
ID_PARAMETERS = frozenset({"conversationId"})
HIDDEN = "…"
UNKNOWN = "conversation"
"""What an id is logged as when the secret is not known yet."""


class RedactedAccessLog(logging.Filter):
    """Rewrites the path of uvicorn's access-log records, hashed under `secret()`."""

    def __init__(self, secret: Callable[[], str]) -> None:
        super().__init__()
        self.secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (*args[:2], redact_path(args[2], self.hash), *args[3:])
        return True

    def hash(self, conversation_id: str) -> str:
        """`c:` and the first 12 hex digits of the id's HMAC."""
        try:
            key = self.secret().encode()
        except Exception:  # the agent is not open yet (or no longer): nothing to key with
            return UNKNOWN
        digest = hmac.new(key, f"access-log:{conversation_id}".encode(), hashlib.sha256)
        return f"c:{digest.hexdigest()[:12]}"


def redact_path(path: str, hash_id: Callable[[str], str]) -> str:
    """`path` (as uvicorn logs it: quoted, with its query) with each conversation id, in
    `/api/conversations/{id}` or a `conversationId` parameter, as `hash_id` writes it and
    every other query value but a number as `…`."""
    base, mark, query = path.partition("?")
    if base.startswith(CONVERSATIONS):
        segment, slash, rest = base.removeprefix(CONVERSATIONS).partition("/")
        if segment and segment not in OWN_SEGMENTS:
            base = f"{CONVERSATIONS}{hash_id(unquote(segment))}{slash}{rest}"
    if not query:
        return base + mark

    def shown(name: str, value: str) -> str:  # a hash, a number or `…`: nothing to quote
        if name in ID_PARAMETERS:
            return hash_id(value)
        return value if value.isascii() and value.isdigit() else HIDDEN

    pairs = parse_qsl(query, keep_blank_values=True)
    return f"{base}?" + "&".join(f"{quote(name)}={shown(name, value)}" for name, value in pairs)


def install(secret: Callable[[], str]) -> None:
    """Put the filter on uvicorn's access logger, in place of one an earlier app put."""
    logger = logging.getLogger(ACCESS_LOGGER)
    for old in [f for f in logger.filters if isinstance(f, RedactedAccessLog)]:
        logger.removeFilter(old)
    logger.addFilter(RedactedAccessLog(secret))
