"""`python -m agent`: the command line, and the interactive loop of `python -m agent chat`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib
import io
import logging
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from agent import cli
from agent.cli import Command, TurnOutcome
from agent.errors import NOTHING_TO_RESUME, ConversationBusy, InvalidRequest
from agent.service import ChatAgent
from agent.settings import Settings, SettingsError
from memory.errors import ChatMemoryError

logger = logging.getLogger("agent.cli")

PROMPT = "> "
DECISION_PROMPT = "decision> "
DEFAULT_SESSION = "cli"
LOG_FILE = "cli.log"
UNEXPECTED = "something went wrong; details are in the log"
REVIEW_PENDING = "the review is still pending: /review answers it"
REVIEW_REPLACED = "(this turn replaced the review that was pending in this conversation)"
CANCEL_GRACE = 5.0
"""Seconds a turn may wait for a turn the person just cancelled in the same conversation:
the cancelled run stops on the agent's loop a moment after the prompt is back."""
ANSWER_LATER = "(Ctrl-D or a /command leaves the review for later)"

Reader = Callable[[str], str]
"""Prints a prompt and returns the next line; raises `EOFError` at the end of input."""


def terminal_reader(prompt: str) -> str:
    """`input`, ending the prompt line when the person presses Ctrl-D."""
    try:
        return input(prompt)
    except EOFError:
        print()
        raise


def echo_reader(source: TextIO, out: TextIO) -> Reader:
    """A reader for piped input that echoes each line after its prompt, like a transcript."""

    def read(prompt: str) -> str:
        line = source.readline()
        if not line:
            raise EOFError
        line = line.rstrip("\r\n")
        out.write(f"{prompt}{line}\n")
        out.flush()
        return line

    return read


async def _consume(events: AsyncIterator[dict[str, Any]], printer: cli.TurnPrinter) -> None:
    async for event in events:
        printer.handle(event)


class ChatSession:
    """An interactive chat in one session: reads lines, runs turns, prints what happens.

    Args:
        agent: the chat agent (anything with its streaming and registry methods).
        session_id: the session whose conversations this chat sees.
        conversation_id: the conversation to continue; None starts a new one.
        read_line: reads the next line after a prompt.
        out: where answers, status lines and views go (default: stdout).
        err: where `error: ...` lines go (default: stderr).
    """

    def __init__(
        self,
        agent: cli.ChatBackend,
        *,
        session_id: str,
        conversation_id: str | None = None,
        read_line: Reader = terminal_reader,
        out: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.agent, self.session_id, self.conversation_id = agent, session_id, conversation_id
        self.read_line = read_line
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self._listing: list[str] = []
        self._pending: tuple[str, dict[str, Any], str | None] | None = None
        """The review waiting for an answer: conversation, payload, route."""
        self._next_line: str | None = None
        """A command typed at a review prompt, run once the review is left."""
        self._cancelled: tuple[str, float] | None = None
        """The conversation of the last cancelled turn, and when it was cancelled."""
        self._runner = asyncio.Runner()

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _error(self, message: str) -> None:
        self.err.write(f"error: {message}\n")
        self.err.flush()

    def run(self) -> int:
        """Read and run lines until `/quit` or the end of input; returns the exit code."""
        try:
            while True:
                try:
                    line, self._next_line = self._next_line or self.read_line(PROMPT), None
                except EOFError:
                    return 0
                except KeyboardInterrupt:
                    self._say("\n(/quit or Ctrl-D leaves)")
                    continue
                try:
                    command = cli.parse_command(line)
                except cli.UsageError as exc:
                    self._error(str(exc))
                    continue
                if command is None:
                    continue
                if command.name == "quit":
                    return 0
                self.dispatch(command)
        finally:
            self._runner.close()

    def dispatch(self, command: Command) -> None:
        """Run one command; typed errors become one `error: ...` line, never a traceback."""
        handlers: dict[str, Callable[[Command], None]] = {
            "message": self._send,
            "new": self._new,
            "list": self._list,
            "switch": self._switch,
            "memory": self._memory,
            "review": self._review,
            "help": lambda _: self._say(cli.HELP),
        }
        try:
            handlers[command.name](command)
        except (ChatMemoryError, cli.UsageError) as exc:
            self._error(str(exc))
        except KeyboardInterrupt:
            self._say("[cancelled]")
        except Exception:
            logger.exception("the %s command failed", command.name)
            self._error(UNEXPECTED)

    def _stream(
        self,
        start: Callable[[], AsyncIterator[dict[str, Any]]],
        conversation_id: str | None,
        route: str | None = None,
    ) -> TurnOutcome:
        """Run a turn, printing its events; Ctrl-C cancels it (a cancelled turn writes nothing).

        Args:
            start: opens the turn's event stream (again, while the conversation is busy
                with a turn the person cancelled a moment ago).
            conversation_id: the turn's conversation; None for a new one.
            route: the route already shown for this turn (when resuming it).
        """
        recent = self._cancelled
        deadline = recent[1] + CANCEL_GRACE if recent and recent[0] == conversation_id else 0
        while True:
            printer = cli.TurnPrinter(self.out, self.err, route=route)
            try:
                self._runner.run(_consume(start(), printer))
            except ConversationBusy:  # raised before any event, so it is safe to start again
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
                continue
            except KeyboardInterrupt:
                printer.cancelled()
                cancelled = printer.outcome.conversation_id or conversation_id
                self._cancelled = (cancelled, time.monotonic()) if cancelled else None
            finally:
                # a draft becomes a conversation as soon as its first message is accepted
                if self.conversation_id is None and printer.outcome.conversation_id:
                    self.conversation_id = printer.outcome.conversation_id
            return printer.outcome

    def _send(self, command: Command) -> None:
        conversation_id = self.conversation_id
        outcome = self._stream(
            lambda: self.agent.astream(
                command.text,
                session_id=self.session_id,
                conversation_id=conversation_id,
                create_conversation=conversation_id is None,
            ),
            conversation_id,
        )
        pending = self._pending
        if pending and outcome.result is not None and pending[0] == outcome.conversation_id:
            self._pending = None  # the paused run gave way to this turn
            self._say(REVIEW_REPLACED)
        if outcome.interrupt is not None and outcome.conversation_id:
            route = (outcome.result or {}).get("route")
            self._pending = (outcome.conversation_id, outcome.interrupt, route)
            self._answer_review()

    def _review(self, _: Command) -> None:
        if self._pending is None:
            raise cli.UsageError("there is no pending review")
        self._answer_review()

    def _answer_review(self) -> None:
        """Show the pending review and resume with the person's decision until it is over."""
        show = True
        while self._pending is not None:
            conversation_id, payload, route = self._pending
            if show:
                self._say(cli.render_review(payload))
            decision = self._ask_decision(payload)
            if decision is None:
                self._say(REVIEW_PENDING)
                return
            try:
                resume = functools.partial(
                    self.agent.astream_resume,
                    decision,
                    session_id=self.session_id,
                    conversation_id=conversation_id,
                )
                outcome = self._stream(resume, conversation_id, route=route)
            except InvalidRequest as exc:  # the decision was refused; the review still waits
                self._error(str(exc))
                if str(exc) == NOTHING_TO_RESUME:
                    self._pending = None
                show = False
                continue
            if outcome.interrupt is not None:
                self._pending, show = (conversation_id, outcome.interrupt, route), True
            elif outcome.result is not None:
                self._pending = None
            else:  # cancelled or failed: the review may still be pending
                self._say(REVIEW_PENDING)
                return

    def _ask_decision(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The person's decision; None when they leave the review for later."""
        actions = cli.review_actions(payload)
        while True:
            try:
                line = self.read_line(DECISION_PROMPT).strip()
            except (EOFError, KeyboardInterrupt):
                return None
            if line.startswith("/"):
                self._next_line = line
                return None
            if line:
                try:
                    return cli.parse_decision(line, actions)
                except cli.UsageError as exc:
                    self._error(f"{exc} {ANSWER_LATER}")

    def _new(self, _: Command) -> None:
        self.conversation_id = None
        self._say("new conversation: your next message creates it")

    def _list(self, _: Command | None = None, *, show: bool = True) -> None:
        registry = self.agent.conversations(session_id=self.session_id)
        self._listing = [entry["id"] for entry in registry["conversations"]]
        if show:
            self._say(cli.render_listing(registry, in_draft=self.conversation_id is None))

    def _switch(self, command: Command) -> None:
        if not self._listing:
            self._list(show=False)
        number = command.number or 0
        if not 1 <= number <= len(self._listing):
            raise cli.UsageError(f"no conversation {number}: /list shows {len(self._listing)}")
        conversation_id = self._listing[number - 1]
        registry = self.agent.select(session_id=self.session_id, conversation_id=conversation_id)
        self.conversation_id = conversation_id
        titles = {entry["id"]: entry["title"] for entry in registry["conversations"]}
        self._say(f"switched to {number}. {titles.get(conversation_id, conversation_id)}")

    def _memory(self, _: Command) -> None:
        if self.conversation_id is None:
            self._say("nothing stored yet: this is a new conversation")
            return
        self._say(
            cli.render_memory(
                self.agent.hydrate(session_id=self.session_id, conversation_id=self.conversation_id)
            )
        )


def open_session(
    agent: ChatAgent, *, session_id: str, conversation_id: str | None, read_line: Reader
) -> ChatSession:
    """A chat on `conversation_id`, else the session's selected conversation, else a new one.

    Raises:
        InvalidRequest: a malformed session or conversation id.
        ConversationNotFound: `conversation_id` is not one of the session's conversations.
    """
    registry = agent.conversations(session_id=session_id)  # validates the session id
    titles = {entry["id"]: entry["title"] for entry in registry["conversations"]}
    if conversation_id is not None:
        registry = agent.select(session_id=session_id, conversation_id=conversation_id)
    elif registry["selectedConversationId"] in titles:
        conversation_id = registry["selectedConversationId"]
    model = "offline model (no OPENAI_API_KEY)" if agent.settings.offline else agent.settings.model
    print(f'agent chat · session "{session_id}" · {model} · /help lists the commands')
    if conversation_id is None:
        print("new conversation: your first message creates it")
    else:
        print(f"continuing: {titles.get(conversation_id, conversation_id)}")
    return ChatSession(
        agent, session_id=session_id, conversation_id=conversation_id, read_line=read_line
    )


def configure_logging(data_dir: Path, verbose: bool) -> None:
    """Log to stderr when `verbose`, else to `<data_dir>/cli.log` (never over the chat)."""
    handler: logging.Handler
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
    else:
        try:
            data_dir.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(data_dir / LOG_FILE, encoding="utf-8")
        except OSError:
            handler = logging.NullHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = logging.INFO if verbose else logging.WARNING
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.captureWarnings(True)


def build_parser() -> argparse.ArgumentParser:
    """The `python -m agent` argument parser."""
    parser = argparse.ArgumentParser(
        prog="python -m agent",
        description="A LangGraph chat agent with bounded, per-conversation memory.",
    )
    commands = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    chat = commands.add_parser(
        "chat",
        help="interactive terminal chat (streams answers; /help inside lists its commands)",
        description="Chat in the terminal. Settings come from the environment "
        "(AGENT_DATABASE_URL, AGENT_DATA_DIR, OPENAI_API_KEY, ...); without OPENAI_API_KEY "
        "a deterministic offline model answers.",
    )
    chat.add_argument(
        "--session",
        default=DEFAULT_SESSION,
        metavar="NAME",
        help="the session whose conversations you see (default: %(default)s)",
    )
    chat.add_argument(
        "--conversation",
        metavar="ID",
        help="continue this conversation (default: the session's selected one, else a new one)",
    )
    chat.add_argument(
        "--verbose",
        action="store_true",
        help=f"log to stderr (default: log to $AGENT_DATA_DIR/{LOG_FILE})",
    )
    return parser


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 1


def run_chat(session_id: str, conversation_id: str | None, *, verbose: bool = False) -> int:
    """Start the agent from the environment and chat until the person leaves."""
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        return _fail(str(exc))
    configure_logging(settings.data_dir, verbose)
    try:
        agent = ChatAgent(settings=settings)
    except ChatMemoryError as exc:
        return _fail(str(exc))
    except Exception:
        logger.exception("could not start the agent")
        return _fail("could not start the agent; details are in the log")
    with agent:
        read_line: Reader
        if sys.stdin.isatty():
            with contextlib.suppress(ImportError):
                importlib.import_module("readline")  # line editing and history for input()
            read_line = terminal_reader
        else:
            read_line = echo_reader(sys.stdin, sys.stdout)
        try:
            session = open_session(
                agent, session_id=session_id, conversation_id=conversation_id, read_line=read_line
            )
        except ChatMemoryError as exc:
            return _fail(str(exc))
        return session.run()


def main(argv: Sequence[str] | None = None) -> int:
    """Run `python -m agent`; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="replace")  # a narrow terminal encoding never crashes
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "chat":
        parser.print_help()
        return 0
    try:
        return run_chat(args.session, args.conversation, verbose=args.verbose)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
