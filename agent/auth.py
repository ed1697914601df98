"""LangGraph custom auth (`"auth"` in langgraph.json): who a request is, and which of the
server's threads, runs, crons, assistants and store items it may touch.

With no identity mode configured, every request passes as the anonymous user it was
before and nothing is filtered. With a mode, a request without valid credentials gets
401; threads, runs and crons are stamped with their owner (the user's session id) and
only the owner reads, lists, streams, updates, resumes, copies or deletes them; store
namespaces are rewritten under the user's own; the graphs' assistants are shared for
reading and a user's own assistants are theirs alone. The mounted HTTP app's routes
(`enable_custom_route_auth`) are authenticated here too, the page's sign-in cookie
accepted on `/api/…` only; the page's static files and health checks are public.
"""

from __future__ import annotations

import functools
from typing import Any

from langgraph_sdk import Auth
from starlette.requests import HTTPConnection

from agent.api.error_responses import OWN_PATHS, SESSIONLESS
from agent.identity import Authenticator, Unauthenticated
from agent.settings import Settings
from agent.web import ASSET_PREFIX
from memory import resolve_secret

OWNER = "owner"
"""The metadata key that names a thread's, run's, cron's or assistant's owner."""
PAGE = "/"
STAMPED_ACTIONS = frozenset({"create", "create_run", "update"})
SHARED_READS = frozenset({"read", "search"})
CREATED_BY, SYSTEM = "created_by", "system"
"""The metadata `langgraph dev` gives the graphs' own assistants (which name no owner)."""

settings = Settings.from_env()
secret = functools.cache(lambda: resolve_secret(settings.secret, settings.data_dir))
authenticator = Authenticator.from_settings(settings, secret)
auth = Auth()


def anonymous() -> Any:
    """The user LangGraph's server gives a request when no auth is configured."""
    from langgraph_api.auth.noop import UnauthenticatedUser  # present only in the server

    return UnauthenticatedUser()


def public(path: str) -> bool:
    """The page, its static files and the health and schema routes: nothing of a user."""
    return path == PAGE or path.startswith(ASSET_PREFIX) or path in SESSIONLESS


@auth.authenticate
def authenticate(scope: dict[str, Any]) -> Any:
    """The request's user (`mode:user`; anonymous with no mode), found in a worker thread (fetching
    a JWKS may block); a 401 without valid credentials."""
    if authenticator is None or public(scope["path"]):
        return anonymous()
    own = scope["path"].startswith(OWN_PATHS)  # the page's sign-in cookie: `/api/…` only
    try:
        signed = authenticator.connection_user(HTTPConnection(scope), cookie=own)
    except Unauthenticated as exc:
        raise Auth.exceptions.HTTPException(
            status_code=401, detail=str(exc), headers={"WWW-Authenticate": "Bearer"}
        ) from None
    return {"identity": signed.session_id, "permissions": []}


def owner(ctx: Auth.types.AuthContext) -> str | None:
    """The signed-in user's session id; None when no mode is configured."""
    if authenticator is None:
        return None
    identity = ctx.user.identity
    if not identity or not ctx.user.is_authenticated:
        raise Auth.exceptions.HTTPException(status_code=403, detail="sign in first")
    return identity


def stamp(ctx: Auth.types.AuthContext, value: dict[str, Any], user: str) -> None:
    """Name `user` the owner of what is created or updated (a client's own `owner` key
    is overwritten: nobody hands a thread to someone else)."""
    if ctx.action not in STAMPED_ACTIONS:
        return
    if value.get("metadata") is None and ctx.action != "update":
        value["metadata"] = {}
    if value.get("metadata") is not None:
        value["metadata"][OWNER] = user  # in place: the server holds the same dict


@auth.on
async def refuse_the_rest(ctx: Auth.types.AuthContext, value: Any) -> bool:
    """What no handler below names is refused when a mode is configured."""
    return authenticator is None


@auth.on(resources=["threads", "crons"])
async def own_threads(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Any:
    """Threads with their runs (reads, streams, updates, resumes, copies), crons: the owner's."""
    user = owner(ctx)
    if user is None:
        return None
    stamp(ctx, value, user)
    return {OWNER: user}


@auth.on.assistants
async def own_assistants(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Any:
    """The graphs' assistants are everyone's to read and run; an assistant a user
    creates is theirs alone to read, update or delete."""
    user = owner(ctx)
    if user is None:
        return None
    stamp(ctx, value, user)
    if ctx.action in STAMPED_ACTIONS and value.get("metadata") is not None:
        value["metadata"][CREATED_BY] = "user"  # a user's assistant never passes as the graphs'
    if ctx.action in SHARED_READS:
        return {"$or": [{OWNER: user}, {CREATED_BY: SYSTEM}]}
    return {OWNER: user}


@auth.on.store
async def own_store(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Every store namespace a user names lies under their own: `(user, *namespace)`."""
    user = owner(ctx)
    if user is not None:
        value["namespace"] = (user, *(value.get("namespace") or ()))
