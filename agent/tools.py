"""The built-in tools: offline, side-effect free, bounded (`current_time`, `calculator`)."""

from __future__ import annotations

import ast
import math
import operator
import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from langchain_core.tools import BaseTool, ToolException, tool

MAX_EXPRESSION_CHARS = 200
MAX_EXPONENT = 100
MAX_MAGNITUDE = 10**100
"""No operand or intermediate result of the calculator may exceed this in absolute value."""

MAX_TIMEZONE_CHARS = 64

UNKNOWN_TIMEZONE = (
    "Unknown time zone {timezone!r}. Use an IANA time zone name such as 'UTC', "
    "'Europe/Paris' or 'Asia/Shanghai'."
)
EXPRESSION_TOO_LONG = "The expression is too long: {length} characters, at most {limit} allowed."
EMPTY_EXPRESSION = "The expression is empty. Pass an arithmetic expression such as '12*(3+4)'."
INVALID_SYNTAX = "{expression!r} is not a valid arithmetic expression."
NOT_ALLOWED = (
    "{what} is not allowed. Only numbers, + - * / // % **, unary signs and parentheses are."
)
NON_DECIMAL_LITERAL = "Only decimal numbers are allowed, not {literal!r}."
DIVISION_BY_ZERO = "Division by zero in {expression!r}."
EXPONENT_TOO_LARGE = "The exponent {exponent} is too large: at most {limit} in absolute value."
RESULT_TOO_LARGE = "The result is too large: results are limited to 1e{digits} in absolute value."
NOT_REAL = "The result of {expression!r} is not a real number."

_UTC_ALIASES = frozenset({"UTC", "Z", "GMT", "ZULU", "ETC/UTC"})
# A literal such as 0x1F, 0o17 or 0b101: a leading 0 that is not part of a longer number.
_NON_DECIMAL = re.compile(r"(?<![\d.])0[xXoObB][0-9a-fA-F_]*")
# "x" is multiplication only between operands ("3 x 4", "(2)x(5)"), never inside a word.
_TIMES_X = re.compile(r"(?<=[\d.)])\s*[xX]\s*(?=[-+\d.(])")

Number = int | float

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}


class ToolInputError(ToolException, ValueError):
    """A tool was called with arguments it cannot use; the message tells the model why."""


def resolve_timezone(timezone: str) -> tzinfo:
    """The `tzinfo` of an IANA zone ("UTC", "Z", "GMT" in any case: UTC), else `ToolInputError`."""
    name = timezone.strip()
    if name.upper() in _UTC_ALIASES:
        return UTC
    if not name or len(name) > MAX_TIMEZONE_CHARS:
        raise ToolInputError(UNKNOWN_TIMEZONE.format(timezone=timezone))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        # ValueError: a malformed key such as "../etc/passwd" or an absolute path.
        raise ToolInputError(UNKNOWN_TIMEZONE.format(timezone=timezone)) from None


def now_in_timezone(timezone: str = "UTC", *, now: datetime | None = None) -> str:
    """`now` (default: the current instant) in `timezone`, as ISO-8601 to the second."""
    zone = resolve_timezone(timezone)
    instant = now if now is not None else datetime.now(UTC)
    return instant.astimezone(zone).isoformat(timespec="seconds")


def normalise_expression(expression: str) -> str:
    """`expression` with the aliases × x ÷ ^ replaced by * * / ** and surrounding space removed."""
    text = expression.strip()
    text = text.replace("×", "*").replace("÷", "/").replace("^", "**")
    return _TIMES_X.sub("*", text)


def _check_magnitude(value: object, expression: str) -> Number:
    # pow() of a negative base and a fractional exponent is complex.
    if not isinstance(value, int | float):
        raise ToolInputError(NOT_REAL.format(expression=expression))
    # the bound first: an int past it would overflow `isfinite`'s float (which catches NaN)
    if abs(value) > MAX_MAGNITUDE or not math.isfinite(value):
        raise ToolInputError(RESULT_TOO_LARGE.format(digits=100))
    return value


def _power(base: Number, exponent: Number, expression: str) -> Number:
    if abs(exponent) > MAX_EXPONENT:
        raise ToolInputError(EXPONENT_TOO_LARGE.format(exponent=exponent, limit=MAX_EXPONENT))
    # Predict the size before computing, so a bounded exponent cannot build a huge int.
    if abs(base) > 1 and exponent > 0 and exponent * math.log10(abs(base)) > 100:
        raise ToolInputError(RESULT_TOO_LARGE.format(digits=100))
    return operator.pow(base, exponent)


def _evaluate(node: ast.AST, expression: str) -> Number:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, expression)
    if isinstance(node, ast.Constant):
        # bool is an int subclass: the exact type check keeps True/False out.
        if type(node.value) not in (int, float):
            raise ToolInputError(NOT_ALLOWED.format(what=f"The constant {node.value!r}"))
        return _check_magnitude(node.value, expression)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, expression))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _evaluate(node.left, expression)
        right = _evaluate(node.right, expression)
        try:
            if isinstance(node.op, ast.Pow):
                result = _power(left, right, expression)
            else:
                result = _BINARY[type(node.op)](left, right)
        except ZeroDivisionError:
            raise ToolInputError(DIVISION_BY_ZERO.format(expression=expression)) from None
        except OverflowError:
            raise ToolInputError(RESULT_TOO_LARGE.format(digits=100)) from None
        return _check_magnitude(result, expression)
    raise ToolInputError(NOT_ALLOWED.format(what=_describe(node)))


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"The name {node.id!r}"
    if isinstance(node, ast.Call):
        return "A function call"
    if isinstance(node, ast.Attribute):
        return "Attribute access"
    if isinstance(node, ast.Compare):
        return "A comparison"
    if isinstance(node, ast.BinOp | ast.UnaryOp | ast.BoolOp):
        return f"The operator {type(node.op).__name__}"
    return f"{type(node).__name__} syntax"


def format_number(value: Number) -> str:
    """`value` as text: integers (also integral floats) without ".0", floats to 12 digits."""
    if isinstance(value, int):
        return str(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return format(value, ".12g")


def evaluate_expression(expression: str) -> str:
    """Evaluate an arithmetic expression safely (no `eval`): parse, check every node, compute;
    `ToolInputError` for anything but bounded arithmetic on decimal numbers."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolInputError(
            EXPRESSION_TOO_LONG.format(length=len(expression), limit=MAX_EXPRESSION_CHARS)
        )
    # Before the aliases, so "0x10" is refused rather than read as 0 × 10.
    literal = _NON_DECIMAL.search(expression)
    if literal:
        raise ToolInputError(NON_DECIMAL_LITERAL.format(literal=literal.group()))
    text = normalise_expression(expression)
    if not text:
        raise ToolInputError(EMPTY_EXPRESSION)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ToolInputError(INVALID_SYNTAX.format(expression=expression)) from None
    return format_number(_evaluate(tree, expression))


@tool(parse_docstring=True)
def current_time(timezone: str = "UTC") -> str:
    """Get the current date and time, as ISO-8601 with the UTC offset.

    Use it whenever an answer depends on the time, today's date or the day of the week;
    never guess them. Example result: "2025-03-01T14:05:09+01:00".

    Args:
        timezone: IANA time zone name, e.g. "UTC", "Europe/Paris", "America/New_York"
            or "Asia/Shanghai". Defaults to UTC when the user names no place.
    """
    return now_in_timezone(timezone)


@tool(parse_docstring=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression exactly and return the number, e.g. "84" or "0.5".

    Use it for every calculation instead of doing the arithmetic yourself. On an error,
    read the message, fix the expression and call again.

    Args:
        expression: Numbers combined with + - * / // % ** and parentheses, e.g.
            "12*(3+4)" or "2**10" (^, × and ÷ are accepted too). No variables, units,
            functions or words; at most 200 characters, exponents at most 100.
    """
    return evaluate_expression(expression)


# Bad arguments come back to the model as an error ToolMessage it can correct, whatever
# error policy the ToolNode runs with; other exceptions still propagate.
current_time.handle_tool_error = True
calculator.handle_tool_error = True

BUILTIN_TOOLS: list[BaseTool] = [current_time, calculator]
"""The tools every agent has: offline, deterministic apart from the clock, bounded."""
