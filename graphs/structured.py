"""Structured output that works on any OpenAI-compatible endpoint: the method ladder
(learned per endpoint), tolerant parsing validated on the client, transient-only retries,
calls bounded in time (`graphs.bounded`), and the counts of what went wrong.

Servers differ: llama-cpp-python answers HTTP 500 to a `json_schema` response format,
llama.cpp's `llama-server` accepts it but not a forced tool call. So in `auto` an
endpoint's first call walks `json_schema → function_calling → json_mode` until one is
accepted, kept per base URL and model for the process. Small models wrap their JSON in
fences, `<think>` blocks or prose, and endpoints break promises: the first JSON object
is taken and validated here, or `StructuredOutputError` is raised.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass, field, replace
from functools import cache, partial
from itertools import count
from typing import Any, Literal, TypeVar, cast, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from pydantic import BaseModel, ValidationError

from graphs.bounded import ModelTimeout, bounded_ainvoke, bounded_invoke

Method = Literal["auto", "json_schema", "function_calling", "json_mode"]
METHODS: tuple[str, ...] = get_args(Method)
LADDER: tuple[str, ...] = ("json_schema", "function_calling", "json_mode")
NOT_A_FORMAT_REFUSAL = frozenset({401, 403, 404, 408, 409, 429})
"""Statuses that say nothing about the output format (auth, a missing model, a limit)."""
TRANSIENT_STATUS = frozenset({408, 409, 429})
CUT_OFF = frozenset({"LengthFinishReasonError", "ContentFilterFinishReasonError"})
"""What openai's client raises for an answer it cut at `max_tokens` (or filtered)."""
JSON_MODE_INSTRUCTION = (
    "Answer with one JSON object, and nothing else, that matches this JSON schema:\n{schema}"
)
NOT_VALID = "the model's {schema} did not validate: {problem}"
COUNTS = ("calls", "parse_failures", "fallbacks", "refusals", "retries", "timeouts")

SchemaT = TypeVar("SchemaT", bound=BaseModel)


class StructuredOutputError(ValueError):
    """The model answered, but not with an object of the schema (or it refused)."""


@dataclass(eq=False)
class StructuredStats:
    """What structured calls met, counted (thread-safe), by `COUNTS`: refusals are an
    endpoint's of a format or a model's to answer, fallbacks are moves down the ladder."""

    _counts: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str) -> None:
        with self._lock:
            self._counts[name] += 1

    def snapshot(self) -> dict[str, int]:
        """Every count, zeros included."""
        with self._lock:
            return {name: self._counts[name] for name in COUNTS}


_learned: dict[tuple[str, str], str] = {}
_learned_lock = threading.Lock()


def endpoint_of(model: BaseChatModel) -> tuple[str, str]:
    """(base URL, model name): what a learned method is kept under."""
    base = getattr(model, "openai_api_base", None) or ""
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
    return str(base), str(name)


def learned_method(model: BaseChatModel) -> str | None:
    """The method `auto` learned for `model`'s endpoint in this process, if any."""
    with _learned_lock:
        return _learned.get(endpoint_of(model))


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(getattr(error, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def format_refused(error: BaseException) -> bool:
    """Whether an endpoint's error may be its refusal of the request's output format."""
    status = _status(error)
    return status is not None and 400 <= status < 600 and status not in NOT_A_FORMAT_REFUSAL


def transient(error: BaseException) -> bool:
    """Whether trying the same request again may succeed: a lost connection, a rate
    limit, a server error. A timeout is not: the same model is as slow again."""
    if isinstance(error, TimeoutError) or type(error).__name__ == "APITimeoutError":
        return False
    status = _status(error)
    if status is None:
        return isinstance(error, ConnectionError) or type(error).__name__ == "APIConnectionError"
    return status in TRANSIENT_STATUS or status >= 500


_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)


def first_json_object(text: str) -> Any:
    """The first JSON object in a model's text: past any `<think>` block, inside a code
    fence if there is one, after any prose (`ValueError` when there is none)."""
    text = _THINK.sub("", text)
    candidates = [found.group(1) for found in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for start in (n for n, char in enumerate(candidate) if char == "{"):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise ValueError("no JSON object in the answer")


def _message_value(raw: AIMessage) -> Any:
    """The JSON value an answer carries: its first tool call's arguments, else its text."""
    if raw.tool_calls:
        return raw.tool_calls[0]["args"]
    for bad in raw.invalid_tool_calls:
        if bad.get("args"):
            return first_json_object(str(bad["args"]))
    return first_json_object(raw.text)


@dataclass(frozen=True)
class StructuredPolicy:
    """How structured calls are made on an agent's models: `method` is `auto` (the
    ladder), one method fixed, or None, the model's own `with_structured_output` (a
    model that speaks no OpenAI dialect); `timeout` bounds each call in seconds."""

    method: Method | None = None
    timeout: float | None = None
    stats: StructuredStats = field(default_factory=StructuredStats)

    def bind(
        self, model: BaseChatModel, schema: type[SchemaT], *, max_tokens: int
    ) -> StructuredCall[SchemaT]:
        """`model` answering with `schema`'s objects, at most `max_tokens` per answer."""
        policy = self if hasattr(model, "openai_api_base") else replace(self, method=None)
        return StructuredCall(model, schema, max_tokens=max_tokens, policy=policy)


def token_limit(base_url: str | None, max_tokens: int) -> dict[str, Any]:
    """A request's bound on its answer. `ChatOpenAI` sends `max_completion_tokens`, which
    servers other than OpenAI's may ignore (and run on for thousands of tokens): they are
    also sent the older `max_tokens`, which every OpenAI-compatible server reads."""
    limit: dict[str, Any] = {"max_tokens": max_tokens}
    if base_url and "api.openai.com" not in base_url:
        limit["extra_body"] = {"max_tokens": max_tokens}
    return limit


def as_policy(structured: StructuredPolicy | str | None) -> StructuredPolicy:
    """A policy, or one from a method's name (None: the model's own; unknown: `ValueError`)."""
    if isinstance(structured, StructuredPolicy):
        return structured
    if structured is not None and structured not in METHODS:
        raise ValueError(f"unknown structured-output method {structured!r}")
    return StructuredPolicy(cast(Method | None, structured))


def _without_client_retries(model: BaseChatModel) -> tuple[BaseChatModel, int]:
    """A copy of `model` whose client never retries, and how often it would have: the
    ladder moves on at a format refusal before any retry, and retries only what is
    transient itself."""
    retries = getattr(model, "max_retries", None)
    root = getattr(model, "root_client", None)
    root_async = getattr(model, "root_async_client", None)
    if not isinstance(retries, int) or retries <= 0 or root is None or root_async is None:
        return model, 0
    root, root_async = root.with_options(max_retries=0), root_async.with_options(max_retries=0)
    update = {
        "max_retries": 0,
        "root_client": root,
        "client": root.chat.completions,
        "root_async_client": root_async,
        "async_client": root_async.chat.completions,
    }
    return model.model_copy(update=update), retries


Request = tuple[Runnable[Any, Any], list[BaseMessage]]


def _unbound(model: BaseChatModel) -> tuple[BaseChatModel, Callable[[Runnable[Any, Any]], Any]]:
    """The chat model under a `bind`/`with_config` binding, and a function that puts the
    binding back on a runnable: `bind_tools`, `with_structured_output` and `model_copy`
    reach through a binding to the bare model, and would drop its arguments and config
    (a caller's callbacks, its stop words)."""
    if not isinstance(model, RunnableBinding):
        return model, lambda runnable: runnable
    return model.bound, lambda runnable: runnable.bind(**model.kwargs).with_config(model.config)


class StructuredCall(Runnable[Any, SchemaT]):
    """One schema on one model: each call returns a validated `schema` object, or raises
    `StructuredOutputError` (counted, nothing stored) or `ModelTimeout`."""

    def __init__(
        self,
        model: BaseChatModel,
        schema: type[SchemaT],
        *,
        max_tokens: int,
        policy: StructuredPolicy,
    ) -> None:
        self.schema, self.policy = schema, policy
        self.name = f"structured_{schema.__name__}"
        self.key = endpoint_of(model)
        self._limit = token_limit(self.key[0], max_tokens)
        bare, self._rebind = _unbound(model)
        if policy.method is None:
            self.model, self.retries = model, 0
            self._own = self._rebind(bare.with_structured_output(schema))
        else:
            self.model, self.retries = _without_client_retries(bare)
        self._request = cache(self._build)  # each method's request bound once, when first used

    def _build(self, method: str) -> Runnable[Any, Any]:
        name = self.schema.__name__
        described = {
            "name": name,
            "description": (self.schema.__doc__ or name).strip(),
            "parameters": self.schema.model_json_schema(),
        }
        if method == "function_calling":
            tool = {"type": "function", "function": described}
            return self._rebind(self.model.bind_tools([tool], tool_choice=name, **self._limit))
        if method == "json_schema":
            schema = {"name": name, "schema": described["parameters"], "strict": False}
            response_format: dict[str, Any] = {"type": "json_schema", "json_schema": schema}
        else:
            response_format = {"type": "json_object"}
        return self._rebind(self.model.bind(response_format=response_format, **self._limit))

    def _prompt(self, method: str, messages: list[BaseMessage]) -> list[BaseMessage]:
        """json_mode names no schema on the wire: it goes into the system message (one
        system message: some chat templates refuse a second)."""
        if method != "json_mode":
            return messages
        schema = json.dumps(self.schema.model_json_schema(), ensure_ascii=False)
        instruction = JSON_MODE_INSTRUCTION.format(schema=schema)
        if messages and isinstance(messages[0], SystemMessage):
            head = SystemMessage(content=f"{messages[0].text}\n\n{instruction}")
            return [head, *messages[1:]]
        return [SystemMessage(content=instruction), *messages]

    def _methods(self) -> tuple[tuple[str, ...], bool]:
        """The methods to try, and whether a format refusal moves down the ladder."""
        method = self.policy.method
        if method != "auto":
            return (method or "own",), False
        with _learned_lock:
            learned = _learned.get(self.key)
        return ((learned,), False) if learned else (LADDER, True)

    def _answered(self, method: str) -> None:
        """An endpoint that answered in `method` (even an answer cut off) accepts it."""
        if self.policy.method == "auto":
            with _learned_lock:
                _learned[self.key] = method

    def _invalid(self, problem: str, count: str = "parse_failures") -> StructuredOutputError:
        self.policy.stats.add(count)
        return StructuredOutputError(NOT_VALID.format(schema=self.schema.__name__, problem=problem))

    def _plan(self, messages: list[BaseMessage]) -> Generator[Request, Any, SchemaT]:
        """The calls of one request, as `(runnable, messages)` to its driver (`invoke`,
        `ainvoke`), which sends back each answer or the error the call raised."""
        stats = self.policy.stats
        stats.add("calls")
        methods, probing = self._methods()
        for rung, method in enumerate(methods):
            runnable = self._own if method == "own" else self._request(method)
            prompt = self._prompt(method, messages)
            for attempt in count():
                raw = yield runnable, prompt
                if not isinstance(raw, Exception):
                    self._answered(method)
                    return self._parse(raw)
                if type(raw).__name__ in CUT_OFF:  # an answer, of the wrong form
                    self._answered(method)
                    raise self._invalid("cut off") from raw
                if isinstance(raw, ModelTimeout):
                    stats.add("timeouts")
                if probing and rung + 1 < len(methods) and format_refused(raw):
                    stats.add("refusals")
                    stats.add("fallbacks")
                    break
                if attempt >= self.retries or not transient(raw):
                    raise raw
                stats.add("retries")
        raise AssertionError("unreachable: the last method raises or returns")

    def _parse(self, raw: Any) -> SchemaT:
        """`raw` as a `schema` object, validated here whatever the endpoint promised."""
        if isinstance(raw, AIMessage) and raw.additional_kwargs.get("refusal"):
            raise self._invalid("refused", "refusals")
        try:
            if isinstance(raw, self.schema):
                return raw
            value = _message_value(raw) if isinstance(raw, AIMessage) else raw
            return self.schema.model_validate(
                first_json_object(value) if isinstance(value, str) else value
            )
        except ValidationError as exc:  # its text would hold the model's words
            raise self._invalid(f"{exc.error_count()} errors") from exc
        except ValueError as exc:
            raise self._invalid(str(exc)) from exc

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> SchemaT:
        plan = self._plan(_messages(input))
        try:
            runnable, prompt = next(plan)
            while True:
                call = partial(runnable.invoke, prompt, config)
                try:
                    raw = bounded_invoke(call, self.policy.timeout)
                except Exception as exc:
                    raw = exc
                runnable, prompt = plan.send(raw)
        except StopIteration as stop:
            return stop.value

    async def ainvoke(
        self, input: Any, config: RunnableConfig | None = None, **kwargs: Any
    ) -> SchemaT:
        plan = self._plan(_messages(input))
        try:
            runnable, prompt = next(plan)
            while True:
                call = partial(runnable.ainvoke, prompt, config)
                try:
                    raw = await bounded_ainvoke(call, self.policy.timeout)
                except Exception as exc:
                    raw = exc
                runnable, prompt = plan.send(raw)
        except StopIteration as stop:
            return stop.value


def _messages(input: Any) -> list[BaseMessage]:
    if hasattr(input, "to_messages"):
        return list(input.to_messages())
    if isinstance(input, str):
        return [HumanMessage(content=input)]
    return list(input)
