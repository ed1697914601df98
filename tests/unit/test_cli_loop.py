"""The terminal chat loop without a terminal: reviews rendered, answered, left pending and
dropped, typed errors and /switch with a scripted backend; Ctrl-C and a review left at
/quit with a real agent."""

from __future__ import annotations

import io
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent, ConversationBusy, InvalidRequest
from agent.cli.readers import echo_reader
from agent.cli.session import ChatSession
from agent.errors import NOTHING_TO_RESUME
from agent.offline import OfflineChatModel
from agent.settings import Settings
from tests.gates import GATE_DIR_VARIABLE, GatedModel, new_gate
from tests.unit.cli_support import REVISION, STRATEGY, FakeBackend, chat, done


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
        "error: answer with one of: approve | edit <task>; <task>; … | reject <reason> | "
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


def test_a_message_during_a_review_asks_first_and_says_when_it_dropped_it() -> None:
    chat_turn = [{"event": "conversation", "conversationId": "c1"}, done(route="chat", text="hi")]
    backend = FakeBackend(interrupted(STRATEGY), chat_turn)
    out, err, _ = chat(backend, "/tasklist go", "/help", "hello", "n", "hello", "y", "/review")
    first, second = out.split("Send anyway? [y/N] ")[1:]
    assert first.startswith("n\n(not sent: the review still waits")
    assert second.startswith("y\n")
    assert "(you dropped the pending review: its plan was discarded" in second
    assert err == "error: there is no pending review in this conversation\n"
    assert [(name, arg) for name, arg, _ in backend.calls] == [
        ("astream", "/tasklist go"),
        ("astream", "hello"),
    ]


def test_a_review_the_agent_no_longer_holds_is_dropped() -> None:
    backend = FakeBackend(interrupted(STRATEGY), InvalidRequest(NOTHING_TO_RESUME))
    out, err, _ = chat(backend, "/tasklist go", "approve", "/review")
    assert err.splitlines() == [
        f"error: {NOTHING_TO_RESUME}",
        "error: there is no pending review in this conversation",
    ]
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
        "error: there is no pending review in this conversation",
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


@pytest.fixture
def gated_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatAgent]:
    """An agent whose answers to messages naming a gate wait after their first word (the
    gates stay shut: only a cancellation ends such a turn)."""
    monkeypatch.setenv(GATE_DIR_VARIABLE, str(tmp_path / "gates"))
    with ChatAgent(
        database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
        model=GatedModel(),
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


@pytest.fixture
def terminal_sigint() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt, as in a chat started from a terminal (a pytest-xdist
    worker ignores SIGINT)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.usefixtures("terminal_sigint")
def test_ctrl_c_cancels_the_running_turn_and_the_chat_goes_on(gated_agent: ChatAgent) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    out, err = InterruptOnFirstAnswer(), io.StringIO()
    held = f"held one two three four five gate-{new_gate()}"
    lines = io.StringIO(f"{held}\n/memory\nquick\n/memory\n")
    session = ChatSession(
        gated_agent, session_id="s1", read_line=echo_reader(lines, out), out=out, err=err
    )
    assert session.run() == 0
    text = out.getvalue()
    first, second = text.split("> /memory\n")[1:]
    assert out.pressed and "[cancelled]" in text.split("> /memory")[0]
    assert f"answer to: {held}" not in text
    assert "recent messages: none" in first  # the cancelled turn wrote nothing
    assert "  user: quick" in second and "held" not in second
    assert err.getvalue() == ""
    registry = gated_agent.conversations(session_id="s1")
    assert [c["title"] for c in registry["conversations"]] == ["quick"]


def test_a_review_left_at_quit_is_found_after_a_restart(tmp_path: Path) -> None:
    def agent() -> ChatAgent:
        return ChatAgent(
            database_url=f"sqlite:///{tmp_path / 'a.sqlite'}",
            model=OfflineChatModel(),
            secret="s" * 40,
            settings=Settings(data_dir=tmp_path / "data"),
        )

    with agent() as first:
        out, _, _ = chat(first, "/tasklist Set up CI. Add linting.", "/quit")
        assert "the review is still pending: /review answers it" in out
    with agent() as restarted:  # a new process: nothing of the first chat in memory
        out, err, _ = chat(restarted, "/list", "/switch 1", "/review", "approve", "/list")
        listings = out.split("> /list\n")[1:]
        assert "[review pending: /switch to it, then /review]" in listings[0]
        assert "waits for your review: /review answers it" in out  # said on /switch
        assert "── strategy review ──" in out.split("> /review")[1]
        assert "[review pending" not in listings[1]
        assert err == ""
        (entry,) = restarted.conversations(session_id="s1")["conversations"]
        assert entry["title"] == "Set up CI. Add linting." and not entry["reviewPending"]
