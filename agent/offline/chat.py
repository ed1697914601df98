"""The offline model's chat: which built-in tool a request asks for, and how it answers."""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from typing import Any, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call

from agent.search_tool import IN_VIEW
from agent.tools import ToolInputError, normalise_expression, resolve_timezone
from memory.context import LONG_TERM_BLOCK_ID, PINNED_BLOCK_ID, RECALL_BLOCK_ID, SUMMARY_BLOCK_ID
from memory.prompts import LONG_TERM_BLOCK, PINNED_BLOCK, RECALL_BLOCK, SUMMARY_BLOCK
from memory.text import clamp

CALCULATOR = "calculator"
CURRENT_TIME = "current_time"
SEARCH_CONVERSATIONS = "search_conversations"
MAX_CALCULATIONS = 3
"""At most this many calculator calls are proposed for one message."""

OFFLINE_PREFIX = "[offline model]"
OFFLINE_NOTICE = (
    f"{OFFLINE_PREFIX} No model is configured (set OPENAI_BASE_URL, or AGENT_MODEL=local), "
    "so this offline stand-in does not answer: it shows what memory gives a model here."
)
"""The first answer of a conversation says what the offline model is, once."""
MEMORY_HEAD = f"{OFFLINE_PREFIX} What memory gives me here:"
"""Every later plain answer opens with this line instead."""
NO_INPUT_LINE = "There is no new user message to answer."
LONG_TERM_LINE = "What I remember about you:\n{items}"
EARLIER_LINE = "I was reminded of {count} line(s) from our earlier conversations ({dates})."
PINS_LINE = "Pinned decisions I keep to:\n{pins}"
SUMMARY_LINE = "Summary of our earlier conversation: {summary}"
HISTORY_LINE = 'I can see {count} earlier message(s); your previous message was: "{previous}"'
HISTORY_NO_USER_LINE = "I can see {count} earlier message(s) of this conversation."
NO_HISTORY_LINE = "I see no earlier messages in this conversation."

CALCULATION_ANSWER = "{expression} = {result}."
TIME_ANSWER = "The current time in {timezone} is {result}."
TOOL_ERROR_ANSWER = "The {name} tool reported an error: {error}"
TOOL_RESULT_ANSWER = "The {name} tool returned: {result}"
SEARCH_ANSWER = "In our earlier conversations I found:\n{result}"
IN_VIEW_ANSWER = "That is still among this conversation's recent messages:\n{result}"
FOUND_LINE = "- {date} · {title} · {speaker}: {text}"
SPEAKERS = {"user": "you", "assistant": "me", "summary": "summary"}

PARAGRAPH = "\n\n"
"""Between the parts of an answer: in Markdown a line right after a list continues the
list's last item, so each part (a list among them) is a paragraph of its own."""

SUMMARY_CHARS = 300
PREVIOUS_CHARS = 120
TOOL_RESULT_CHARS = 300

_EXPR = r"[-+(]*\s*\.?\d[\d\s.+\-*/%^()×÷xX]*"
_ARITHMETIC_TRIGGERED = re.compile(
    r"(?:\bwhat\s+is|\bwhat[’']?s|\bhow\s+much\s+is|\bcalculate|\bcalc|\bcompute|\bevaluate"
    rf"|\bsolve|计算|算一下|算算|请算)\s*[:：]?\s*(?P<expr>{_EXPR})",
    re.IGNORECASE,
)
_ARITHMETIC_EQUALS = re.compile(rf"(?P<expr>{_EXPR})(?:=|＝|等于|是多少)")
_BINARY_OPERATION = re.compile(r"[\d.)]\s*(?:\*\*|//|[-+*/%^×÷xX])\s*[-+(]*\s*[\d.(]")
_DATE_LIKE = re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}")
_TRAILING_JUNK = " \t\n+-*/%^×÷xX.("

_TIME_REQUEST = re.compile(
    r"\bwhat\s+time\s+is\s+it\b|\bwhat\s+time\s+now\b|\bwhat[’']?s\s+the\s+time\b"
    r"|\bwhat\s+is\s+the\s+time\b|\btime\s+is\s+it\b|\bthe\s+time\s+now\b"
    r"|\bcurrent\s+(?:time|date)\b|\btoday[’']?s\s+date\b|\bdate\s+today\b"
    r"|\bwhat(?:\s+is|[’']?s)\s+(?:the\s+)?date(?:\s+today)?\s*[?.!]*\s*$"
    r"|\bwhat\s+day\s+is\s+(?:it|today)\b"
    r"|几点|现在时间|当前时间|现在的时间|今天几号|今天是几号|几月几号|星期几|今天日期|今天的日期",
    re.IGNORECASE | re.MULTILINE,
)
_ASKS_ABOUT_THE_PAST = re.compile(
    r"\bwhat\s+did\s+(?:i|we)\s+(?:say|tell\s+you|talk|mention|discuss)"
    r"|\bdid\s+(?:i|we)\s+(?:ever\s+)?(?:say|tell\s+you|talk|mention|discuss)"
    r"|\bremind\s+me\s+what\s+(?:i|we)|\bsearch\s+(?:our|my)\s+(?:earlier\s+)?conversations"
    r"|当时我们聊|我们聊过|我们之前聊|我说过|我之前说|我提到过|之前聊过|上次聊|上次说",
    re.IGNORECASE,
)
_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_SEARCH_RECORD = re.compile(
    rf"- (?P<date>\S+) · (?P<title>{_JSON_STRING}) · (?P<role>\w+) · message \S+: "
    rf"(?P<text>{_JSON_STRING})"
)
"""A line of the search tool's result (`agent.search_tool.RESULT_LINE`)."""
_IANA_ZONE = re.compile(r"\b[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z0-9_+-]+)+\b")


def _recalled_lines(body: str) -> list[str]:
    """The recall block's lines as `date role: text`: a `- date · title:` heading
    opens each conversation's day, its lines are indented under it."""
    lines, date = [], ""
    for line in body.splitlines():
        if line.startswith("- "):
            date = line.removeprefix("- ").split(" ", 1)[0]
        elif line.strip():
            lines.append(f"{date} {line.strip()}")
    return lines


@dataclass
class ContextView:
    """What the offline model reads from a context: long-term items (`[kind] text`), lines
    recalled from earlier conversations, pins, the summary, earlier messages (oldest
    first) and the latest user message (None when the list does not end with one)."""

    long_term: list[str] = field(default_factory=list)
    earlier: list[str] = field(default_factory=list)
    pins: list[str] = field(default_factory=list)
    summary: str = ""
    history: list[BaseMessage] = field(default_factory=list)
    latest: str | None = None


def _one_line(text: str, limit: int) -> str:
    return clamp(" ".join(text.split()), limit)


def _found_lines(result: str) -> str:
    """The search tool's records as an answer shows them: the quoted title and text read
    back as the words they are, without the message ids (other lines as they are)."""
    lines = []
    for line in result.splitlines():
        record = _SEARCH_RECORD.fullmatch(line)
        if record is not None:
            line = FOUND_LINE.format(
                date=record["date"],
                title=json.loads(record["title"]),
                speaker=SPEAKERS.get(record["role"], record["role"]),
                text=_one_line(json.loads(record["text"]), TOOL_RESULT_CHARS),
            )
        lines.append(line)
    return "\n".join(lines)


def _template_body(content: str, template: str, placeholder: str) -> str:
    prefix, _, suffix = template.partition("{" + placeholder + "}")
    return content.removeprefix(prefix).removesuffix(suffix).strip()


def read_context(messages: Sequence[BaseMessage]) -> ContextView:
    """A context split into long-term items, pins, summary, earlier messages, latest input."""
    view = ContextView()
    for message in messages:
        if isinstance(message, SystemMessage):
            if message.id == LONG_TERM_BLOCK_ID:
                body = _template_body(message.text, LONG_TERM_BLOCK, "items")
                items = (line.removeprefix("- ").strip() for line in body.splitlines())
                view.long_term = [item for item in items if item]
            elif message.id == RECALL_BLOCK_ID:
                view.earlier = _recalled_lines(_template_body(message.text, RECALL_BLOCK, "lines"))
            elif message.id == PINNED_BLOCK_ID:
                body = _template_body(message.text, PINNED_BLOCK, "pins")
                pins = (re.sub(r"^\d+\.\s*", "", line).strip() for line in body.splitlines())
                view.pins = [pin for pin in pins if pin]
            elif message.id == SUMMARY_BLOCK_ID:
                view.summary = _template_body(message.text, SUMMARY_BLOCK, "summary")
        elif isinstance(message, HumanMessage | AIMessage) and message.text.strip():
            view.history.append(message)
    if messages and isinstance(messages[-1], HumanMessage):
        view.latest = messages[-1].text
        if view.history and view.history[-1] is messages[-1]:
            view.history.pop()
    return view


def plain_answer(messages: Sequence[BaseMessage]) -> str:
    """The offline chat answer: what the context holds, in a few lines (the notice of
    what this model is on a conversation's first answer only; the message it answers is
    never echoed, the previous one is, as what the conversation's memory holds)."""
    view = read_context(messages)
    lines = [MEMORY_HEAD if view.history else OFFLINE_NOTICE]
    if view.latest is None:
        lines.append(NO_INPUT_LINE)
    if view.long_term:
        items = "\n".join(f"- {item}" for item in view.long_term)
        lines.append(LONG_TERM_LINE.format(items=items))
    if view.earlier:
        # counted, not quoted: the answer is archived too, and quoting would carry lines
        # of one conversation into another's archive
        dates = sorted({line.split(" ", 1)[0] for line in view.earlier})
        lines.append(EARLIER_LINE.format(count=len(view.earlier), dates=", ".join(dates)))
    if view.pins:
        numbered = "\n".join(f"{n}. {pin}" for n, pin in enumerate(view.pins, start=1))
        lines.append(PINS_LINE.format(pins=numbered))
    if view.summary:
        lines.append(SUMMARY_LINE.format(summary=_one_line(view.summary, SUMMARY_CHARS)))
    previous = [m for m in view.history if isinstance(m, HumanMessage)]
    if previous:
        quote = _one_line(previous[-1].text, PREVIOUS_CHARS)
        lines.append(HISTORY_LINE.format(count=len(view.history), previous=quote))
    elif view.history:
        lines.append(HISTORY_NO_USER_LINE.format(count=len(view.history)))
    else:
        lines.append(NO_HISTORY_LINE)
    return PARAGRAPH.join(lines)


def _clean_expression(candidate: str) -> str:
    expression = candidate.strip().rstrip(_TRAILING_JUNK).strip()
    # A closing parenthesis without its opening one belongs to the surrounding prose.
    while expression.endswith(")") and expression.count(")") > expression.count("("):
        expression = expression[:-1].rstrip()
    return expression


def _is_arithmetic(expression: str) -> bool:
    if not _BINARY_OPERATION.search(expression) or _DATE_LIKE.search(expression):
        return False
    try:
        ast.parse(normalise_expression(expression), mode="eval")
    except SyntaxError:
        return False
    return True


def arithmetic_expressions(text: str) -> list[str]:
    """Expressions the message clearly asks to compute ("what is 12*(3+4)?", "12 * 7 =")."""
    found: list[str] = []
    for pattern in (_ARITHMETIC_TRIGGERED, _ARITHMETIC_EQUALS):
        for match in pattern.finditer(text):
            expression = _clean_expression(match.group("expr"))
            if expression not in found and _is_arithmetic(expression):
                found.append(expression)
    return found[:MAX_CALCULATIONS]


def requested_timezone(text: str) -> str | None:
    """An IANA zone named in the message ("Europe/Paris"), if it is a known one."""
    for match in _IANA_ZONE.finditer(text):
        try:
            resolve_timezone(match.group())
        except ToolInputError:
            continue
        return match.group()
    return None


def tool_call_id(name: str, args: dict[str, Any], request: str, position: int) -> str:
    """A deterministic tool-call id: the same request yields the same id."""
    payload = json.dumps([name, args, request, position], sort_keys=True, ensure_ascii=False)
    return "call_" + hashlib.sha256(payload.encode()).hexdigest()[:24]


def plan_tool_calls(messages: Sequence[BaseMessage], tool_names: Collection[str]) -> list[ToolCall]:
    """The tool calls the latest user message (if last) asks for, among the bound
    `tool_names`; a request for a tool not bound is answered in text."""
    if not messages or not isinstance(messages[-1], HumanMessage):
        return []
    text = messages[-1].text
    planned: list[tuple[str, dict[str, Any]]] = []
    if CALCULATOR in tool_names:
        planned.extend((CALCULATOR, {"expression": expr}) for expr in arithmetic_expressions(text))
    if CURRENT_TIME in tool_names and _TIME_REQUEST.search(text):
        zone = requested_timezone(text)
        planned.append((CURRENT_TIME, {"timezone": zone} if zone else {}))
    if SEARCH_CONVERSATIONS in tool_names and _ASKS_ABOUT_THE_PAST.search(text):
        planned.append((SEARCH_CONVERSATIONS, {"query": clamp(text, 500)}))
    request = f"{len(messages)}:{text}"
    return [
        tool_call(name=name, args=args, id=tool_call_id(name, args, request, position))
        for position, (name, args) in enumerate(planned)
    ]


def _pending_results(messages: Sequence[BaseMessage]) -> tuple[list[ToolMessage], AIMessage | None]:
    results = list(takewhile(lambda m: isinstance(m, ToolMessage), reversed(messages)))
    before = messages[: len(messages) - len(results)]
    caller = before[-1] if before and isinstance(before[-1], AIMessage) else None
    return cast(list[ToolMessage], results[::-1]), caller


def ends_with_tool_results(messages: Sequence[BaseMessage]) -> bool:
    """Whether the conversation ends with tool results that need a final answer."""
    return bool(messages) and isinstance(messages[-1], ToolMessage)


def tool_results_answer(messages: Sequence[BaseMessage]) -> str:
    """The final answer stating the results of the trailing tool messages."""
    results, caller = _pending_results(messages)
    calls = {call["id"]: call for call in caller.tool_calls} if caller else {}
    lines: list[str] = []
    for result in results:
        call = calls.get(result.tool_call_id)
        name = result.name or (call["name"] if call else "tool")
        args = call["args"] if call else {}
        text = result.text.strip()
        brief = _one_line(text, TOOL_RESULT_CHARS)
        if result.status == "error":
            lines.append(TOOL_ERROR_ANSWER.format(name=name, error=brief))
        elif name == CALCULATOR and "expression" in args:
            lines.append(CALCULATION_ANSWER.format(expression=args["expression"], result=text))
        elif name == SEARCH_CONVERSATIONS:
            head, _, records = text.partition("\n")
            if head.startswith(IN_VIEW.partition("{query}")[0]) and records:
                lines.append(IN_VIEW_ANSWER.format(result=_found_lines(records)))
            else:
                lines.append(SEARCH_ANSWER.format(result=_found_lines(text)))
        elif name == CURRENT_TIME:
            zone = args.get("timezone") or "UTC"
            lines.append(TIME_ANSWER.format(timezone=zone, result=text))
        else:
            lines.append(TOOL_RESULT_ANSWER.format(name=name, result=brief))
    return f"{OFFLINE_PREFIX} " + PARAGRAPH.join(lines)
