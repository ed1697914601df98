"""Tool calls a weak model wrote into its answer (a JSON object, fenced or bare, as
`{"name", "arguments"}` or `{"tool", "parameters"}`, or `<tool_call>{…}</tool_call>`): never
an answer; where the model may call that tool it becomes the call, elsewhere the answer
says the tool could not be used.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Collection
from typing import Any

from langchain_core.messages import AIMessage
from langchain_core.messages.tool import ToolCall

from graphs.prompts import TOOL_NOT_SERVED

_DECODER = json.JSONDecoder()
_TAGGED = re.compile(r"<tool_call>|</tool_call>|<\|?tool_call\|?>", re.IGNORECASE)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")


def _call(found: Any, known: Collection[str]) -> ToolCall | None:
    """`found` as a call of a known tool, or None."""
    if not isinstance(found, dict):
        return None
    if isinstance(found.get("function"), dict):  # OpenAI's own shape, as text
        found = found["function"]
    name = next((found[k] for k in _NAME_KEYS if isinstance(found.get(k), str)), None)
    args: Any = next((found[k] for k in _ARGUMENT_KEYS if k in found), {})
    if isinstance(args, str):  # OpenAI sends arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if name is None or name not in known or not isinstance(args, dict):
        return None
    return ToolCall(name=name, args=args, id=f"text-{uuid.uuid4().hex[:12]}", type="tool_call")


def written_calls(text: str, known: Collection[str]) -> list[ToolCall]:
    """The calls of known tools written in `text`: every JSON object in it (fenced,
    tagged or bare) that names one with its arguments."""
    calls = []
    start = text.find("{")
    while start != -1:
        try:
            found, end = _DECODER.raw_decode(text, start)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        call = _call(found, known)
        if call is not None:
            calls.append(call)
        start = text.find("{", end)
    return calls


def checked_reply(
    reply: AIMessage, known: Collection[str], *, may_call: bool
) -> tuple[AIMessage, bool]:
    """`reply` with a tool call written as text made a real one (when the model `may_call`
    the tool), or replaced by an answer that says the tool could not be used; and
    whether the turn is degraded. A reply with real calls, or with no written call, is
    returned as it is."""
    text = reply.text
    if reply.tool_calls or "{" not in text:
        return reply, False
    calls = written_calls(text, known)
    if calls and may_call:
        return AIMessage(content="", tool_calls=calls, id=reply.id), False
    if calls or _TAGGED.search(text):
        return AIMessage(content=TOOL_NOT_SERVED, id=reply.id), True
    return reply, False
