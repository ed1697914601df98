"""The HTTP API (FastAPI): chat over server-sent events, hydration and the registry.

Runs alone (`uvicorn agent.server:app`) or inside `langgraph dev` / LangGraph Server
(`"http": {"app": "./agent/server.py:app"}` in langgraph.json). Sessions are an
HttpOnly, SameSite=Lax cookie holding a random id signed with the server secret; a
missing or tampered cookie starts a new, empty session.
"""

# No `from __future__ import annotations` here: `langgraph dev` loads this file under
# another module name, where FastAPI could not resolve postponed request-model hints.
import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from starlette.concurrency import run_in_threadpool

from agent.errors import ConversationBusy, InvalidRequest
from agent.service import ChatAgent
from graphs.resources import Lazy
from memory import ConversationNotFound, InvalidInput, StorageError
from memory.limits import MAX_MESSAGE_CHARS

logger = logging.getLogger(__name__)

COOKIE_NAME = "agent_session"
COOKIE_MAX_AGE = 60 * 60 * 24 * 365
MAX_BODY_BYTES = 256 * 1024
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class ApiError(Exception):
    """An error with an HTTP status and a stable code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    message: StrictStr
    conversationId: StrictStr | None = None
    createConversation: StrictBool = False
    mode: StrictStr = "auto"


class ResumeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conversationId: StrictStr
    decision: dict[str, Any] = Field(min_length=1)


class SelectRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    conversationId: StrictStr


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _sign(secret: str, session_id: str) -> str:
    return hmac.new(
        secret.encode(), f"session-cookie:{session_id}".encode(), hashlib.sha256
    ).hexdigest()


class Sessions:
    """Issues and verifies signed session cookies."""

    def __init__(self, secret: str, *, secure: bool = False) -> None:
        self._secret = secret
        self._secure = secure

    def read(self, request: Request) -> str | None:
        """The session id of a valid cookie, else None (missing or tampered)."""
        raw = request.cookies.get(COOKIE_NAME, "")
        session_id, _, signature = raw.partition(".")
        if session_id and hmac.compare_digest(signature, _sign(self._secret, session_id)):
            return session_id
        return None

    def issue(self, response: Response, session_id: str) -> None:
        response.set_cookie(
            COOKIE_NAME,
            f"{session_id}.{_sign(self._secret, session_id)}",
            max_age=COOKIE_MAX_AGE,
            httponly=True,
            samesite="lax",
            secure=self._secure,
            path="/",
        )


def _sse(event: dict[str, Any]) -> bytes:
    payload = {key: value for key, value in event.items() if key != "event"}
    return f"event: {event['event']}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def create_app(
    agent: ChatAgent | Lazy[ChatAgent] | None = None, *, secure_cookies: bool = False
) -> FastAPI:
    """The HTTP app over `agent` (default: a `ChatAgent` from the environment, built lazily)."""
    provider: Lazy[ChatAgent] = Lazy.of(agent) if agent is not None else Lazy(ChatAgent)
    app = FastAPI(
        title="LangGraph memory agent", docs_url="/api/docs", openapi_url="/api/openapi.json"
    )

    async def sessions() -> Sessions:
        chat_agent = await provider.aget()
        return Sessions(chat_agent.memory.ids.secret, secure=secure_cookies)

    @app.middleware("http")
    async def limit_body(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
            return error_response(
                413, "payload_too_large", f"request bodies are limited to {MAX_BODY_BYTES:,} bytes"
            )
        return await call_next(request)

    @app.exception_handler(ApiError)
    async def api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for error in exc.errors():
            location = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
            problems.append(f"{location or 'body'}: {error.get('msg', 'invalid')}")
        code = (
            "invalid_json"
            if any(e.get("type") == "json_invalid" for e in exc.errors())
            else "invalid_request"
        )
        return error_response(400, code, "; ".join(problems)[:500])

    @app.exception_handler(Exception)
    async def internal_error(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error in the HTTP API", exc_info=exc)
        return error_response(500, "internal_error", "internal error")

    def translate(exc: Exception) -> ApiError:
        if isinstance(exc, ConversationNotFound):
            return ApiError(404, "not_found", "conversation not found")
        if isinstance(exc, ConversationBusy):
            return ApiError(409, "conversation_busy", str(exc))
        if isinstance(exc, InvalidRequest | InvalidInput):
            return ApiError(400, "invalid_request", str(exc))
        if isinstance(exc, StorageError):
            return ApiError(503, "storage_unavailable", str(exc))
        raise exc

    async def session_of(request: Request) -> tuple[str, bool]:
        current = (await sessions()).read(request)
        return (current, False) if current else (secrets.token_urlsafe(24), True)

    async def respond(request: Request, call: Callable[[ChatAgent, str], Any]) -> Response:
        """Run `call(agent, session_id)` off the event loop and answer with its JSON."""
        session_id, issued = await session_of(request)
        chat_agent = await provider.aget()
        try:
            body = await run_in_threadpool(call, chat_agent, session_id)
        except Exception as exc:  # mapped to typed HTTP errors, or re-raised as internal
            error = translate(exc)
            response: Response = error_response(error.status, error.code, error.message)
        else:
            response = JSONResponse(body)
        if issued:
            (await sessions()).issue(response, session_id)
        return response

    async def stream(
        request: Request,
        session_id: str,
        issued: bool,
        events: AsyncGenerator[dict[str, Any], None],
    ) -> Response:
        try:
            first = await anext(events)
        except Exception as exc:
            error = translate(exc)
            response: Response = error_response(error.status, error.code, error.message)
            if issued:
                (await sessions()).issue(response, session_id)
            return response

        async def body() -> AsyncIterator[bytes]:
            try:
                yield _sse(first)
                async for event in events:
                    yield _sse(event)
            finally:
                await events.aclose()

        response = StreamingResponse(body(), media_type="text/event-stream", headers=SSE_HEADERS)
        response.headers["X-Conversation-Id"] = str(first.get("conversationId", ""))
        if issued:
            (await sessions()).issue(response, session_id)
        return response

    @app.post("/api/chat")
    async def chat(request: Request, payload: ChatRequest) -> Response:
        if len(payload.message) > MAX_MESSAGE_CHARS:
            raise ApiError(
                413, "message_too_long", f"messages are limited to {MAX_MESSAGE_CHARS:,} characters"
            )
        session_id, issued = await session_of(request)
        chat_agent = await provider.aget()
        events = chat_agent.astream(
            payload.message,
            session_id=session_id,
            conversation_id=payload.conversationId,
            create_conversation=payload.createConversation,
            mode=payload.mode,  # type: ignore[arg-type]
        )
        return await stream(request, session_id, issued, events)

    @app.post("/api/chat/resume")
    async def resume(request: Request, payload: ResumeRequest) -> Response:
        session_id, issued = await session_of(request)
        chat_agent = await provider.aget()
        events = chat_agent.astream_resume(
            payload.decision, session_id=session_id, conversation_id=payload.conversationId
        )
        return await stream(request, session_id, issued, events)

    @app.get("/api/chat/thread")
    async def thread(request: Request, conversationId: str) -> Response:
        return await respond(
            request,
            lambda agent, sid: agent.hydrate(session_id=sid, conversation_id=conversationId),
        )

    @app.get("/api/conversations")
    async def conversations(request: Request) -> Response:
        return await respond(request, lambda agent, sid: agent.conversations(session_id=sid))

    @app.post("/api/conversations/select")
    async def select(request: Request, payload: SelectRequest) -> Response:
        cid = payload.conversationId
        return await respond(
            request, lambda agent, sid: agent.select(session_id=sid, conversation_id=cid)
        )

    @app.delete("/api/conversations/{conversation_id}")
    async def delete(request: Request, conversation_id: str) -> Response:
        return await respond(
            request,
            lambda agent, sid: agent.delete_conversation(
                session_id=sid, conversation_id=conversation_id
            ),
        )

    @app.get("/api/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


app = create_app()
