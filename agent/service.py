"""`ChatAgent`: conversations, sessions and turns over the agent graph.

One set of rules for Python, HTTP and the CLI: a conversation is validated against
its session before anything runs, is captured when the turn starts, and runs one
turn at a time; memory is written to the conversation in which the turn started.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import Command

from agent.admission import Turn, review_answered, unfinished_check
from agent.client_events import ClientEvent
from agent.errors import NOTHING_TO_RESUME, InvalidRequest
from agent.loop import BackgroundLoop
from agent.runs import TurnRunner, turn_input
from agent.runtime import REVIEWS, build_graph, context_budget, open_long_term, open_memory
from agent.session_data import SessionData
from agent.settings import LongTermMode, Settings
from agent.turn_result import TurnResult
from agent.upkeep_runner import UpkeepRunner
from graphs.decisions import validate_decision
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.request import (
    PYTHON,
    WORKFLOW_ROUTES,
    Surface,
    TurnRequest,
    check_id,
    parse_request,
)
from graphs.resources import Lazy
from graphs.state import Context, Mode
from memory import new_conversation_id


class ChatAgent:
    """A chat agent with bounded, per-conversation memory.

    Args:
        database_url: `sqlite:///path` (default from `AGENT_DATABASE_URL`).
        model: the chat model (default: `ChatOpenAI` from the environment, or the
            offline model when no `OPENAI_API_KEY` is set).
        compaction_model: structured-output model for compaction (default: `model`
            at temperature 0).
        tools: the tools of the tool route (default: the built-in tools).
        secret: HMAC secret for thread ids (default `AGENT_SESSION_SECRET`, else a
            generated development secret in the data directory).
        settings: settings to use instead of reading the environment.
        long_term_memory: how completed turns feed the user's long-term memory: auto |
            rules | model | off (default `AGENT_LONG_TERM_MEMORY`, else auto).

    Explicit arguments always win over the environment. Turns run through the agent's
    `TurnRunner`; the data methods (conversations, long-term memory, retention, the
    archive) are its `SessionData`'s.
    """

    def __init__(
        self,
        *,
        database_url: str | None = None,
        model: BaseChatModel | None = None,
        compaction_model: BaseChatModel | None = None,
        tools: Sequence[BaseTool] | None = None,
        secret: str | None = None,
        settings: Settings | None = None,
        long_term_memory: LongTermMode | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.memory = open_memory(self.settings, database_url=database_url, secret=secret)
        self._threads = self.memory.threads
        try:
            self.long_term = open_long_term(self.settings, self.memory)
        except BaseException:
            self._threads.close()
            raise
        self.budget = context_budget(self.settings, model)
        builder = build_graph(
            self.settings,
            memory=Lazy.of(self.memory),
            model=model,
            compaction_model=compaction_model,
            tools=tools,
            long_term=Lazy.of(self.long_term),
            long_term_memory=long_term_memory,
            budget=self.budget,
        )
        self.graph = builder.compile(checkpointer=self._threads.checkpointer, name="agent")
        self._loop = BackgroundLoop()
        # the same graph, entered at `upkeep`: its runs keep no run thread (what they owe
        # is recorded in the conversation's memory), and never hold the conversation
        self.upkeep = UpkeepRunner(builder.compile(name="agent"), self.memory, self._loop)
        self._runner = TurnRunner(
            graph=self.graph,
            memory=self.memory,
            upkeep=self.upkeep,
            loop=self._loop,
            run_history=self.settings.run_history,
        )
        self._data = SessionData(
            memory=self.memory,
            long_term=self.long_term,
            graph=self.graph,
            retention_days=self.settings.retention_days,
        )

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Wait (briefly) for memory upkeep, stop the agent's loop, close its database."""
        self.upkeep.close()
        self._loop.close()
        self._threads.close()

    def wait_for_upkeep(self, timeout: float | None = None) -> bool:
        """Block until no memory upkeep runs in this agent; False if `timeout` passed."""
        return self.upkeep.wait(timeout)

    def hydrate(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """The conversation's hydration DTO (raises `ConversationNotFound`). Upkeep still
        owed when nothing pays it (its process died) is started here."""
        dto = self._data.hydrate(session_id=session_id, conversation_id=conversation_id)
        if dto["upkeep"] == "pending":
            self.upkeep.request(session_id, conversation_id, merge=False)
        return dto

    def __enter__(self) -> ChatAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- turns --------------------------------------------------------------------------

    @property
    def routes(self) -> frozenset[str]:
        """The routes this agent offers (chat always; tool with tools; the workflows)."""
        return frozenset(self.graph.nodes) & {"chat", "tool", "tasklist", "delivery"}

    def parse(
        self,
        message: object,
        *,
        mode: object = "auto",
        conversation_id: object = None,
        create_conversation: object = False,
        surface: Surface = PYTHON,
    ) -> tuple[str | None, TurnRequest]:
        """Validate a turn request once (the HTTP app passes its own field names).

        Raises:
            InvalidRequest: bad message, mode or ids, or both/neither conversation options.
            MessageTooLong: the message alone does not fit the model's context budget.
        """
        return parse_request(
            message,
            mode=mode,
            conversation_id=conversation_id,
            create_conversation=create_conversation,
            routes=self.routes,
            surface=surface,
            budget=self.budget,
            system_prompt=AGENT_SYSTEM_PROMPT,
        )

    def open_turn(
        self, session_id: str, conversation_id: str | None, request: TurnRequest | None
    ) -> Turn:
        """A turn in a conversation (a new one for a draft's first message). Whether the
        session owns the conversation is checked when the turn reads its memory, in the
        same read (`ConversationNotFound` then, before any event is streamed).

        Raises:
            InvalidRequest: a bad session id.
        """
        session_id = check_id(session_id, "session id")
        if conversation_id is None:
            conversation_id = new_conversation_id()
        run_thread = self.memory.run_thread(session_id, conversation_id)
        return Turn(
            session_id,
            conversation_id,
            request,
            {"configurable": {"thread_id": run_thread}},
            Context(session_id=session_id, conversation_id=conversation_id, upkeep="deferred"),
        )

    def _prepare(
        self,
        message: object,
        session_id: str,
        conversation_id: str | None,
        create_conversation: bool,
        mode: object,
    ) -> Turn:
        conversation, request = self.parse(
            message,
            mode=mode,
            conversation_id=conversation_id,
            create_conversation=create_conversation,
        )
        return self.open_turn(session_id, conversation, request)

    async def asend(
        self,
        message: str,
        *,
        session_id: str,
        conversation_id: str | None = None,
        create_conversation: bool = False,
        mode: Mode = "auto",
    ) -> TurnResult:
        """Run one turn and return its result.

        Raises:
            InvalidRequest: bad message, mode or ids, or both/neither conversation options.
            ConversationNotFound: unknown conversation, or another session's.
            ConversationBusy: a turn is already running in the conversation.
        """
        turn = await asyncio.to_thread(
            self._prepare, message, session_id, conversation_id, create_conversation, mode
        )
        return await self._loop.arun(self._runner.run(turn, turn_input(turn)))

    def send(
        self,
        message: str,
        *,
        session_id: str,
        conversation_id: str | None = None,
        create_conversation: bool = False,
        mode: Mode = "auto",
    ) -> TurnResult:
        """Synchronous `asend` (works in notebooks, whose own loop is busy). A chat or tool
        turn runs here (`graph.stream`, no event loop); a workflow's on the agent's loop."""
        turn = self._prepare(message, session_id, conversation_id, create_conversation, mode)
        if turn.request is not None and turn.request["route"] not in WORKFLOW_ROUTES:
            return self._runner.run_here(turn)
        return self._loop.run(self._runner.run(turn, turn_input(turn)))

    def _paused_turn(self, session_id: str, conversation_id: str) -> Turn:
        """A turn continuing the conversation's run (a resume or a recovery)."""
        turn = self.open_turn(session_id, check_id(conversation_id, "conversation id"), None)
        self.memory.require_conversation(turn.session_id, turn.conversation_id)
        return turn

    def _resume_turn(
        self, decision: object, session_id: str, conversation_id: str
    ) -> tuple[Turn, dict[str, Any]]:
        turn = self._paused_turn(session_id, conversation_id)
        state = self.graph.get_state(turn.config)
        if not state.interrupts:
            raise InvalidRequest(NOTHING_TO_RESUME)
        return turn, validate_decision(state.interrupts[0].value, decision, REVIEWS)

    async def aresume(
        self, decision: dict[str, Any], *, session_id: str, conversation_id: str
    ) -> TurnResult:
        """Resume a turn waiting for a review with `decision` (e.g. `{"action": "approve"}`)."""
        turn, checked = await asyncio.to_thread(
            self._resume_turn, decision, session_id, conversation_id
        )
        return await self._loop.arun(self._runner.run(turn, Command(resume=checked)))

    def resume(
        self, decision: dict[str, Any], *, session_id: str, conversation_id: str
    ) -> TurnResult:
        """Synchronous `aresume`."""
        turn, checked = self._resume_turn(decision, session_id, conversation_id)
        return self._loop.run(self._runner.run(turn, Command(resume=checked)))

    def _recover_turn(self, session_id: str, conversation_id: str) -> Turn:
        turn = self._paused_turn(session_id, conversation_id)
        state = self.graph.get_state(turn.config)
        unfinished_check(state, answered=review_answered(self._threads.checkpointer, state))
        return turn

    async def arecover(self, *, session_id: str, conversation_id: str) -> TurnResult:
        """Continue a task list or delivery that a crash stopped, from its last finished
        step: finished tasks and reviewers are not run again.

        Raises:
            InvalidRequest: the conversation has no unfinished run (or it waits for a
                review: `resume` it).
            ConversationNotFound, ConversationBusy: as for `send`.
        """
        turn = await asyncio.to_thread(self._recover_turn, session_id, conversation_id)
        return await self._loop.arun(self._runner.run(turn, None))

    def recover(self, *, session_id: str, conversation_id: str) -> TurnResult:
        """Synchronous `arecover`."""
        turn = self._recover_turn(session_id, conversation_id)
        return self._loop.run(self._runner.run(turn, None))

    async def astream_recover(
        self, *, session_id: str, conversation_id: str
    ) -> AsyncGenerator[ClientEvent, None]:
        """`arecover` as a stream of events, like `astream`."""
        turn = await asyncio.to_thread(self._recover_turn, session_id, conversation_id)
        async with aclosing(self._runner.relay(turn, None)) as events:
            async for event in events:
                yield event

    async def astream(
        self,
        message: str,
        *,
        session_id: str,
        conversation_id: str | None = None,
        create_conversation: bool = False,
        mode: Mode = "auto",
    ) -> AsyncGenerator[ClientEvent, None]:
        """Run one turn, yielding events: `conversation` first, then `token`, `status`,
        `memory`, `interrupt`, and `done` with the `TurnResult` (or `error`).

        Closing the iterator early cancels the turn; a cancelled turn writes nothing.
        """
        turn = await asyncio.to_thread(
            self._prepare, message, session_id, conversation_id, create_conversation, mode
        )
        # each nested stream is closed explicitly: closing this one alone would leave the
        # run holding its conversation until the garbage collector finalises them
        async with aclosing(self.astream_turn(turn)) as events:
            async for event in events:
                yield event

    def astream_turn(self, turn: Turn) -> AsyncGenerator[ClientEvent, None]:
        """`astream` for a turn opened with `parse` and `open_turn` (the HTTP app's path)."""
        return self._runner.relay(turn, turn_input(turn))

    async def astream_resume(
        self, decision: dict[str, Any], *, session_id: str, conversation_id: str
    ) -> AsyncGenerator[ClientEvent, None]:
        """`aresume` as a stream of events, like `astream`."""
        turn, checked = await asyncio.to_thread(
            self._resume_turn, decision, session_id, conversation_id
        )
        async with aclosing(self._runner.relay(turn, Command(resume=checked))) as events:
            async for event in events:
                yield event

    # -- the session's data (`SessionData`) ------------------------------------------------

    def pending_review(self, *, session_id: str, conversation_id: str) -> dict[str, Any] | None:
        """The review the conversation waits for (the payload `resume` answers), or None."""
        return self._data.pending_review(session_id=session_id, conversation_id=conversation_id)

    def conversations(self, *, session_id: str) -> dict[str, Any]:
        """`{selectedConversationId, conversations, limit}`, newest activity first."""
        return self._data.conversations(session_id=session_id)

    def select(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Select a conversation without reordering the list."""
        return self._data.select(session_id=session_id, conversation_id=conversation_id)

    def delete_conversation(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Delete a conversation with its memory and run threads."""
        return self._data.delete_conversation(
            session_id=session_id, conversation_id=conversation_id
        )

    def sweep(self, *, dry_run: bool = False, now: datetime | None = None) -> dict[str, Any]:
        """Apply the retention policy (`AGENT_RETENTION_DAYS`); returns what it removed."""
        return self._data.sweep(dry_run=dry_run, now=now)

    def memories(self, *, session_id: str) -> dict[str, Any]:
        """`{"memories": [item…], "limit": 100}`: the session's long-term items."""
        return self._data.memories(session_id=session_id)

    def remember(self, text: str, *, session_id: str, kind: str | None = None) -> dict[str, Any]:
        """Add a long-term item directly, through the same gate as a turn's; returns it."""
        return self._data.remember(text, session_id=session_id, kind=kind)

    def forget(self, memory_id: str, *, session_id: str) -> None:
        """Delete one long-term item, and redact what the session's memory kept of it."""
        self._data.forget(memory_id, session_id=session_id)

    def forget_all(self, *, session_id: str) -> int:
        """Delete every long-term item of the session; returns how many were deleted."""
        return self._data.forget_all(session_id=session_id)

    def search_conversations(
        self, query: str, *, session_id: str, limit: int = 10, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The session's archived lines sharing words with `query`, most relevant first
        (only `conversation_id`'s when given)."""
        return self._data.search_conversations(
            query, session_id=session_id, limit=limit, conversation_id=conversation_id
        )

    def forget_history(self, *, session_id: str) -> int:
        """Delete every archived line of the session; returns how many were deleted."""
        return self._data.forget_history(session_id=session_id)
