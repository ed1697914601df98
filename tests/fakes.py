"""Scripted models and clocks for tests: they record what they were sent."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import Field, PrivateAttr

Reply = AIMessage | str | Exception | Callable[[list[BaseMessage]], Any]


def _resolve(item: Any, messages: list[BaseMessage]) -> Any:
    if isinstance(item, Exception):
        raise item
    if callable(item) and not isinstance(item, type):
        return item(messages)
    return item


class ScriptedModel(BaseChatModel):
    """A chat model that plays a script and records every request.

    `replies` answer plain (or tool-bound) calls in order; `structured` answers
    `with_structured_output` calls in order. Each item may be a value, an exception
    to raise, or a callable taking the messages. When a queue is empty the model
    raises, so a test that forgot to script fails loudly.
    """

    replies: list[Any] = Field(default_factory=list)
    structured: list[Any] = Field(default_factory=list)
    calls: list[list[BaseMessage]] = Field(default_factory=list)
    structured_calls: list[dict[str, Any]] = Field(default_factory=list)
    bound_tools: list[Any] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            self.calls.append(list(messages))
            if not self.replies:
                raise RuntimeError("ScriptedModel: no scripted reply left")
            item = self.replies.pop(0)
        reply = _resolve(item, list(messages))
        # a copy: LangChain stamps run ids onto the returned message
        message = AIMessage(content=reply) if isinstance(reply, str) else reply.model_copy()
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        self.bound_tools = list(tools)
        return self

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


class PacedModel(BaseChatModel):
    """A deterministic model that streams its answer word by word, pausing between words.

    It answers `"answer to: <last user text>"`. Messages that
    contain `slow` pause `slow_pause` seconds per word (else `pause`), so a test can
    hold a turn open. It never calls tools and answers compaction with a fixed summary.
    """

    pause: float = 0.0
    slow_pause: float = 0.25

    @property
    def _llm_type(self) -> str:
        return "paced"

    def _answer(self, messages: list[BaseMessage]) -> tuple[list[str], float]:
        last = messages[-1].text if messages else ""
        pieces = f"answer to: {last}".split()
        return [piece + " " for piece in pieces], self.slow_pause if "slow" in last else self.pause

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        pieces, pause = self._answer(messages)
        time.sleep(pause * len(pieces))
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content="".join(pieces).strip()))]
        )

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        pieces, pause = self._answer(messages)
        for index, piece in enumerate(pieces):
            await asyncio.sleep(pause)
            text = piece if index < len(pieces) - 1 else piece.rstrip()
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
            if run_manager is not None:
                await run_manager.on_llm_new_token(text, chunk=chunk)
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        text = ""
        async for chunk in self._astream(messages, stop, run_manager, **kwargs):
            text += chunk.message.text
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self

    def with_structured_output(self, schema: Any, **kwargs: Any) -> Runnable[Any, Any]:
        from memory import CompactionOutput

        return RunnableLambda(
            lambda _: CompactionOutput(
                summary="paced summary", pinned_decisions=[], retired_pins=[]
            )
        )
