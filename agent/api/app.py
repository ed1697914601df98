"""The HTTP app (FastAPI): routers, middleware, error handlers and the agent's lifespan.

Runs alone (`uvicorn agent.server:app`) or inside `langgraph dev` / LangGraph Server
(`"http": {"app": "./agent/server.py:app"}`), where its routes, middleware and
handlers are merged into LangGraph's app: both touch only the app's own paths. The
chat page (`agent.web`) is served at `/`.
"""

# No `from __future__ import annotations` in the route modules' users: `langgraph dev`
# loads agent/server.py under another module name; FastAPI resolves hints eagerly.
import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from agent import web
from agent.api import chat, conversations, errors, memories
from agent.api.body import BodyLimit
from agent.api.errors import OWN_PATHS
from agent.api.headers import NoSniff
from agent.api.sessions import SessionCookies
from agent.service import ChatAgent
from agent.settings import Settings, SettingsError

logger = logging.getLogger(__name__)

SWEEP_SECONDS = 3600.0
"""How often a running server applies the retention policy (and once at start-up)."""

AgentSource = ChatAgent | Callable[[], ChatAgent] | None
"""An open agent (its owner closes it), a factory, or None for one from the environment
(both opened and closed by the app's lifespan)."""


async def sweep_periodically(agent: ChatAgent, seconds: float) -> None:
    """Apply the retention policy now and every `seconds`; a failure is logged and the
    next round tries again."""
    while True:
        try:
            removed = await run_in_threadpool(agent.sweep)
            if removed["threads"] or removed["memories"]:
                logger.info("retention sweep: %s", removed)
        except Exception:
            logger.exception("the retention sweep failed")
        await asyncio.sleep(seconds)


def create_app(agent: AgentSource = None, *, settings: Settings | None = None) -> FastAPI:
    """The HTTP app over `agent`.

    Args:
        agent: see `AgentSource`.
        settings: for the default agent (default: read from the environment at start-up).

    Start-up fails, before any file or connection is opened, when a setting is unusable
    (for example a session secret shorter than 32 characters).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if isinstance(agent, ChatAgent):
            app.state.agent, owned = agent, False
        else:
            factory = agent or (lambda: ChatAgent(settings=settings or Settings.from_env()))
            try:
                app.state.agent, owned = await run_in_threadpool(factory), True
            except SettingsError as exc:
                logger.error("cannot start the agent: %s", exc)
                raise
        sweeper = asyncio.create_task(sweep_periodically(app.state.agent, SWEEP_SECONDS))
        try:
            yield
        finally:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
            if owned:
                await run_in_threadpool(app.state.agent.close)

    app = FastAPI(
        title="LangGraph memory agent",
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
        lifespan=lifespan,
    )
    app.include_router(chat.router)
    app.include_router(conversations.router)
    app.include_router(memories.router)
    app.include_router(web.router)  # the chat page at `/` (agent/web/)

    @app.get("/api/health", tags=["meta"])
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    app.add_middleware(
        SessionCookies,
        secret=lambda: app.state.agent.memory.ids.secret,
        secure=lambda: app.state.agent.settings.secure_cookies,
        per_minute=lambda: app.state.agent.settings.new_sessions_per_minute,
        prefixes=OWN_PATHS,
        sessionless=frozenset({"/api/health", app.docs_url or "", app.openapi_url or ""}),
    )
    app.add_middleware(BodyLimit, prefixes=OWN_PATHS)  # before anything reads
    app.add_middleware(NoSniff, prefixes=(*OWN_PATHS, web.ASSET_PREFIX))  # outermost
    errors.install(app)
    return app
