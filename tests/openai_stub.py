"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for integration tests.

    with OpenAIStub() as stub:
        stub.reply_text("Hello there")
        model = ChatOpenAI(base_url=stub.base_url, api_key="test", max_retries=0)
        assert model.invoke("hi").content == "Hello there"
        assert stub.last_request["messages"][-1]["content"] == "hi"

Each chat request consumes one reply from a FIFO queue; when it is empty the stub
answers with `default` (unless set, a loud HTTP 500 naming the request). Embeddings
requests need no script: they are answered deterministically (`tests.openai_wire`).
"""

from __future__ import annotations

import json
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast

from tests.openai_wire import (
    MODELS,
    ToolCall,
    completion,
    embeddings_body,
    error_body,
    forced_function,
    new_id,
    stream_chunks,
)

__all__ = ["OpenAIStub", "Reply", "ToolCall"]

ReplyKind = Literal["text", "tool_calls", "json", "error"]

NO_REPLY_MESSAGE = (
    "OpenAIStub: no scripted reply left for request #{index} (model={model!r}). "
    "Script one with stub.reply_text()/reply_tool_calls()/reply_json() or pass default=."
)
UNKNOWN_PATH_MESSAGE = "OpenAIStub: unknown endpoint {method} {path}"
BAD_BODY_MESSAGE = "OpenAIStub: request body must be a JSON object"


@dataclass(frozen=True, kw_only=True)
class Reply:
    """One scripted response. Build with the classmethods, or via `OpenAIStub.reply_*`."""

    kind: ReplyKind
    content: str | None = None
    calls: tuple[ToolCall, ...] = ()
    payload: Any = None
    status: int = 200
    delay: float = 0.0
    """Seconds to hold the request open before answering."""

    @classmethod
    def text(cls, text: str, *, delay: float = 0.0) -> Reply:
        """An assistant text message."""
        return cls(kind="text", content=text, delay=delay)

    @classmethod
    def tool_calls(
        cls, calls: Sequence[Mapping[str, Any]], *, content: str | None = None, delay: float = 0.0
    ) -> Reply:
        """Tool calls, each `{"name": str, "arguments": dict | str, "id"?: str}`."""
        if not calls:
            raise ValueError("reply_tool_calls needs at least one call")
        parsed = tuple(ToolCall.from_spec(spec) for spec in calls)
        return cls(kind="tool_calls", content=content, calls=parsed, delay=delay)

    @classmethod
    def json(cls, obj: Any, *, delay: float = 0.0) -> Reply:
        """Structured output, placed where the request asked for it (see `resolve`)."""
        json.dumps(obj)  # fail at scripting time, not inside the server thread
        return cls(kind="json", payload=obj, delay=delay)

    @classmethod
    def error(cls, status: int, message: str, *, delay: float = 0.0) -> Reply:
        """An OpenAI-style error body with HTTP `status`."""
        if status < 400:
            raise ValueError(f"error status must be >= 400, got {status}")
        return cls(kind="error", status=status, content=message, delay=delay)

    def resolve(self, request: Mapping[str, Any]) -> tuple[str | None, tuple[ToolCall, ...]]:
        """The (content, tool calls) this reply produces for `request`.

        A JSON reply goes where the request asked for structured output: into the
        content for a `json_schema`/`json_object` response format, or into a call of
        the forced function when `tool_choice` pins one (or is "required" with a
        single tool). Otherwise it is returned as content.
        """
        if self.kind != "json":
            return self.content, self.calls
        encoded = json.dumps(self.payload)
        response_format = request.get("response_format") or {}
        if response_format.get("type") in ("json_schema", "json_object"):
            return encoded, ()
        forced = forced_function(request)
        if forced is not None:
            return None, (ToolCall(name=forced, arguments=encoded, id=new_id("call_")),)
        return encoded, ()


Refusable = Literal["json_schema", "json_object", "forced_tool"]
REFUSED_MESSAGE = "OpenAIStub: this server does not support {shape}"


def request_shape(request: Mapping[str, Any]) -> Refusable | None:
    """How a request asks for structured output: a response format, or a forced tool."""
    kind = (request.get("response_format") or {}).get("type")
    if kind in ("json_schema", "json_object"):
        return cast(Refusable, kind)
    return "forced_tool" if forced_function(request) is not None else None


class OpenAIStub:
    """A real HTTP server speaking the OpenAI chat-completions protocol from a script.

    Args:
        default: Reply used when the queue is empty; None answers with HTTP 500.
        refuse: structured-output shapes answered with HTTP 500 before any reply is
            taken, as real servers do (llama-cpp-python's refuses `json_schema`,
            llama.cpp's `llama-server` a forced tool call).
    """

    def __init__(self, *, default: Reply | None = None, refuse: Sequence[Refusable] = ()) -> None:
        self.default = default
        self.refuse = frozenset(refuse)
        self._queue: deque[Reply] = deque()
        self._requests: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._closed = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> OpenAIStub:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._server is not None:
            raise RuntimeError("OpenAIStub already started")
        self._closed.clear()
        self._server = _Server(("127.0.0.1", 0), _Handler, stub=self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits up to one poll
            name="openai-stub",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; requests held by `delay` are released without an answer."""
        if self._server is None:
            return
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> OpenAIStub:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`, for `ChatOpenAI(base_url=...)`."""
        if self._server is None:
            raise RuntimeError("OpenAIStub is not running; use `with OpenAIStub() as stub:`")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def enqueue(self, *replies: Reply) -> None:
        """Append replies to the FIFO queue."""
        with self._cond:
            self._queue.extend(replies)

    def reply_text(self, text: str, *, delay: float = 0.0) -> None:
        """Answer the next request with an assistant text message."""
        self.enqueue(Reply.text(text, delay=delay))

    def reply_tool_calls(
        self, calls: Sequence[Mapping[str, Any]], *, content: str | None = None, delay: float = 0.0
    ) -> None:
        """Answer with tool calls, each `{"name": str, "arguments": dict | str, "id"?: str}`."""
        self.enqueue(Reply.tool_calls(calls, content=content, delay=delay))

    def reply_json(self, obj: Any, *, delay: float = 0.0) -> None:
        """Answer with structured output, shaped for how the request asked for it."""
        self.enqueue(Reply.json(obj, delay=delay))

    def reply_error(self, status: int, message: str, *, delay: float = 0.0) -> None:
        """Answer with an OpenAI-style error body and HTTP `status`."""
        self.enqueue(Reply.error(status, message, delay=delay))

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        with self._cond:
            return len(self._queue)

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A snapshot of the chat-completion request bodies received, oldest first."""
        with self._cond:
            return list(self._requests)

    @property
    def last_request(self) -> dict[str, Any]:
        """The most recent chat-completion request body."""
        with self._cond:
            if not self._requests:
                raise LookupError("OpenAIStub has not received any chat-completion request")
            return self._requests[-1]

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Block until at least `count` requests arrived (e.g. one held open by `delay`)."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= count, timeout):
                raise TimeoutError(f"got {len(self._requests)} requests, expected {count}")
            return list(self._requests)

    def _record(self, request: dict[str, Any]) -> None:
        """Record a request that needs no scripted reply (embeddings)."""
        with self._cond:
            self._requests.append(request)
            self._cond.notify_all()

    def _take(self, request: dict[str, Any]) -> tuple[Reply, bool]:
        """Record `request` and pick its reply; the flag is False for the built-in 500."""
        with self._cond:
            self._requests.append(request)
            index = len(self._requests)
            self._cond.notify_all()
            if self._queue:
                return self._queue.popleft(), True
        if self.default is not None:
            return self.default, True
        message = NO_REPLY_MESSAGE.format(index=index, model=request.get("model"))
        return Reply(kind="error", status=500, content=message), False


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *, stub: OpenAIStub
    ) -> None:
        self.stub = stub
        super().__init__(address, handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up is expected in tests; anything else is not.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    server_version = "OpenAIStub/1.0"

    @property
    def stub(self) -> OpenAIStub:
        return cast(_Server, self.server).stub

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean; tests assert on `stub.requests` instead

    def do_GET(self) -> None:
        if self.path.split("?")[0].rstrip("/") == "/v1/models":
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "stub"} for m in MODELS]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_unknown()

    def do_POST(self) -> None:
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/v1/embeddings"):
            self._send_unknown()
            return
        length = int(self.headers.get("Content-Length") or 0)
        try:
            request = json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            request = None
        if not isinstance(request, dict):
            self._send_json(400, error_body(400, BAD_BODY_MESSAGE))
            return
        if path == "/v1/embeddings":
            self.stub._record(request)
            self._send_json(200, embeddings_body(request))
            return
        shape = request_shape(request)
        if shape in self.stub.refuse:
            self.stub._record(request)
            self._send_json(500, error_body(500, REFUSED_MESSAGE.format(shape=shape)))
            return
        reply, scripted = self.stub._take(request)
        if reply.delay and self.stub._closed.wait(reply.delay):
            return  # the stub is shutting down; drop the held request
        if reply.kind == "error":
            # Retrying an unscripted request cannot help, so tell the client not to.
            headers = {} if scripted else {"x-should-retry": "false"}
            self._send_json(reply.status, error_body(reply.status, reply.content or ""), headers)
            return
        content, calls = reply.resolve(request)
        if request.get("stream"):
            self._send_stream(request, content, calls)
        else:
            self._send_json(200, completion(request, content, calls))

    def _send_unknown(self) -> None:
        message = UNKNOWN_PATH_MESSAGE.format(method=self.command, path=self.path)
        self._send_json(404, error_body(404, message))

    def _send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(
        self, request: Mapping[str, Any], content: str | None, calls: tuple[ToolCall, ...]
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()  # HTTP/1.0: the body ends when the connection closes
        for chunk in stream_chunks(request, content, calls):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
