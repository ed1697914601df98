"""The interactive chat of `python -m agent chat`: reads lines, runs turns, prints them."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, TextIO

from agent.cli.commands import (
    HELP,
    Command,
    UsageError,
    parse_command,
    parse_decision,
    review_actions,
)
from agent.cli.markdown import MarkdownView
from agent.cli.printer import TurnOutcome, TurnPrinter, print_turn
from agent.cli.readers import Reader, terminal_reader
from agent.cli.render import (
    render_history,
    render_listing,
    render_memories,
    render_memory,
    render_review,
    render_search,
)
from agent.cli.transfer import export_to, import_from
from agent.cli.upkeep import UpkeepFollower
from agent.client_events import ClientEvent
from agent.errors import NOTHING_TO_RESUME, InvalidRequest
from memory.errors import ChatMemoryError

if TYPE_CHECKING:  # the terminal chat takes anything with its methods
    from agent.service import ChatAgent

logger = logging.getLogger("agent.cli")

PROMPT = "> "
DECISION_PROMPT = "decision> "
UNEXPECTED = "something went wrong; details are in the log"
REVIEW_PENDING = "the review is still pending: /review answers it"
REVIEW_WAITING = "a task list in this conversation waits for your review: /review answers it"
DROP_PROMPT = (
    "a task list in this conversation waits for your review; sending this drops it "
    "(its plan is discarded). Send anyway? [y/N] "
)
REVIEW_KEPT = "(not sent: the review still waits; /review answers it)"
REVIEW_DROPPED = "(you dropped the pending review: its plan was discarded, nothing of it was kept)"
ANSWER_LATER = "(Ctrl-D or a /command leaves the review for later)"


class ChatSession:
    """An interactive chat in one session: reads lines, runs turns, prints what happens
    (to `out`, errors to `err`; answers as Markdown with `markdown`, for a terminal)."""

    def __init__(
        self,
        agent: ChatAgent,
        *,
        session_id: str,
        conversation_id: str | None = None,
        read_line: Reader = terminal_reader,
        out: TextIO | None = None,
        err: TextIO | None = None,
        markdown: bool = False,
    ) -> None:
        self.agent, self.session_id, self.conversation_id = agent, session_id, conversation_id
        self.read_line = read_line
        self.out, self.err = out or sys.stdout, err or sys.stderr
        self._markdown = MarkdownView(self.out) if markdown else None
        self._listing: list[str] = []
        self._memories: list[str] = []
        """Ids of the long-term items of the last `/memories` (or its history), for `/forget N`."""
        self._pending: tuple[str, dict[str, Any], str | None] | None = None
        """The review waiting for an answer: conversation, payload, route."""
        self._next_line: str | None = None
        """A command typed at a review prompt, run once the review is left."""
        self._runner = asyncio.Runner()
        self._upkeep = UpkeepFollower(self._runner)

    def _say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def _error(self, message: str) -> None:
        self.err.write(f"error: {message}\n")
        self.err.flush()

    def run(self) -> int:
        """Read and run lines until `/quit` or the end of input; returns the exit code."""
        try:
            self.dispatch(Command("sync"))
            while True:
                try:
                    line, self._next_line = self._next_line or self.read_line(PROMPT), None
                except EOFError:
                    return 0
                except KeyboardInterrupt:
                    self._say("\n(/quit or Ctrl-D leaves)")
                    continue
                try:
                    command = parse_command(line)
                except UsageError as exc:
                    self._error(str(exc))
                    continue
                if command is None:
                    continue
                self._upkeep.settle()
                if command.name == "quit":
                    return 0
                self.dispatch(command)
        finally:
            self._upkeep.settle()
            self._runner.close()

    def dispatch(self, command: Command) -> None:
        """Run one command; typed errors become one `error: ...` line, never a traceback."""
        handlers: dict[str, Callable[[Command], None]] = {
            "message": self._send,
            "new": self._new,
            "list": self._list,
            "switch": self._switch,
            "memory": self._memory,
            "memories": self._list_memories,
            "recover": self._recover,
            "remember": self._remember,
            "forget": self._forget,
            "search": self._search,
            "export": lambda c: self._say(export_to(self.agent, self.session_id, c.text)),
            "import": self._import,
            "review": self._review,
            "sync": lambda _: self._sync_review(announce=True),
            "help": lambda _: self._say(HELP),
        }
        try:
            handlers[command.name](command)
        except (ChatMemoryError, UsageError) as exc:
            self._error(str(exc))
        except KeyboardInterrupt:
            self._say("[cancelled]")
        except Exception:
            logger.exception("the %s command failed", command.name)
            self._error(UNEXPECTED)

    def _stream(
        self, events: AsyncGenerator[ClientEvent, None], route: str | None = None
    ) -> TurnOutcome:
        """Run the turn whose stream is `events` (it starts when read), printing them
        (`route`: already shown, on a resume); Ctrl-C cancels it (it then writes nothing)."""
        self._upkeep.settle()
        printer = TurnPrinter(self.out, self.err, route=route, markdown=self._markdown)
        try:
            if self._runner.run(print_turn(events, printer)):
                self._upkeep.follow(events, printer)
        except KeyboardInterrupt:
            printer.cancelled()
        finally:
            # a draft becomes a conversation as soon as its first message is accepted
            if self.conversation_id is None and printer.outcome.conversation_id:
                self.conversation_id = printer.outcome.conversation_id
        return printer.outcome

    def _sync_review(self, *, announce: bool = False) -> None:
        """Take the review the conversation waits for from the agent (a restart, another
        client, or a switch may have left one); `announce` says so when there is one."""
        conversation_id = self.conversation_id
        if conversation_id is None:
            self._pending = None
            return
        payload = self.agent.pending_review(
            session_id=self.session_id, conversation_id=conversation_id
        )
        self._pending = None if payload is None else (conversation_id, payload, "tasklist")
        if payload is not None and announce:
            self._say(REVIEW_WAITING)

    def _confirm_drop(self) -> bool:
        """Ask before a message drops the review that waits in this conversation."""
        try:
            answer = self.read_line(DROP_PROMPT).strip().lower()
        except (EOFError, KeyboardInterrupt):
            answer = ""
        if answer in ("y", "yes"):
            return True
        self._say(REVIEW_KEPT)
        return False

    def _send(self, command: Command) -> None:
        conversation_id = self.conversation_id
        waiting = self._pending is not None and self._pending[0] == conversation_id
        if waiting and not self._confirm_drop():
            return
        outcome = self._stream(
            self.agent.astream(
                command.text,
                session_id=self.session_id,
                conversation_id=conversation_id,
                create_conversation=conversation_id is None,
            )
        )
        pending = self._pending
        if pending and outcome.result is not None and pending[0] == outcome.conversation_id:
            self._pending = None  # the paused run gave way to this turn
            self._say(REVIEW_DROPPED)
        if outcome.conversation_id:
            self._review_paused(outcome.conversation_id, outcome)

    def _review_paused(self, conversation_id: str, outcome: TurnOutcome) -> None:
        """Answer the review a turn paused for, if it did."""
        if outcome.interrupt is not None:
            route = outcome.result["route"] if outcome.result else None
            self._pending = (conversation_id, outcome.interrupt, route)
            self._answer_review()

    def _recover(self, _: Command) -> None:
        conversation_id = self.conversation_id
        if conversation_id is None:
            raise UsageError("there is nothing to recover in a new conversation")
        events = self.agent.astream_recover(
            session_id=self.session_id, conversation_id=conversation_id
        )
        self._review_paused(conversation_id, self._stream(events))

    def _review(self, _: Command) -> None:
        if self._pending is None or self._pending[0] != self.conversation_id:
            self._sync_review()  # the agent holds it: it outlives this process
        if self._pending is None:
            raise UsageError("there is no pending review in this conversation")
        self._answer_review()

    def _answer_review(self) -> None:
        """Show the pending review and resume with the person's decision until it is over."""
        show = True
        while self._pending is not None:
            conversation_id, payload, route = self._pending
            if show:
                self._say(render_review(payload))
            decision = self._ask_decision(payload)
            if decision is None:
                self._say(REVIEW_PENDING)
                return
            events = self.agent.astream_resume(
                decision, session_id=self.session_id, conversation_id=conversation_id
            )
            try:
                outcome = self._stream(events, route=route)
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
        actions = review_actions(payload)
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
                    return parse_decision(line, actions)
                except UsageError as exc:
                    self._error(f"{exc} {ANSWER_LATER}")

    def _new(self, _: Command) -> None:
        self.conversation_id = None
        self._pending = None
        self._say("new conversation: your next message creates it")

    def _list(self, _: Command | None = None, *, show: bool = True) -> None:
        registry = self.agent.conversations(session_id=self.session_id)
        self._listing = [entry["id"] for entry in registry["conversations"]]
        if show:
            self._say(render_listing(registry, current=self.conversation_id))

    def _switch(self, command: Command) -> None:
        if not self._listing:
            self._list(show=False)
        number = command.number or 0
        if not 1 <= number <= len(self._listing):
            raise UsageError(f"no conversation {number}: /list shows {len(self._listing)}")
        conversation_id = self._listing[number - 1]
        registry = self.agent.select(session_id=self.session_id, conversation_id=conversation_id)
        self.conversation_id = conversation_id
        titles = {entry["id"]: entry["title"] for entry in registry["conversations"]}
        self._say(f"switched to {number}. {titles.get(conversation_id, conversation_id)}")
        self._sync_review(announce=True)

    def _list_memories(self, command: Command | None = None, *, show: bool = True) -> None:
        history = command is not None and command.text == "history"
        listing = self.agent.memories(session_id=self.session_id, include_history=history)
        self._memories = [item["id"] for item in listing["history" if history else "memories"]]
        if show:
            self._say(render_history(listing) if history else render_memories(listing))

    def _remember(self, command: Command) -> None:
        item = self.agent.remember(command.text, session_id=self.session_id)
        self._say(f"remembered [{item['kind']}] {item['text']}")
        self._memories = []  # numbers change: the next /forget lists again

    def _search(self, command: Command) -> None:
        results = self.agent.search_conversations(command.text, session_id=self.session_id)
        self._say(render_search(command.text, results))

    def _import(self, command: Command) -> None:
        self._say(import_from(self.agent, self.session_id, command.text))
        self._listing, self._memories = [], []  # numbers change: list again

    def _forget(self, command: Command) -> None:
        if not self._memories:
            self._list_memories(show=False)
        number = command.number or 0
        if not 1 <= number <= len(self._memories):
            raise UsageError(f"no item {number}: /memories shows {len(self._memories)}")
        self.agent.forget(self._memories[number - 1], session_id=self.session_id)
        self._memories = []
        self._say(f"forgot item {number}")

    def _memory(self, _: Command) -> None:
        if self.conversation_id is None:
            self._say("nothing stored yet: this is a new conversation")
            return
        dto = self.agent.hydrate(session_id=self.session_id, conversation_id=self.conversation_id)
        self._say(render_memory(dto))
