"""The OpenAI wire format the stub server speaks: tool calls, completions, streamed
chunks, error bodies, and deterministic embeddings (`tests/openai_stub.py`)."""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MODELS = ("gpt-4o-mini", "gpt-4o", "stub-model")
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")


@dataclass(frozen=True)
class ToolCall:
    """One scripted function call; `arguments` is the JSON string sent on the wire."""

    name: str
    arguments: str
    id: str

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> ToolCall:
        """Build from `{"name": ..., "arguments": dict | str, "id"?: ...}`."""
        if not isinstance(spec.get("name"), str) or not spec["name"]:
            raise ValueError(f"tool call spec needs a non-empty 'name': {spec!r}")
        arguments = spec.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        return cls(name=spec["name"], arguments=arguments, id=spec.get("id") or new_id("call_"))

    def to_wire(self) -> dict[str, Any]:
        function = {"name": self.name, "arguments": self.arguments}
        return {"id": self.id, "type": "function", "function": function}


EMBEDDING_DIMS = 256
STOP_WORDS = frozenset(
    [
        "the",
        "and",
        "any",
        "for",
        "you",
        "are",
        "was",
        "what",
        "who",
        "how",
        "this",
        "that",
        "with",
        "from",
    ]
)
TOKEN = re.compile(r"\w+")


def embed_text(text: str) -> list[float]:
    """A deterministic bag-of-words embedding: each word (lower-cased, at least three
    letters, not a stop word, a trailing `s` dropped) adds to one of `EMBEDDING_DIMS`
    buckets."""
    vector = [0.0] * EMBEDDING_DIMS
    for word in TOKEN.findall(text.casefold()):
        if len(word) >= 3 and word not in STOP_WORDS:
            word = word.removesuffix("s")
            digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
            vector[int.from_bytes(digest, "big") % EMBEDDING_DIMS] += 1
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


def embeddings_body(request: Mapping[str, Any]) -> dict[str, Any]:
    raw = request.get("input")
    texts = [raw] if isinstance(raw, str) else list(raw or [])
    data = [
        {"object": "embedding", "index": n, "embedding": embed_text(str(text))}
        for n, text in enumerate(texts)
    ]
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", "stub"),
        "usage": {"prompt_tokens": 0, "total_tokens": 0},
    }


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def forced_function(request: Mapping[str, Any]) -> str | None:
    choice = request.get("tool_choice")
    if isinstance(choice, Mapping):
        name = (choice.get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    tools = request.get("tools") or []
    if choice == "required" and len(tools) == 1:
        name = (tools[0].get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    return None


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def usage(
    request: Mapping[str, Any], content: str | None, calls: Sequence[ToolCall]
) -> dict[str, int]:
    # Rough, deterministic counts (~4 characters per token) so usage is never zero.
    prompt = max(1, len(json.dumps(request.get("messages", []))) // 4)
    completion = max(1, (len(content or "") + sum(len(c.arguments) for c in calls)) // 4)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def envelope(request: Mapping[str, Any], object_: str, completion_id: str) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": object_,
        "created": int(time.time()),
        "model": request.get("model") or MODELS[0],
        "system_fingerprint": "fp_openai_stub",
    }


def completion(
    request: Mapping[str, Any], content: str | None, calls: tuple[ToolCall, ...]
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [call.to_wire() for call in calls]
    finish_reason = "tool_calls" if calls else "stop"
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
    body = envelope(request, "chat.completion", new_id("chatcmpl-"))
    return {**body, "choices": [choice], "usage": usage(request, content, calls)}


def stream_chunks(
    request: Mapping[str, Any], content: str | None, calls: tuple[ToolCall, ...]
) -> Iterator[dict[str, Any]]:
    """Chunks as OpenAI sends them: role, content deltas, tool-call deltas, finish, usage."""
    with_usage = bool((request.get("stream_options") or {}).get("include_usage"))
    completion_id = new_id("chatcmpl-")

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        body = envelope(request, "chat.completion.chunk", completion_id)
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**body, "choices": [choice], **({"usage": None} if with_usage else {})}

    yield chunk({"role": "assistant", "content": "", "refusal": None})
    for piece in split_words(content or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(calls):
        head = {**call.to_wire(), "index": index}
        head["function"] = {"name": call.name, "arguments": ""}
        yield chunk({"tool_calls": [head]})
        for piece in split_words(call.arguments):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if with_usage:
        body = envelope(request, "chat.completion.chunk", completion_id)
        yield {**body, "choices": [], "usage": usage(request, content, calls)}


def split_words(text: str) -> list[str]:
    """Word-sized pieces whose concatenation is exactly `text`."""
    return [piece for piece in WORD_BOUNDARY.split(text) if piece]
