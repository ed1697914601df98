"""`LocalChatModel`: the base of every chat model answered in-process, offline or scripted.

A subclass says what to answer (`respond`); this base serves it every way LangChain asks
(invoke, stream, sync, async), in pieces, paced when asked, recorded when `record` is set,
so neither the offline model nor a test's or benchmark's scripted one repeats `_generate`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolCallChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field


@dataclass(frozen=True)
class ModelCall:
    """One call as the model received it."""

    messages: list[BaseMessage]
    """The context: every message the model was sent."""
    stop: list[str] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """The call's bound options (`tools`, `tool_choice`, a structured-output schema…)."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """The run's metadata (LangChain's middleware marks its own calls here)."""


def text_pieces(text: str) -> list[str]:
    """`text` split where whitespace ends, so the pieces concatenate back to it exactly."""
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece] or [text]


def message_chunks(message: AIMessage) -> list[AIMessageChunk]:
    """`message` as a provider would stream it: text piece by piece, or one chunk that
    carries every tool call with JSON arguments; the last chunk carries the metadata."""
    calls = [
        ToolCallChunk(
            name=call["name"],
            args=json.dumps(call["args"], ensure_ascii=False),
            id=call["id"],
            index=index,
            type="tool_call_chunk",
        )
        for index, call in enumerate(message.tool_calls)
    ]
    pieces: list[Any] = [message.content] if calls else text_pieces(message.text)
    ending: dict[str, Any] = {
        "tool_call_chunks": calls,
        "response_metadata": message.response_metadata,
        "usage_metadata": message.usage_metadata,
        "chunk_position": "last",
    }
    return [
        AIMessageChunk(
            content=piece,
            id=message.id,
            additional_kwargs=message.additional_kwargs if index == 0 else {},
            **(ending if index == len(pieces) - 1 else {}),
        )
        for index, piece in enumerate(pieces)
    ]


def _wait(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)


async def _await(seconds: float) -> None:
    # no pause, no yield to the loop: an unpaced model answers as pure computation does
    if seconds > 0:
        await asyncio.sleep(seconds)


class LocalChatModel(BaseChatModel):
    """A chat model answered in-process by `respond`; streamed, paced and recorded here."""

    record: bool = False
    """Keep every call in `received` (tests assert on what the model was sent)."""
    received: list[ModelCall] = Field(default_factory=list, repr=False, exclude=True)
    """The calls received so far, when `record` is set."""

    @property
    def calls(self) -> list[list[BaseMessage]]:
        """The messages of every call received so far (when `record` is set)."""
        return [call.messages for call in self.received]

    def respond(self, call: ModelCall) -> AIMessage:
        """The answer to `call`; every subclass says it."""
        raise NotImplementedError(f"{type(self).__name__} must say how it responds")

    async def arespond(self, call: ModelCall) -> AIMessage:
        """The answer to an async call: `respond`, inline (it is pure computation)."""
        return self.respond(call)

    def delay(self, call: ModelCall) -> float:
        """Seconds before `call` is answered (a remote model's latency); none here."""
        return 0.0

    def pause(self, call: ModelCall) -> float:
        """Seconds before each streamed piece of the answer to `call`; none here."""
        return 0.0

    def _streaming_time(self, call: ModelCall, message: AIMessage) -> float:
        """How long streaming `message` would take (counted only when the model pauses)."""
        pause = self.pause(call)
        return pause * len(message_chunks(message)) if pause > 0 else 0.0

    def _receive(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None,
        options: dict[str, Any],
    ) -> ModelCall:
        metadata = dict(run_manager.metadata) if run_manager else {}
        call = ModelCall(list(messages), stop, options, metadata)
        if self.record:
            self.received.append(call)
        return call

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = self._receive(messages, stop, run_manager, kwargs)
        _wait(self.delay(call))
        message = self.respond(call)
        _wait(self._streaming_time(call, message))
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # answered inline: the default would hop to a worker thread for pure computation
        call = self._receive(messages, stop, run_manager, kwargs)
        await _await(self.delay(call))
        message = await self.arespond(call)
        await _await(self._streaming_time(call, message))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        call = self._receive(messages, stop, run_manager, kwargs)
        _wait(self.delay(call))
        pause = self.pause(call)
        for piece in message_chunks(self.respond(call)):
            _wait(pause)
            chunk = ChatGenerationChunk(message=piece)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        call = self._receive(messages, stop, run_manager, kwargs)
        await _await(self.delay(call))
        pause = self.pause(call)
        for piece in message_chunks(await self.arespond(call)):
            await _await(pause)
            chunk = ChatGenerationChunk(message=piece)
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk
