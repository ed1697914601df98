"""What the terminal chat parses: its /commands, the answers to a review, and the command
line."""

from __future__ import annotations

from typing import Any

import pytest

from agent.cli.commands import UsageError, parse_command, parse_decision, review_actions
from agent.cli.main import build_parser, main
from tests.unit.cli_support import STRATEGY


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


def test_the_parser_names_the_chat_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["--help"])
    assert exit_info.value.code == 0
    assert "chat" in capsys.readouterr().out
    args = build_parser().parse_args(["chat", "--session", "me", "--conversation", "c1"])
    assert (args.command, args.session, args.conversation) == ("chat", "me", "c1")
    assert build_parser().parse_args(["chat"]).session == "cli"


def test_no_command_prints_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert capsys.readouterr().out == build_parser().format_help()
