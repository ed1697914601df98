"""The HTTP app (FastAPI): routers, middleware, error handlers and the agent's lifespan.
Alone (`uvicorn agent.server:app`) or merged into `langgraph dev` / LangGraph Server,
where it touches only its own paths; the chat page (`agent.web`) is at `/`.
"""

# No `from __future__ import annotations` in the route modules' users: `langgraph dev`
# loads agent/server.py under another module name; FastAPI resolves hints eagerly.
import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Union

from fastapi import FastAPI, HTTPException, Request
from starlette.concurrency import run_in_threadpool
from starlette.routing import Match, Mount

from agent import web
from agent.api import (
    access_log,
    chat,
    conversations,
    error_responses,
    memories,
    search,
    signin,
    transfer,
)
from agent.api.body import BodyLimit
from agent.api.error_responses import DOCS_PATH, OWN_PATHS, SCHEMA_PATH, SESSIONLESS
from agent.api.headers import NoSniff
from agent.api.sessions import SessionCookies
from agent.identity import Authenticator, SignIns
from agent.settings import Settings, SettingsError
from memory.limits import MAX_EXPORT_BYTES

if TYPE_CHECKING:
    from agent.service import ChatAgent

logger = logging.getLogger(__name__)

SWEEP_SECONDS = 3600.0
"""How often a running server applies the retention policy (and once at start-up)."""

AgentSource = Union["ChatAgent", Callable[[], "ChatAgent"], None]
"""An open agent (its owner closes it), a factory, or None for one from the environment
(both opened and closed by the app's lifespan). The agent's module is imported when the
app starts, not when it is imported: `langgraph dev` imports the app before it serves."""


async def sweep_periodically(agent: "ChatAgent", seconds: float) -> None:
    """Apply the retention policy now and every `seconds` (a failure is logged; it retries)."""
    while True:
        try:
            removed = await run_in_threadpool(agent.sweep)
            if removed["threads"] or removed["memories"] or removed["archivedLines"]:
                logger.info("retention sweep: %s", removed)
        except Exception:
            logger.exception("the retention sweep failed")
        await asyncio.sleep(seconds)


ANY_METHOD = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
CATCH_ALL = "/api/{rest:path}"


def allowed_methods(app: FastAPI, request: Request) -> set[str]:
    """The methods the app's routes take at the request's path (none: an unknown path).

    Each method is tried against every route but the catch-all and mounts (under
    `langgraph dev`, LangGraph's own routes sit in a mount that takes every path)."""
    routes = [
        r
        for r in app.router.routes
        if not isinstance(r, Mount) and getattr(r, "path", None) != CATCH_ALL
    ]
    return {
        method
        for method in ANY_METHOD
        if any(r.matches({**request.scope, "method": method})[0] is Match.FULL for r in routes)
    }


def agent_lifespan(
    agent: AgentSource, settings: Settings | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: opens the agent (unless given one), sweeps retention
    periodically while the app runs, and closes the agent it opened."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        from agent.service import ChatAgent

        async with contextlib.AsyncExitStack() as owned:  # closes the agent opened here
            try:
                if isinstance(agent, ChatAgent):
                    opened = agent
                else:
                    factory = agent or (lambda: ChatAgent(settings=settings))
                    opened = await run_in_threadpool(factory)
                    owned.push_async_callback(run_in_threadpool, opened.close)
                app.state.agent = opened
                app.state.identity = Authenticator.from_settings(
                    opened.settings,
                    lambda: opened.memory.ids.secret,
                    SignIns(opened.memory.threads, opened.memory.ids),
                )
            except SettingsError as exc:
                logger.error("cannot start the agent: %s", exc)
                raise
            sweeper = asyncio.create_task(sweep_periodically(opened, SWEEP_SECONDS))
            try:
                yield
            finally:
                sweeper.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sweeper

    return lifespan


def create_app(agent: AgentSource = None, *, settings: Settings | None = None) -> FastAPI:
    """The HTTP app over `agent` (an `AgentSource`; `settings` for the default one, else
    the environment's). Start-up fails, before anything opens, on an unusable setting."""

    app = FastAPI(
        title="LangGraph memory agent",
        docs_url=DOCS_PATH,
        openapi_url=SCHEMA_PATH,
        lifespan=agent_lifespan(agent, settings),
    )
    # each endpoint a route of the app's own, not an included router: LangGraph's server
    # wraps every route of the app in its auth middleware (`enable_custom_route_auth`)
    for module in (chat, conversations, memories, search, signin, transfer, web):  # web: the page
        app.router.routes.extend(module.router.routes)

    @app.get("/api/health", tags=["meta"])
    async def health() -> dict[str, Any]:
        # counts only (no text, no id): what the models' structured calls met
        return {"status": "ok", "structured": app.state.agent.structured.stats.snapshot()}

    # last of the app's routes: a path of the app's own that no route takes is answered
    # here, so that it is 404 or 405 alike under uvicorn and under `langgraph dev` (whose
    # catch-all mount would otherwise take a wrong method as an unknown path)
    @app.api_route(CATCH_ALL, methods=list(ANY_METHOD), include_in_schema=False)
    async def unmatched(request: Request) -> None:
        allowed = allowed_methods(app, request)
        if allowed:
            raise HTTPException(405, headers={"Allow": ", ".join(sorted(allowed))})
        raise HTTPException(404)

    app.add_middleware(
        SessionCookies,
        secret=lambda: app.state.agent.memory.ids.secret,
        secure=lambda: app.state.agent.settings.secure_cookies,
        per_minute=lambda: app.state.agent.settings.new_sessions_per_minute,
        prefixes=OWN_PATHS,
        sessionless=SESSIONLESS,
        identity=lambda: app.state.identity,
    )
    # before anything reads; an import's document may be larger than a message
    larger = {transfer.IMPORT_PATH: MAX_EXPORT_BYTES}
    app.add_middleware(BodyLimit, prefixes=OWN_PATHS, larger=larger)
    app.add_middleware(NoSniff, prefixes=(*OWN_PATHS, web.ASSET_PREFIX))  # outermost
    error_responses.install(app)
    access_log.install(lambda: app.state.agent.memory.ids.secret)
    return app
