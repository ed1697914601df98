"""The terminal chat without a terminal: parsing, rendering, event printing, the loop."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent, ConversationBusy, InvalidRequest
from agent.__main__ import ChatSession, build_parser, echo_reader, main
from agent.cli import (
    TurnPrinter,
    UsageError,
    memory_line,
    parse_command,
    parse_decision,
    render_listing,
    render_memory,
    render_review,
    review_actions,
    status_line,
)
from agent.errors import NOTHING_TO_RESUME
from agent.settings import Settings
from tests.fakes import PacedModel

STRATEGY = {
    "kind": "strategy_review",
    "goal": "Launch the beta",
    "tasks": [
        {
            "id": "t1",
            "title": "Write the docs",
            "acceptance_criteria": ["a quickstart exists", "every command is described"],
            "status": "pending",
        },
        {"id": "t2", "title": "Ship the build", "acceptance_criteria": ["it installs"]},
    ],
    "actions": ["approve", "edit", "reject", "respond"],
}
REVISION = {
    "kind": "revision_review",
    "issues": [
        {"task_id": "t2", "task_title": "Ship the build", "description": "No installer yet",
         "blocking": True},
        {"task_id": None, "description": "Check the wording", "blocking": False},
    ],
    "actions": ["accept", "revise"],
}  # fmt: skip


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
    ],
)
def test_parse_decision(line: str, actions: tuple[str, ...], decision: dict[str, Any]) -> None:
    assert parse_decision(line, actions) == decision


@pytest.mark.parametrize(
    ("line", "actions", "problem"),
    [
        ("revise", STRATEGY_ACTIONS, "answer with one of: approve | edit <JSON task list>"),
        ("accept", STRATEGY_ACTIONS, "answer with one of"),
        ("approve", REVISION_ACTIONS, "answer with one of: accept | revise"),
        ("reject", STRATEGY_ACTIONS, "usage: reject <reason>"),
        ("respond   ", STRATEGY_ACTIONS, "usage: respond <feedback>"),
        ("edit", STRATEGY_ACTIONS, "edit needs a JSON list of tasks"),
        ("edit not json", STRATEGY_ACTIONS, "edit needs a JSON list of tasks"),
        ("edit []", STRATEGY_ACTIONS, "edit needs a JSON list of tasks"),
        ('edit {"title": "x"}', STRATEGY_ACTIONS, "edit needs a JSON list of tasks"),
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
        "answer with: approve | edit <JSON task list> | reject <reason> | respond <feedback>"
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
        (
            {"stage": "write", "status": "skipped", "reason": "failed"},
            "[memory: not written (failed)]",
        ),
        ({"stage": "compact", "status": "started"}, None),
        (
            {"stage": "compact", "status": "succeeded", "summaryChars": 393, "pinnedDecisions": 2},
            "[memory: compaction succeeded — summary 393 chars, 2 pins]",
        ),
        (
            {"stage": "compact", "status": "fallback", "summaryChars": 80, "pinnedDecisions": 1},
            "[memory: compaction fallback — summary 80 chars, 1 pin]",
        ),
        ({"stage": "compact", "status": "failed"}, "[memory: compaction failed]"),
    ],
)
def test_memory_line(event: dict[str, Any], line: str | None) -> None:
    assert memory_line({"event": "memory", **event}) == line


@pytest.mark.parametrize(
    ("event", "line"),
    [
        ({"stage": "route", "route": "chat"}, "[route: chat]"),
        ({"stage": "tool", "name": "calculator"}, "[tool: calculator]"),
        ({"stage": "tasklist", "step": "plan", "status": "completed", "tasks": 3},
         "[tasklist: plan completed, tasks=3]"),
        ({"stage": "tasklist", "step": "execute", "status": "in_progress", "taskId": "t1",
          "title": "Write the docs", "index": 1, "total": 3},
         "[tasklist: execute in_progress 1/3 — Write the docs]"),
        ({"stage": "delivery"}, "[delivery]"),
    ],
)  # fmt: skip
def test_status_line(event: dict[str, Any], line: str) -> None:
    assert status_line({"event": "status", **event}) == line


REGISTRY = {
    "selectedConversationId": "b" * 32,
    "conversations": [
        {"id": "a" * 32, "title": "another"},
        {"id": "b" * 32, "title": "hello"},
    ],
    "limit": 10,
}


def test_render_listing_numbers_conversations_and_marks_the_selected_one() -> None:
    assert render_listing(REGISTRY, in_draft=False).splitlines() == [
        "conversations (2 of 10):",
        f"  1. another  ({'a' * 32})",
        f"* 2. hello  ({'b' * 32})",
    ]
    assert render_listing(REGISTRY, in_draft=True).splitlines()[-1].startswith("(you are in a new")
    assert render_listing({"conversations": [], "limit": 10}, in_draft=True).startswith(
        "no conversations yet"
    )


def test_render_memory() -> None:
    dto = {
        "conversationId": "c" * 32,
        "summaryPreview": "User: hello / Assistant: hi",
        "pinnedDecisions": ["We decided to always deploy on Tuesdays."],
        "messages": [
            {"role": "user", "text": "hello\nthere"},
            {"role": "assistant", "text": "x" * 500},
        ],
    }
    lines = render_memory(dto).splitlines()
    assert lines[:4] == [
        "memory of conversation cccccccc:",
        "summary: User: hello / Assistant: hi",
        "pinned decisions:",
        "  1. We decided to always deploy on Tuesdays.",
    ]
    assert lines[4:6] == ["recent messages (2):", "  user: hello there"]
    assert (
        lines[6].startswith("  assistant: xxx") and lines[6].endswith("…") and len(lines[6]) < 230
    )
    empty = render_memory({"conversationId": "c", "messages": [], "pinnedDecisions": []})
    assert empty.splitlines()[1:] == [
        "summary: none yet",
        "pinned decisions: none",
        "recent messages: none",
    ]


# -- printing events -----------------------------------------------------------------------


def done(**result: Any) -> dict[str, Any]:
    return {"event": "done", "result": {"status": "completed", "text": "", **result}}


def printed(events: list[dict[str, Any]], **kwargs: Any) -> tuple[str, str, TurnPrinter]:
    out, err = io.StringIO(), io.StringIO()
    printer = TurnPrinter(out, err, **kwargs)
    for event in events:
        printer.handle(event)
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


def test_printer_shows_the_tool_route_a_chat_turn_escalated_to() -> None:
    out, _, _ = printed(
        [
            {"event": "status", "stage": "route", "route": "chat"},
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


# -- the loop, with a scripted backend -----------------------------------------------------


class FakeBackend:
    """Scripted turns: each call to astream/astream_resume plays the next script entry."""

    def __init__(self, *scripts: list[dict[str, Any]] | Exception) -> None:
        self.scripts = list(scripts)
        self.calls: list[tuple[str, Any, dict[str, Any]]] = []

    async def _play(
        self, name: str, arg: Any, kwargs: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        self.calls.append((name, arg, kwargs))
        script = self.scripts.pop(0)
        if isinstance(script, Exception):
            raise script
        for event in script:
            yield event

    def astream(self, message: str, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        return self._play("astream", message, kwargs)

    def astream_resume(
        self, decision: dict[str, Any], **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        return self._play("resume", decision, kwargs)

    def hydrate(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        return {"conversationId": conversation_id, "messages": [], "pinnedDecisions": []}

    def conversations(self, *, session_id: str) -> dict[str, Any]:
        return REGISTRY

    def select(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        return {**REGISTRY, "selectedConversationId": conversation_id}


def chat(backend: Any, *lines: str, conversation_id: str | None = None) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    session = ChatSession(
        backend,
        session_id="s1",
        conversation_id=conversation_id,
        read_line=echo_reader(io.StringIO("".join(f"{line}\n" for line in lines)), out),
        out=out,
        err=err,
    )
    code = session.run()
    return out.getvalue(), err.getvalue(), code


def interrupted(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"event": "conversation", "conversationId": "c1"},
        {"event": "status", "stage": "route", "route": "tasklist"},
        {"event": "interrupt", "interrupt": payload},
        done(route="tasklist", status="interrupted", interrupt=payload),
    ]


def test_a_review_is_rendered_answered_and_resumed_until_the_turn_ends() -> None:
    backend = FakeBackend(
        interrupted(STRATEGY),
        InvalidRequest("invalid edited task list: task 1: title: Field required"),
        [{"event": "conversation", "conversationId": "c1"}, *interrupted(REVISION)[2:]],
        [done(route="tasklist", status="completed", text="### Outcome\nDone.")],
    )
    out, err, code = chat(
        backend,
        "/tasklist launch the beta",
        "revise",
        'edit [{"acceptance_criteria": ["x"]}]',
        "approve",
        "accept",
        "/quit",
    )
    assert code == 0
    assert [(name, arg) for name, arg, _ in backend.calls] == [
        ("astream", "/tasklist launch the beta"),
        ("resume", {"action": "edit", "tasks": [{"acceptance_criteria": ["x"]}]}),
        ("resume", {"action": "approve"}),
        ("resume", {"action": "accept"}),
    ]
    assert all(kwargs["conversation_id"] == "c1" for name, _, kwargs in backend.calls[1:])
    assert backend.calls[0][2] == {
        "session_id": "s1",
        "conversation_id": None,
        "create_conversation": True,
    }
    assert out.count("── strategy review ──") == 1 and out.count("── revision review ──") == 1
    assert out.count("[route: tasklist]") == 1
    assert "### Outcome\nDone." in out
    assert err.splitlines() == [
        "error: answer with one of: approve | edit <JSON task list> | reject <reason> | "
        "respond <feedback> (Ctrl-D or a /command leaves the review for later)",
        "error: invalid edited task list: task 1: title: Field required",
    ]


def test_a_command_at_the_review_prompt_leaves_the_review_pending() -> None:
    backend = FakeBackend(interrupted(STRATEGY), [done(route="tasklist", text="Done.")])
    out, err, _ = chat(backend, "/tasklist go", "/memory", "/review", "approve")
    assert "the review is still pending: /review answers it" in out
    assert "memory of conversation c1" in out  # the command typed at the review prompt ran
    assert out.count("── strategy review ──") == 2
    assert backend.calls[-1][:2] == ("resume", {"action": "approve"})
    assert err == ""


def test_a_new_turn_in_the_conversation_replaces_its_pending_review() -> None:
    chat_turn = [{"event": "conversation", "conversationId": "c1"}, done(route="chat", text="hi")]
    backend = FakeBackend(interrupted(STRATEGY), chat_turn)
    out, err, _ = chat(backend, "/tasklist go", "/help", "hello", "/review")
    assert "(this turn replaced the review that was pending in this conversation)" in out
    assert err == "error: there is no pending review\n"
    assert [name for name, _, _ in backend.calls] == ["astream", "astream"]


def test_a_review_the_agent_no_longer_holds_is_dropped() -> None:
    backend = FakeBackend(interrupted(STRATEGY), InvalidRequest(NOTHING_TO_RESUME))
    out, err, _ = chat(backend, "/tasklist go", "approve", "/review")
    assert err.splitlines() == [f"error: {NOTHING_TO_RESUME}", "error: there is no pending review"]
    assert "decision> " not in out.split("> approve")[1]  # not asked again


def test_typed_errors_are_one_line_and_the_loop_goes_on() -> None:
    backend = FakeBackend(
        ConversationBusy(),
        InvalidRequest("the delivery route is not available in this agent"),
        [{"event": "error", "code": "invalid_request", "message": "the tasklist route is off"}],
    )
    out, err, code = chat(
        backend, "hello", "/delivery report", "/tasklist plan", "/review", "/switch 7", "/nope",
        conversation_id="c1",
    )  # fmt: skip
    assert code == 0
    assert err.splitlines() == [
        "error: a turn is already running in this conversation; wait for it to finish",
        "error: the delivery route is not available in this agent",
        "error: the tasklist route is off",
        "error: there is no pending review",
        "error: no conversation 7: /list shows 2",
        "error: unknown command /nope; type /help for the commands",
    ]
    assert "Traceback" not in out + err


def test_an_unexpected_failure_is_logged_not_shown(caplog: pytest.LogCaptureFixture) -> None:
    out, err, code = chat(FakeBackend(RuntimeError("db exploded at /var/x.sqlite")), "hi")
    assert code == 0
    assert err == "error: something went wrong; details are in the log\n"
    assert "exploded" not in out + err
    assert "exploded" in caplog.text


def test_switch_uses_the_numbers_of_the_last_list() -> None:
    out, err, _ = chat(FakeBackend(), "/list", "/switch 1", "/memory", "/new", "/memory")
    assert "switched to 1. another" in out
    assert f"memory of conversation {'a' * 8}:" in out
    assert out.rstrip().endswith("nothing stored yet: this is a new conversation")
    assert err == ""


# -- the loop, with a real agent -----------------------------------------------------------


@pytest.fixture
def paced_agent(tmp_path: Path) -> Iterator[ChatAgent]:
    with ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
        model=PacedModel(slow_pause=0.5),
        secret="s" * 40,
        settings=Settings(data_dir=tmp_path / "data"),
    ) as agent:
        yield agent


class InterruptOnFirstAnswer(io.StringIO):
    """Stdout that presses Ctrl-C (SIGINT) when the answer starts streaming."""

    pressed = False

    def write(self, text: str) -> int:
        if text.startswith("answer") and not self.pressed:
            self.pressed = True
            os.kill(os.getpid(), signal.SIGINT)
        return super().write(text)


def test_ctrl_c_cancels_the_running_turn_and_the_chat_goes_on(paced_agent: ChatAgent) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    out, err = InterruptOnFirstAnswer(), io.StringIO()
    lines = io.StringIO("slow one two three four five\n/memory\nquick\n/memory\n")
    session = ChatSession(
        paced_agent, session_id="s1", read_line=echo_reader(lines, out), out=out, err=err
    )
    assert session.run() == 0
    text = out.getvalue()
    first, second = text.split("> /memory\n")[1:]
    assert out.pressed and "[cancelled]" in text.split("> /memory")[0]
    assert "answer to: slow one two three four five" not in text
    assert "recent messages: none" in first  # the cancelled turn wrote nothing
    assert "  user: quick" in second and "slow" not in second
    assert err.getvalue() == ""
    registry = paced_agent.conversations(session_id="s1")
    assert [c["title"] for c in registry["conversations"]] == ["quick"]


# -- the command line ----------------------------------------------------------------------


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
    assert "chat" in capsys.readouterr().out
