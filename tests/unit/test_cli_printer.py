"""How the terminal chat prints a turn's events: the status and memory lines, tokens
streamed between them, and errors on the error stream."""

from __future__ import annotations

import io
from typing import Any, cast

import pytest

from agent.cli.printer import TurnPrinter, memory_line, status_line
from agent.client_events import ClientEvent, MemoryEvent, StatusEvent
from tests.unit.cli_support import REVISION, done


@pytest.mark.parametrize(
    ("event", "line"),
    [
        ({"stage": "write", "status": "started"}, None),
        ({"stage": "write", "status": "succeeded", "messages": 4}, "[memory: written]"),
        ({"stage": "write", "status": "failed"}, "[memory: write failed]"),
        ({"stage": "write", "status": "skipped", "reason": "unknown"}, "[memory: not written]"),
        (
            {"stage": "write", "status": "skipped", "reason": "status_not_written"},
            "[memory: not written: the turn did not finish]",
        ),
        (
            {"stage": "write", "status": "skipped", "reason": "conversation_gone"},
            "[memory: not written: the conversation was deleted meanwhile]",
        ),
        ({"stage": "compact", "status": "started"}, None),
        (
            {
                "stage": "compact",
                "status": "succeeded",
                "summaryChars": 393,
                "pinnedDecisions": 2,
                "summaryVersion": 3,
            },
            "[memory: compaction succeeded — summary v3 393 chars, 2 pins]",
        ),
        (
            {"stage": "compact", "status": "fallback", "summaryChars": 80, "pinnedDecisions": 1},
            "[memory: compaction fallback — summary 80 chars, 1 pin]",
        ),
        ({"stage": "compact", "status": "failed"}, "[memory: compaction failed]"),
        (
            {"stage": "remember", "status": "refused", "reason": "invalid_output"},
            "[long-term memory: the model's answer was not usable]",
        ),
    ],
)
def test_memory_line(event: dict[str, Any], line: str | None) -> None:
    assert memory_line(cast(MemoryEvent, {"event": "memory", **event})) == line


@pytest.mark.parametrize(
    ("event", "line"),
    [
        ({"stage": "route", "route": "chat"}, "[route: chat]"),
        ({"stage": "tool", "name": "calculator"}, "[tool: calculator]"),
        ({"stage": "tasklist", "step": "plan", "status": "completed", "tasks": 3},
         "[task list: planned 3 tasks]"),
        ({"stage": "tasklist", "step": "execute", "status": "in_progress", "taskId": "t1",
          "title": "Write the docs", "index": 1, "total": 3},
         "[task list: task 1 of 3: Write the docs]"),
        ({"stage": "tasklist", "step": "check", "status": "completed", "issues": 0},
         "[task list: self-check found no issues]"),
        ({"stage": "tasklist", "step": "execute", "status": "failed"},
         "[task list: execute failed]"),
        ({"stage": "delivery"}, "[delivery]"),
        ({"workflow": "delivery", "stage": "load_request", "status": "started"},
         "[delivery: reading the request]"),
        ({"workflow": "delivery", "stage": "load_request", "status": "succeeded", "words": 9},
         None),
        ({"workflow": "delivery", "stage": "plan_delivery", "status": "succeeded", "tasks": 1},
         "[delivery: planned 1 task]"),
        ({"workflow": "delivery", "stage": "plan_delivery", "status": "succeeded", "tasks": 4,
          "deliverables": 3}, "[delivery: planned 4 tasks for 3 deliverables]"),
        ({"workflow": "delivery", "stage": "execute_tasks", "status": "task_started", "task": 2,
          "tasks": 3}, "[delivery: task 2 of 3]"),
        ({"workflow": "delivery", "stage": "review_delivery", "status": "succeeded",
          "reviewer": "risk", "passed": False}, "[delivery: Risk review found blocking issues]"),
        ({"workflow": "delivery", "stage": "execute_tasks", "status": "failed"},
         "[delivery: execute tasks failed]"),
    ],
)  # fmt: skip
def test_status_line(event: dict[str, Any], line: str | None) -> None:
    assert status_line(cast(StatusEvent, {"event": "status", **event})) == line


def printed(events: list[dict[str, Any]], **kwargs: Any) -> tuple[str, str, TurnPrinter]:
    out, err = io.StringIO(), io.StringIO()
    printer = TurnPrinter(out, err, **kwargs)
    for event in events:
        printer.handle(cast(ClientEvent, event))
    return out.getvalue(), err.getvalue(), printer


def test_printer_streams_tokens_between_status_lines() -> None:
    out, err, printer = printed(
        [
            {"event": "conversation", "conversationId": "c1"},
            {"event": "status", "stage": "route", "route": "chat"},
            {"event": "token", "text": "Hello "},
            {"event": "token", "text": "there."},
            {"event": "memory", "stage": "write", "status": "started"},
            {"event": "memory", "stage": "write", "status": "succeeded"},
            {"event": "memory", "stage": "compact", "status": "succeeded", "summaryChars": 9,
             "pinnedDecisions": 0},
            done(route="chat", text="Hello there.", degraded=True),
        ]
    )  # fmt: skip
    assert out.splitlines() == [
        "[route: chat]",
        "Hello there.",
        "[memory: written]",
        "[memory: compaction succeeded — summary 9 chars, 0 pins]",
        "[memory: degraded]",
    ]
    assert err == ""
    assert printer.outcome.conversation_id == "c1"
    assert printer.outcome.result is not None and printer.outcome.interrupt is None


def test_printer_shows_the_route_an_auto_chat_turn_took_below_its_answer() -> None:
    out, _, _ = printed(
        [
            {"event": "token", "text": "Hello."},
            {"event": "status", "stage": "route", "route": "chat"},
            {"event": "memory", "stage": "write", "status": "started"},
            {"event": "memory", "stage": "write", "status": "succeeded"},
            done(route="chat", text="Hello."),
        ]
    )
    assert out.splitlines() == ["Hello.", "[route: chat]", "[memory: written]"]


def test_printer_shows_the_tool_route_a_chat_turn_escalated_to() -> None:
    out, _, _ = printed(
        [
            {"event": "status", "stage": "route", "route": "tool"},
            {"event": "status", "stage": "tool", "name": "calculator"},
            {"event": "token", "text": "42."},
            done(route="tool", text="42."),
        ]
    )
    assert out.splitlines() == ["[route: tool]", "[tool: calculator]", "42."]


def test_printer_shows_unstreamed_text_before_the_memory_lines() -> None:
    out, _, _ = printed(
        [
            {"event": "status", "stage": "route", "route": "tasklist"},
            {"event": "memory", "stage": "write", "status": "succeeded"},
            done(route="tasklist", status="blocked", text="### Outcome\nBlocked."),
        ]
    )
    assert out.splitlines() == [
        "[route: tasklist]",
        "### Outcome",
        "Blocked.",
        "[memory: written]",
        "[status: blocked]",
    ]


def test_printer_does_not_repeat_the_route_of_a_resumed_turn() -> None:
    out, _, printer = printed(
        [
            {"event": "conversation", "conversationId": "c1"},
            {"event": "interrupt", "interrupt": REVISION},
            done(route="tasklist", status="interrupted"),
        ],
        route="tasklist",
    )
    assert out == ""
    assert printer.outcome.interrupt == REVISION


def test_printer_sends_errors_to_the_error_stream() -> None:
    out, err, printer = printed(
        [
            {"event": "conversation", "conversationId": "c1"},
            {"event": "error", "code": "invalid_request", "message": "the tasklist route is off"},
        ]
    )
    assert out == "" and err == "error: the tasklist route is off\n"
    assert printer.outcome.error == "the tasklist route is off" and printer.outcome.result is None
