"""A zero-latency scripted chat model for benchmarks: instant replies, counted calls.

One model serves every role an agent gives it, so the three agents of
`bench.agent_bench` pay exactly the same model cost:
- a chat call gets a ~400-character answer (tool binding is accepted, tools are never
  called);
- a `SummarizationMiddleware` summary call (a plain call tagged
  `lc_source=summarization`) gets a ~2,000-character summary;
- a `with_structured_output(CompactionOutput)` call gets a ~2,000-character summary and
  one new pinned decision, quoting the first folded user message (`folded_pin`), so the
  compaction checks keep it;
- a `with_structured_output(ExtractionOutput)` call (long-term extraction) gets an
  empty extraction, and is counted apart.

It records the number of calls of each kind and the size of the last chat input (the
context the model saw), which is what the benchmark reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from pydantic import BaseModel, PrivateAttr

from agent.offline.local import LocalChatModel, ModelCall
from memory import CompactionOutput
from memory.compaction import QuotedItem
from memory.limits import MAX_PINNED_DECISION_CHARS
from memory.longterm import ExtractionOutput
from memory.text import clamp

REPLY_CHARS = 400
SUMMARY_CHARS = 2000
SUMMARIZATION_SOURCE = "summarization"
"""`lc_source` metadata that `SummarizationMiddleware` puts on its summary calls."""

_REPLY_TEXT = (
    "Here is the refined section, with the trade-offs and the open questions spelled out. "
)
_SUMMARY_TEXT = (
    "The user and the assistant are refining a project plan section by section; "
    "each turn revises one section and records the trade-offs that were agreed. "
)


def folded_pin(prompt: LanguageModelInput) -> list[QuotedItem]:
    """A pin that quotes the first user message the compaction input folds (none when
    it folds none)."""
    messages = prompt if isinstance(prompt, list) else []
    document = json.loads(str(messages[-1].content)) if messages else {}
    said = [m["text"] for m in document.get("messages_to_fold", []) if m["role"] == "user"]
    return [QuotedItem(text=clamp(said[0], MAX_PINNED_DECISION_CHARS), quote=said[0])][: len(said)]


def _fill(text: str, chars: int, prefix: str = "") -> str:
    """`prefix` followed by `text` repeated, cut to exactly `chars` characters."""
    body = prefix + text * (chars // len(text) + 1)
    return body[:chars]


@dataclass
class CallLog:
    """What the scripted model was asked.

    Attributes:
        chat_calls: plain calls answered with a reply.
        summary_calls: plain calls from `SummarizationMiddleware` (answered with a summary).
        structured_calls: `with_structured_output` calls of our compaction.
        extraction_calls: `with_structured_output` calls of long-term extraction.
        last_chat_input_chars: characters of text in the last chat call's messages.
        last_chat_input_messages: number of messages in the last chat call.
    """

    chat_calls: int = 0
    summary_calls: int = 0
    structured_calls: int = 0
    extraction_calls: int = 0
    last_chat_input_chars: int = 0
    last_chat_input_messages: int = 0

    @property
    def compaction_calls(self) -> int:
        """Model calls spent on keeping the context small (summaries and compactions)."""
        return self.summary_calls + self.structured_calls


def input_chars(messages: Sequence[BaseMessage]) -> int:
    """Total characters of text in `messages` (what the model reads)."""
    return sum(len(message.text) for message in messages)


class ScriptedChatModel(LocalChatModel):
    """Answers instantly and deterministically; see the module docstring for the roles."""

    reply_chars: int = REPLY_CHARS
    summary_chars: int = SUMMARY_CHARS
    disable_streaming: bool = True
    """One answer per call, never streamed: every agent then pays the same model cost,
    whether it streams its turns or not."""
    _log: CallLog = PrivateAttr(default_factory=CallLog)

    @property
    def _llm_type(self) -> str:
        return "bench-scripted"

    @property
    def log(self) -> CallLog:
        """The calls recorded so far."""
        return self._log

    def respond(self, call: ModelCall) -> AIMessage:
        log = self._log
        if call.metadata.get("lc_source") == SUMMARIZATION_SOURCE:
            log.summary_calls += 1
            text = _fill(_SUMMARY_TEXT, self.summary_chars, f"Summary {log.summary_calls:04d}: ")
        else:
            log.chat_calls += 1
            log.last_chat_input_chars = input_chars(call.messages)
            log.last_chat_input_messages = len(call.messages)
            text = _fill(_REPLY_TEXT, self.reply_chars, f"Answer {log.chat_calls:04d}: ")
        return AIMessage(content=text)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept the tools and never call them."""
        return self

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """Answer `CompactionOutput` with a near-limit summary and one new pin, and
        `ExtractionOutput` with nothing to keep.

        Raises:
            TypeError: for any other schema (the benchmarks ask for nothing else).
        """
        log = self._log
        if schema is ExtractionOutput:

            def extract(_prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
                log.extraction_calls += 1
                return ExtractionOutput(operations=[])

            return RunnableLambda(extract, name="scripted_extraction")
        if schema is not CompactionOutput:
            raise TypeError(f"ScriptedChatModel cannot answer {schema!r}")

        def answer(prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
            log.structured_calls += 1
            # no call number in the summary: a count that changes is a value it would lose
            return CompactionOutput(
                summary=_fill(_SUMMARY_TEXT, self.summary_chars, "Summary: "),
                pinned_decisions=folded_pin(prompt),
                retired_pins=[],
            )

        async def aanswer(prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
            return answer(prompt)

        return RunnableLambda(answer, afunc=aanswer, name="scripted_compaction")
