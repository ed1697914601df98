"""`OfflineChatModel`, the deterministic chat model that serves when no model is set, and
`DEFAULT_HANDLERS`, every structured output it produces by schema (compaction, extraction,
the task list's four stages and the delivery's four); a model built with
`structured_handlers={**DEFAULT_HANDLERS, ...}` answers from its own table."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from types import MappingProxyType
from typing import Any

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.tool import tool_call
from langchain_core.output_parsers.openai_tools import PydanticToolsParser
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field, field_validator

from agent.offline import delivery, tasklist
from agent.offline.chat import (
    ends_with_tool_results,
    plain_answer,
    plan_tool_calls,
    tool_call_id,
    tool_results_answer,
)
from agent.offline.compaction import compaction_output
from agent.offline.local import LocalChatModel, ModelCall
from graphs.delivery import DeliveryPlan, DeliveryReport, DeliveryTaskResult, ReviewVerdict
from graphs.tasklist import SelfCheck, TasklistSummary, TasklistTaskResult, TaskPlan
from memory.compaction import CompactionOutput
from memory.longterm import ExtractionOutput

NOT_AN_EXTRACTION_INPUT = (
    "the offline extraction handler needs the JSON document of "
    "memory.longterm.extraction.extraction_prompt as the last user message"
)


def extraction_output(messages: Sequence[BaseMessage]) -> ExtractionOutput:
    """No operations: the offline model judges no meaning, so with it long-term items come from the
    explicit requests `memory.longterm.extraction` reads by code (`model` offline does what
    `explicit` does); `ValueError` for another input."""
    human = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    try:
        document = json.loads(str(human.content)) if human is not None else {}
        if not isinstance(document["turns"], list):
            raise TypeError("turns")
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(NOT_AN_EXTRACTION_INPUT) from exc
    return ExtractionOutput(operations=[])


StructuredHandler = Callable[[Sequence[BaseMessage]], BaseModel]
"""Builds an instance of its schema from the input messages, deterministically."""

DEFAULT_HANDLERS: Mapping[type[BaseModel], StructuredHandler] = MappingProxyType(
    {
        CompactionOutput: compaction_output,
        ExtractionOutput: extraction_output,
        TaskPlan: tasklist.offline_plan,
        TasklistTaskResult: tasklist.offline_result,
        SelfCheck: tasklist.offline_check,
        TasklistSummary: tasklist.offline_summary,
        DeliveryPlan: delivery.offline_plan,
        DeliveryTaskResult: delivery.offline_task_result,
        ReviewVerdict: delivery.offline_verdict,
        DeliveryReport: delivery.offline_report,
    }
)
"""Schema class → handler; read-only, so no code can add to it behind a caller's back."""


OFFLINE_MODEL_NAME = "offline-deterministic"
STRUCTURED_OUTPUT_KWARG = "offline_structured_output"
"""Bound-call keyword naming (by class name) the schema a structured-output call produces."""

STRUCTURED_OUTPUT_METHODS = frozenset({"json_schema", "function_calling", "json_mode"})
NO_STRUCTURED_HANDLER = (
    "OfflineChatModel has no structured-output handler for {schema}; give it one with "
    "OfflineChatModel(structured_handlers={{**agent.offline.DEFAULT_HANDLERS, schema: handler}})."
)
DUPLICATE_SCHEMA_NAMES = (
    "structured_handlers has several schemas named {names}; a schema is called by its "
    "class name, so each name may appear once."
)
UNKNOWN_METHOD = "Unknown structured-output method {method!r}; use one of {methods}."
HANDLER_RESULT_MISMATCH = "The offline handler for {schema} returned a {actual}."


def _bound_tool_names(tools: Sequence[dict[str, Any]] | None, tool_choice: Any) -> set[str]:
    if tool_choice in ("none", False):
        return set()
    names = {tool["function"]["name"] for tool in tools or [] if "function" in tool}
    forced = tool_choice
    if isinstance(forced, dict):
        forced = forced.get("function", {}).get("name")
    if isinstance(forced, str) and forced in names:
        return {forced}
    return names


def _cut_at_stop(text: str, stop: list[str] | None) -> str:
    positions = [text.find(word) for word in stop or [] if word and word in text]
    return text[: min(positions)] if positions else text


class OfflineChatModel(LocalChatModel):
    """A deterministic chat model for machines without a model or a network: it says it is
    offline and shows what the memory context holds; with tools bound it calls them when
    the latest message clearly asks (agent/offline/chat.py); structured output comes from
    the schema's handler in `structured_handlers`. Same input, same output."""

    model_name: str = OFFLINE_MODEL_NAME
    structured_handlers: Mapping[type[BaseModel], StructuredHandler] = Field(
        default_factory=lambda: dict(DEFAULT_HANDLERS), repr=False
    )
    """Schema class → deterministic handler; `DEFAULT_HANDLERS` unless given."""

    @field_validator("structured_handlers")
    @classmethod
    def _distinct_schema_names(
        cls, handlers: Mapping[type[BaseModel], StructuredHandler]
    ) -> Mapping[type[BaseModel], StructuredHandler]:
        # A bound call and the tool call it answers with name the schema by its class name.
        names = [schema.__name__ for schema in handlers]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(DUPLICATE_SCHEMA_NAMES.format(names=", ".join(duplicates)))
        return handlers

    @property
    def _llm_type(self) -> str:
        return OFFLINE_MODEL_NAME

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """The model with `tools` bound in OpenAI tool format; `tool_choice` "none" disables
        calls, a tool's name restricts them to it (still made only when a message asks)."""
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        method: str | None = None,
        include_raw: bool = False,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        """A runnable answering with an instance of `schema`, built by its handler; `method`
        is checked, then answered alike; `include_raw` as other chat models; other options
        ignored. Raises `NotImplementedError` for a schema without a handler."""
        if method is not None and method not in STRUCTURED_OUTPUT_METHODS:
            raise ValueError(
                UNKNOWN_METHOD.format(method=method, methods=sorted(STRUCTURED_OUTPUT_METHODS))
            )
        if not (isinstance(schema, type) and schema in self.structured_handlers):
            name = schema.__qualname__ if isinstance(schema, type) else repr(schema)
            raise NotImplementedError(NO_STRUCTURED_HANDLER.format(schema=name))
        llm = self.bind(**{STRUCTURED_OUTPUT_KWARG: schema.__name__})
        parser = PydanticToolsParser(tools=[schema], first_tool_only=True)
        if not include_raw:
            return llm | parser
        parsed = RunnablePassthrough.assign(
            parsed=itemgetter("raw") | parser, parsing_error=lambda _: None
        )
        unparsed = RunnablePassthrough.assign(parsed=lambda _: None)
        with_fallback = parsed.with_fallbacks([unparsed], exception_key="parsing_error")
        return RunnableMap(raw=llm) | with_fallback

    def _handled_schema(self, name: str) -> type[BaseModel]:
        for schema in self.structured_handlers:
            if schema.__name__ == name:
                return schema
        raise NotImplementedError(NO_STRUCTURED_HANDLER.format(schema=name))

    def respond(self, call: ModelCall) -> AIMessage:
        """The deterministic answer: a structured output, tool calls, or a plain text."""
        messages, kwargs = call.messages, call.options
        meta = {"model_name": self.model_name}
        structured = kwargs.get(STRUCTURED_OUTPUT_KWARG)
        if structured:
            schema = self._handled_schema(structured)
            result = self.structured_handlers[schema](messages)
            if not isinstance(result, schema):
                raise TypeError(
                    HANDLER_RESULT_MISMATCH.format(schema=structured, actual=type(result).__name__)
                )
            args = result.model_dump(mode="json")
            call_id = tool_call_id(schema.__name__, args, structured, 0)
            answer = tool_call(name=schema.__name__, args=args, id=call_id)
            return AIMessage(content="", tool_calls=[answer], response_metadata=meta)
        if ends_with_tool_results(messages):
            text = tool_results_answer(messages)
        else:
            names = _bound_tool_names(kwargs.get("tools"), kwargs.get("tool_choice"))
            calls = plan_tool_calls(messages, names) if names else []
            if calls:
                return AIMessage(content="", tool_calls=calls, response_metadata=meta)
            text = plain_answer(messages)
        return AIMessage(content=_cut_at_stop(text, call.stop), response_metadata=meta)
