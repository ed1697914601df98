"""The terminal chat's helpers without a terminal: parsing, rendering, event printing."""

from __future__ import annotations

import io
from typing import Any, cast

import pytest

from agent.cli.commands import UsageError, parse_command, parse_decision, review_actions
from agent.cli.printer import TurnPrinter, memory_line, status_line
from agent.cli.render import render_listing, render_memory, render_review
from agent.client_events import ClientEvent, MemoryEvent, StatusEvent
from tests.unit.cli_support import REGISTRY, REVISION, STRATEGY, done

# -- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "name", "text", "number"),
    [
        ("hello there", "message", "hello there", None),
        ("  what is 6*7?  ", "message", "what is 6*7?", None),
        ("/tasklist plan the launch", "message", "/tasklist plan the launch", None),
        ("/delivery a report", "message", "/delivery a report", None),
        ("/tasklist", "message", "/tasklist", None),  # the agent explains what is missing
        ("/new", "new", "", None),
        ("/LIST", "list", "", None),
        ("/memory", "memory", "", None),
        ("/review", "review", "", None),
        ("/help", "help", "", None),
        ("/quit", "quit", "", None),
        ("/exit", "quit", "", None),
        ("/switch 2", "switch", "", 2),
        ("/switch   12 ", "switch", "", 12),
        ("/memories", "memories", "", None),
        ("/memories history", "memories", "history", None),
        ("/memories  History ", "memories", "history", None),
        ("/remember I am vegetarian", "remember", "I am vegetarian", None),
        ("/forget 3", "forget", "", 3),
    ],
)
def test_parse_command(line: str, name: str, text: str, number: int | None) -> None:
    command = parse_command(line)
    assert command is not None
    assert (command.name, command.text, command.number) == (name, text, number)


@pytest.mark.parametrize("line", ["", "   ", "\t"])
def test_blank_lines_are_no_command(line: str) -> None:
    assert parse_command(line) is None


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("/switch", "usage: /switch N"),
        ("/forget", "usage: /forget N"),
        ("/forget first", "usage: /forget N"),
        ("/remember", "usage: /remember TEXT"),
        ("/memories all", "usage: /memories, or /memories history"),
        ("/switch two", "usage: /switch N"),
        ("/switch 0", "usage: /switch N"),
        ("/switch -1", "usage: /switch N"),
        ("/switch ²", "usage: /switch N"),
        ("/new now", "/new takes no arguments"),
        ("/bogus", "unknown command /bogus"),
    ],
)
def test_bad_commands_are_usage_errors(line: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        parse_command(line)


STRATEGY_ACTIONS = ("approve", "edit", "reject", "respond")
REVISION_ACTIONS = ("accept", "revise")


@pytest.mark.parametrize(
    ("line", "actions", "decision"),
    [
        ("approve", STRATEGY_ACTIONS, {"action": "approve"}),
        ("  APPROVE ", STRATEGY_ACTIONS, {"action": "approve"}),
        ("reject too risky", STRATEGY_ACTIONS, {"action": "reject", "reason": "too risky"}),
        ("respond fewer tasks", STRATEGY_ACTIONS, {"action": "respond", "feedback": "fewer tasks"}),
        (
            'edit [{"title": "Only this", "acceptance_criteria": ["done"]}]',
            STRATEGY_ACTIONS,
            {"action": "edit", "tasks": [{"title": "Only this", "acceptance_criteria": ["done"]}]},
        ),
        (
            'edit {"tasks": [{"title": "Only this"}]}',
            STRATEGY_ACTIONS,
            {"action": "edit", "tasks": [{"title": "Only this"}]},
        ),
        ("accept", REVISION_ACTIONS, {"action": "accept"}),
        ("revise", REVISION_ACTIONS, {"action": "revise"}),
        ("approve", (), {"action": "approve"}),  # no actions listed: the server decides
        (
            "edit Write the tests;  Ship it ;",
            STRATEGY_ACTIONS,
            {"action": "edit", "tasks": ["Write the tests", "Ship it"]},
        ),
    ],
)
def test_parse_decision(line: str, actions: tuple[str, ...], decision: dict[str, Any]) -> None:
    assert parse_decision(line, actions) == decision


@pytest.mark.parametrize(
    ("line", "actions", "problem"),
    [
        ("revise", STRATEGY_ACTIONS, "answer with one of: approve | edit <task>; <task>; …"),
        ("accept", STRATEGY_ACTIONS, "answer with one of"),
        ("approve", REVISION_ACTIONS, "answer with one of: accept | revise"),
        ("reject", STRATEGY_ACTIONS, "usage: reject <reason>"),
        ("respond   ", STRATEGY_ACTIONS, "usage: respond <feedback>"),
        ("edit", STRATEGY_ACTIONS, "edit takes the new task list"),
        ("edit ;  ;", STRATEGY_ACTIONS, "edit takes the new task list"),
        ("edit [not json", STRATEGY_ACTIONS, "edit takes the new task list"),
        ("edit []", STRATEGY_ACTIONS, "edit takes the new task list"),
        ('edit {"title": "x"}', STRATEGY_ACTIONS, "edit takes the new task list"),
        ("approve it all", STRATEGY_ACTIONS, "approve takes no text"),
        ("revise harder", REVISION_ACTIONS, "revise takes no text"),
    ],
)
def test_bad_decisions_are_usage_errors(line: str, actions: tuple[str, ...], problem: str) -> None:
    with pytest.raises(UsageError, match=problem.replace("|", r"\|")):
        parse_decision(line, actions)


def test_review_actions_come_from_the_payload_else_from_its_kind() -> None:
    assert review_actions(STRATEGY) == STRATEGY_ACTIONS
    assert review_actions({"actions": [{"action": "approve"}, {"name": "reject"}, 3]}) == (
        "approve",
        "reject",
    )
    assert review_actions({"kind": "revision_review"}) == REVISION_ACTIONS
    assert review_actions({"kind": "something_else"}) == ()


# -- rendering -----------------------------------------------------------------------------


def test_render_strategy_review() -> None:
    lines = render_review(STRATEGY).splitlines()
    assert lines[0] == "── strategy review ──"
    assert "goal: Launch the beta" in lines
    tasks = lines.index("tasks:")
    assert lines[tasks + 1] == "  1. Write the docs [pending] (id t1)"
    assert lines[tasks + 2 : tasks + 4] == [
        "       - a quickstart exists",
        "       - every command is described",
    ]
    assert lines[tasks + 4] == "  2. Ship the build (id t2)"
    assert lines[-1] == (
        "answer with: approve | edit <task>; <task>; … | reject <reason> | respond <feedback>"
    )


def test_render_revision_review_marks_blocking_issues() -> None:
    lines = render_review(REVISION).splitlines()
    assert lines[0] == "── revision review ──"
    issues = lines.index("issues:")
    assert lines[issues + 1] == "  - No installer yet (task: Ship the build) [blocking]"
    assert lines[issues + 2] == "  - Check the wording"
    assert lines[-1] == "answer with: accept | revise"


def test_render_review_shows_a_refused_answer_and_unknown_kinds() -> None:
    assert "(the last answer was refused: bad edit)" in render_review(
        {**STRATEGY, "error": "bad edit"}
    )
    text = render_review({"kind": "budget_review", "limit": 3, "actions": ["ok"]})
    assert text.splitlines()[0] == "── review (budget_review) ──"
    assert '"limit": 3' in text and text.endswith("answer with: ok")


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


def test_render_listing_numbers_conversations_and_marks_the_current_one() -> None:
    assert render_listing(REGISTRY, current="b" * 32).splitlines() == [
        "conversations (2 of 10):",
        f"  1. another  ({'a' * 32})",
        f"* 2. hello  ({'b' * 32})",
    ]
    assert render_listing(REGISTRY, current=None).splitlines()[-1].startswith("(you are in a new")
    assert render_listing({"conversations": [], "limit": 10}, current=None).startswith(
        "no conversations yet"
    )


def test_render_listing_says_how_to_answer_what_waits_without_switching_to_here() -> None:
    waiting = {"reviewPending": True, "unfinished": True}
    registry = {
        "conversations": [
            {"id": "a" * 32, "title": "another", **waiting},
            {"id": "b" * 32, "title": "hello", **waiting},
        ],
        "limit": 10,
    }
    other, here = render_listing(registry, current="b" * 32).splitlines()[1:]
    assert other.endswith(
        "[unfinished: /switch to it, then /recover]  [review pending: /switch to it, then /review]"
    )
    assert here.startswith("* 2.")
    assert here.endswith("[unfinished: /recover]  [review pending: /review]")


def test_render_memory() -> None:
    dto = {
        "conversationId": "c" * 32,
        "summaryPreview": "User: hello / Assistant: hi",
        "summaryVersion": 2,
        "pinnedDecisions": ["We decided to always deploy on Tuesdays."],
        "openQuestions": ["Which region hosts the database?"],
        "messages": [
            {"role": "user", "text": "hello\nthere"},
            {"role": "assistant", "text": "x" * 500},
        ],
    }
    lines = render_memory(dto).splitlines()
    assert lines[:6] == [
        "memory of conversation cccccccc:",
        "summary (version 2): User: hello / Assistant: hi",
        "pinned decisions:",
        "  1. We decided to always deploy on Tuesdays.",
        "open questions:",
        "  - Which region hosts the database?",
    ]
    assert lines[6:8] == ["recent messages (2):", "  user: hello there"]
    assert (
        lines[8].startswith("  assistant: xxx") and lines[8].endswith("…") and len(lines[8]) < 230
    )
    empty = render_memory({"conversationId": "c", "messages": [], "pinnedDecisions": []})
    assert empty.splitlines()[1:] == [
        "summary: none yet",
        "pinned decisions: none",
        "recent messages: none",
    ]


# -- printing events -----------------------------------------------------------------------


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
