"""Scripted models and clocks for tests: the models record what they were sent.

They are `LocalChatModel`s, like the offline model: each says only what it answers
(`respond`), and the base serves, streams, paces and records it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import Field, PrivateAttr

from agent.offline.local import LocalChatModel, ModelCall

Reply = AIMessage | str | Exception | Callable[[list[BaseMessage]], Any]


def _resolve(item: Any, messages: list[BaseMessage]) -> Any:
    if isinstance(item, Exception):
        raise item
    if callable(item) and not isinstance(item, type):
        return item(messages)
    return item


class ScriptedModel(LocalChatModel):
    """A chat model that plays a script and records every request.

    `replies` answer plain (or tool-bound) calls in order, recorded in `calls`;
    `structured` answers `with_structured_output` calls in order, recorded in
    `structured_calls`. Each item may be a value, an exception to raise, or a callable
    taking the messages. When a queue is empty the model raises, so a test that forgot
    to script fails loudly.
    """

    record: bool = True
    replies: list[Any] = Field(default_factory=list)
    structured: list[Any] = Field(default_factory=list)
    structured_calls: list[dict[str, Any]] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def respond(self, call: ModelCall) -> AIMessage:
        with self._lock:
            if not self.replies:
                raise RuntimeError("ScriptedModel: no scripted reply left")
            item = self.replies.pop(0)
        reply = _resolve(item, list(call.messages))
        # a copy: LangChain stamps run ids onto the returned message
        return AIMessage(content=reply) if isinstance(reply, str) else reply.model_copy()

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        # a binding, as a provider's: each call records the tools it was offered
        return self.bind(tools=[getattr(tool, "name", tool) for tool in tools])

    @property
    def bound_tools(self) -> list[str]:
        """The names of the tools the last call was offered."""
        return list(self.received[-1].options.get("tools", [])) if self.received else []

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        def answer(messages: Any) -> Any:
            prompt = list(messages.to_messages() if hasattr(messages, "to_messages") else messages)
            with self._lock:
                self.structured_calls.append({"schema": schema, "messages": prompt, **kwargs})
                if not self.structured:
                    raise RuntimeError("ScriptedModel: no scripted structured output left")
                item = self.structured.pop(0)
            return _resolve(item, prompt)

        return RunnableLambda(answer)


class StepClock:
    """A clock that advances by `step` on every call (timezone-aware UTC)."""

    def __init__(self, start: datetime | None = None, step: timedelta = timedelta(seconds=1)):
        self.now = start or datetime(2026, 1, 1, tzinfo=UTC)
        self.step = step
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            self.now += self.step
            return self.now


class PacedModel(LocalChatModel):
    """A deterministic model that streams its answer word by word, pausing between words.

    It answers `"answer to: <last user text>"`. Messages that
    contain `slow` pause `slow_pause` seconds per word (else `word_pause`), so a test can
    hold a turn open. It never calls tools and answers compaction with a fixed summary.
    """

    word_pause: float = 0.0
    slow_pause: float = 0.25

    @property
    def _llm_type(self) -> str:
        return "paced"

    def respond(self, call: ModelCall) -> AIMessage:
        last = call.messages[-1].text if call.messages else ""
        return AIMessage(content=" ".join(f"answer to: {last}".split()))

    def pause(self, call: ModelCall) -> float:
        last = call.messages[-1].text if call.messages else ""
        return self.slow_pause if "slow" in last else self.word_pause

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        from memory import CompactionOutput

        return RunnableLambda(
            lambda _: CompactionOutput(
                summary="paced summary", pinned_decisions=[], retired_pins=[]
            )
        )


class HangingModel(ScriptedModel):
    """`ScriptedModel` that hangs for `hang_s` seconds before answering a message that
    contains `hang` (a remote model that stopped answering)."""

    hang_s: float = 60.0

    def delay(self, call: ModelCall) -> float:
        last = call.messages[-1].text if call.messages else ""
        return self.hang_s if "hang" in last else 0.0
