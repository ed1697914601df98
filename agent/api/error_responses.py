"""One error shape for the app's responses, `{"error": {"code", "message"}}`: domain
errors by stable codes, FastAPI's own reshaped, the unexpected logged and answered as a
bare `internal_error`. Only the app's paths: under `langgraph dev` these handlers serve
LangGraph's routes too.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.exceptions import HTTPException

from agent.errors import ConversationBusy, MemoryNotFound, MessageTooLong
from memory import ConversationNotFound, InvalidInput, StorageError

logger = logging.getLogger(__name__)

OWN_PATHS = ("/api/",)
"""Path prefixes that are this app's (others belong to LangGraph under `langgraph dev`)."""
DOCS_PATH, SCHEMA_PATH = "/api/docs", "/api/openapi.json"
SESSIONLESS = frozenset({"/api/health", DOCS_PATH, SCHEMA_PATH})
"""The app's paths that need no session nor sign-in (they hold nothing of a user)."""

CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}
DOMAIN_ERRORS: tuple[tuple[type[Exception], int, str], ...] = (
    (ConversationNotFound, 404, "not_found"),
    (MemoryNotFound, 404, "memory_not_found"),
    (ConversationBusy, 409, "conversation_busy"),
    (MessageTooLong, 413, "message_too_long"),
    (InvalidInput, 400, "invalid_request"),
    (StorageError, 503, "storage_unavailable"),
)
"""The errors the agent raises on purpose, (kind, status, code): the first kind that
matches answers, with the error's message (an unknown conversation's is fixed)."""
CONVERSATION_NOT_FOUND = "conversation not found"
INTERNAL = "internal error"
BAD_BODY = "the request body could not be read as JSON"


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """The app's error shape."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def own(request: Request) -> bool:
    """Whether the request is for one of this app's own paths."""
    return request.url.path.startswith(OWN_PATHS)


async def on_domain_error(request: Request, exc: Exception) -> Response:
    # registered for the kinds of `DOMAIN_ERRORS` only: one of them matches
    status, code = next((s, c) for kind, s, c in DOMAIN_ERRORS if isinstance(exc, kind))
    message = CONVERSATION_NOT_FOUND if isinstance(exc, ConversationNotFound) else str(exc)
    return error_response(status, code, message)


async def on_http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if not own(request):
        return await http_exception_handler(request, exc)
    status = exc.status_code
    code = CODES.get(status, "bad_request" if status < 500 else "internal_error")
    if status == 400:  # FastAPI's "There was an error parsing the body"
        code, message = "invalid_json", BAD_BODY
    elif status in CODES or not isinstance(exc.detail, str):
        message = HTTPStatus(status).phrase.lower()
    else:
        message = exc.detail
    response = error_response(status, code, message)
    if exc.headers:
        response.headers.update(exc.headers)
    return response


async def on_validation_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    if any(e.get("type") == "json_invalid" for e in exc.errors()):
        return error_response(400, "invalid_json", BAD_BODY)
    problems = []
    for error in exc.errors():
        location = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        problems.append(f"{location or 'body'}: {error.get('msg', 'invalid')}")
    return error_response(400, "invalid_request", "; ".join(problems)[:500])


async def on_unexpected(request: Request, exc: Exception) -> Response:
    logger.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
    if not own(request):
        return PlainTextResponse("Internal Server Error", status_code=500)
    return error_response(500, "internal_error", INTERNAL)


def install(app: FastAPI) -> None:
    """Register the handlers on `app`."""
    app.add_exception_handler(HTTPException, on_http_error)
    app.add_exception_handler(RequestValidationError, on_validation_error)
    for kind, _, _ in DOMAIN_ERRORS:
        app.add_exception_handler(kind, on_domain_error)
    app.add_exception_handler(Exception, on_unexpected)
