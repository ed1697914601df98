"""Recording what a model was sent: every request with its tokens in and out, the chat
requests' messages kept (their context is what an evaluation checks), and calls spent on
memory (compaction, extraction, summaries) told apart."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from agent.offline.model import STRUCTURED_OUTPUT_KWARG
from evals.offline_summaries import summary_request
from evals.tokens import count_messages


@dataclass(frozen=True)
class Call:
    """One model call: a chat request (its messages are the context under evaluation)
    or a call spent on memory (compaction, extraction, summaries)."""

    memory: bool
    tokens_in: int
    tokens_out: int = 0


@dataclass
class CallLog:
    """The requests a model answered, in order, with their token counts."""

    chats: list[list[BaseMessage]] = field(default_factory=list)
    records: list[Call] = field(default_factory=list)
    _pending: dict[UUID, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def calls(self) -> int:
        return len(self.records)

    def start(self, run_id: UUID, memory: bool, messages: list[BaseMessage]) -> None:
        with self._lock:
            self._pending[run_id] = len(self.records)
            self.records.append(Call(memory, count_messages(messages)))
            if not memory:
                self.chats.append(list(messages))

    def end(self, run_id: UUID, tokens_out: int) -> None:
        with self._lock:
            index = self._pending.pop(run_id, None)
            if index is not None:
                call = self.records[index]
                self.records[index] = Call(call.memory, call.tokens_in, tokens_out)


class Recorder(BaseCallbackHandler):
    """Records every chat-model request into a `CallLog`: a chat request, or a call
    spent on memory: structured output (compaction, extraction) or a summary of
    `SummarizationMiddleware`. Every call's input and output are counted."""

    def __init__(self, log: CallLog) -> None:
        self.log = log

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        metadata = kwargs.get("metadata") or {}
        memory = (
            STRUCTURED_OUTPUT_KWARG in params
            or "response_format" in params
            or isinstance(params.get("tool_choice"), dict)
            or metadata.get("lc_source") == "summarization"
            or summary_request(messages[0]) is not None
        )
        self.log.start(run_id, memory, messages[0])

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        out = [
            generation.message
            for generations in response.generations
            for generation in generations
            if isinstance(generation, ChatGeneration)
        ]
        self.log.end(run_id, count_messages(out))


def recorded(model: BaseChatModel, log: CallLog) -> BaseChatModel:
    """`model` recording its requests into `log` (the same way for every system)."""
    return model.model_copy(update={"callbacks": [Recorder(log)]})
