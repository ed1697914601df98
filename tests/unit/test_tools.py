"""The built-in tools: safe arithmetic, time zones, and errors returned as tool messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from langchain_core.messages import AIMessage, ToolCall, ToolMessage
from langchain_core.messages.tool import tool_call
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from agent.tools import (
    BUILTIN_TOOLS,
    MAX_EXPRESSION_CHARS,
    ToolInputError,
    calculator,
    current_time,
    evaluate_expression,
    now_in_timezone,
)


def _call(name: str, args: dict[str, object], call_id: str = "call-1") -> ToolCall:
    return tool_call(name=name, args=args, id=call_id)


def test_builtin_tools_are_the_two_documented_tools_with_described_arguments() -> None:
    assert [tool.name for tool in BUILTIN_TOOLS] == ["current_time", "calculator"]
    assert calculator.args["expression"]["description"]
    assert current_time.args["timezone"]["default"] == "UTC"
    assert current_time.args["timezone"]["description"]
    assert all(tool.description and "Args:" not in tool.description for tool in BUILTIN_TOOLS)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("12*(3+4)", "84"),
        ("12 * 7", "84"),
        ("2^10", "1024"),
        ("2**3**2", "512"),
        ("7/2", "3.5"),
        ("6/3", "2"),
        ("7//2", "3"),
        ("-7 % 3", "2"),
        ("-(2+3)", "-5"),
        ("+4", "4"),
        ("2**-1", "0.5"),
        ("0.1+0.2", "0.3"),
        ("2.5e3", "2500"),
        ("3 × 4 ÷ 2", "6"),
        ("3 x 4", "12"),
        ("(2)x(5)", "10"),
        ("2 x -3", "-6"),
        ("10x3", "30"),
        ("  1 + 1  ", "2"),
        ("10**100", "1" + "0" * 100),
    ],
)
def test_calculator_evaluates_arithmetic(expression: str, expected: str) -> None:
    assert evaluate_expression(expression) == expected
    assert calculator.invoke({"expression": expression}) == expected


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        ("a + 1", "name 'a'"),
        ("x", "name 'x'"),
        ("pi * 2", "name 'pi'"),
        ("abs(-1)", "function call"),
        ("__import__('os').system('true')", "function call"),
        ("(1).real", "Attribute access"),
        ("().__class__", "Attribute access"),
        ("'a' * 3", "constant 'a'"),
        ("True + 1", "constant True"),
        ("1j * 2", "constant 1j"),
        ("[1, 2]", "List syntax"),
        ("1, 2", "Tuple syntax"),
        ("lambda: 1", "Lambda syntax"),
        ("1 if 1 else 2", "IfExp syntax"),
        ("1 < 2", "comparison"),
        ("1 << 2", "operator LShift"),
        ("~1", "operator Invert"),
        ("1 and 2", "operator And"),
        ("0x10", "decimal numbers"),
        ("0b101 + 1", "decimal numbers"),
        ("2**101", "exponent 101 is too large"),
        ("2^1000", "exponent 1000 is too large"),
        ("99**99", "too large"),
        ("10**99 * 100", "too large"),
        ("1e308 * 10", "too large"),
        ("1e999", "too large"),
        ("1/0", "Division by zero"),
        ("1//0", "Division by zero"),
        ("5 % 0", "Division by zero"),
        ("0**-1", "Division by zero"),
        ("(-8)**0.5", "not a real number"),
        ("1 +", "not a valid arithmetic expression"),
        ("((1+2)", "not a valid arithmetic expression"),
        ("   ", "empty"),
        ("1+" * 100 + "1", "too long"),
    ],
)
def test_calculator_rejects_with_a_clear_error(expression: str, reason: str) -> None:
    with pytest.raises(ToolInputError, match=reason):
        evaluate_expression(expression)


def test_calculator_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="Division by zero"):
        evaluate_expression("1/0")


def test_length_limit_is_exactly_the_documented_bound() -> None:
    longest = "1+" * 99 + "10"
    assert len(longest) == MAX_EXPRESSION_CHARS
    assert evaluate_expression(longest) == "109"
    with pytest.raises(ToolInputError, match="too long"):
        evaluate_expression(longest + "0")


def test_calculator_tool_call_with_bad_input_returns_an_error_tool_message() -> None:
    message = calculator.invoke(_call("calculator", {"expression": "__import__('os')"}))
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert message.tool_call_id == "call-1"
    assert "function call is not allowed" in message.text


WINTER = datetime(2025, 1, 15, 12, 0, 0, tzinfo=UTC)
SUMMER = datetime(2025, 7, 15, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timezone", "now", "expected"),
    [
        ("UTC", WINTER, "2025-01-15T12:00:00+00:00"),
        ("utc", WINTER, "2025-01-15T12:00:00+00:00"),
        ("Z", WINTER, "2025-01-15T12:00:00+00:00"),
        ("Asia/Shanghai", WINTER, "2025-01-15T20:00:00+08:00"),
        ("Europe/Paris", WINTER, "2025-01-15T13:00:00+01:00"),
        ("Europe/Paris", SUMMER, "2025-07-15T14:00:00+02:00"),
        ("America/New_York", SUMMER, "2025-07-15T08:00:00-04:00"),
        (" Asia/Tokyo ", WINTER, "2025-01-15T21:00:00+09:00"),
    ],
)
def test_time_is_iso_8601_in_the_requested_zone(
    timezone: str, now: datetime, expected: str
) -> None:
    assert now_in_timezone(timezone, now=now) == expected


@pytest.mark.parametrize(
    "timezone", ["Mars/Olympus_Mons", "", "../../etc/passwd", "/etc/localtime", "A" * 65]
)
def test_unknown_time_zone_is_rejected_with_a_clear_message(timezone: str) -> None:
    with pytest.raises(ToolInputError, match="Unknown time zone") as raised:
        now_in_timezone(timezone)
    assert isinstance(raised.value, ValueError)
    assert "IANA" in str(raised.value)


def test_current_time_tool_defaults_to_utc_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    parsed = datetime.fromisoformat(current_time.invoke({}))
    after = datetime.now(UTC)
    assert parsed.utcoffset() == timedelta(0)
    assert before <= parsed <= after


def test_current_time_tool_call_with_unknown_zone_returns_an_error_tool_message() -> None:
    message = current_time.invoke(_call("current_time", {"timezone": "Nowhere/Land"}))
    assert isinstance(message, ToolMessage)
    assert message.status == "error"
    assert "Nowhere/Land" in message.text


def test_tool_node_turns_tool_errors_into_error_messages_and_keeps_going() -> None:
    builder = StateGraph(MessagesState)
    builder.add_node("tools", ToolNode(BUILTIN_TOOLS))
    builder.add_edge(START, "tools")
    builder.add_edge("tools", END)
    calls = [
        _call("calculator", {"expression": "1/0"}, "call-a"),
        _call("calculator", {"expression": "6*7"}, "call-b"),
        _call("current_time", {"timezone": "Bad/Zone"}, "call-c"),
    ]
    result = builder.compile().invoke({"messages": [AIMessage(content="", tool_calls=calls)]})
    replies = {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}
    assert replies["call-a"].status == "error"
    assert "Division by zero" in replies["call-a"].text
    assert (replies["call-b"].status, replies["call-b"].text) == ("success", "42")
    assert replies["call-c"].status == "error"
