"""`ChatAgent`: conversations, sessions and turns over the agent graph.

One set of rules for Python, HTTP and the CLI: a request is validated once, here; a
conversation is checked against its session when the turn reads its memory, and runs
one turn at a time; memory is written to the conversation the turn started in. Every
turn runs one async path on the agent's own loop (`agent.runs`); sync methods wait.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing
from datetime import datetime
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.types import Command

from agent.client_events import ClientEvent
from agent.errors import InvalidRequest
from agent.loop import BackgroundLoop
from agent.runs import Turn, TurnRunner, unfinished_runs
from agent.runtime import REVIEWS, assemble
from agent.settings import LongTermMode, Settings
from agent.turn_result import TurnResult
from agent.upkeep_runner import UpkeepRunner
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.request import PYTHON, Surface, check_id, check_search, parse_request
from graphs.state import Mode
from memory import new_conversation_id
from memory.errors import InvalidInput
from memory.hydration import assert_client_safe
from memory.limits import MAX_MEMORY_ITEMS
from memory.retention import sweep
from memory.schema import utcnow
from memory.transfer import export_session, import_session

ROUTES = frozenset({"chat", "tool", "tasklist", "delivery"})


class ChatAgent:
    """A chat agent with bounded, per-conversation memory.

    Each argument left out comes from `settings` (default: the environment), as
    `agent.runtime.assemble` says; explicit arguments always win over the environment.
    `secret` keys the thread ids' HMAC (unset: a development secret in the data directory).
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
        parts = assemble(
            self.settings,
            database_url=database_url,
            secret=secret,
            model=model,
            compaction_model=compaction_model,
            tools=tools,
            long_term_memory=long_term_memory,
        )
        self.memory, self.long_term, self.budget = parts.memory, parts.long_term, parts.budget
        self.structured = parts.structured
        self._release = parts.release
        self._closed = False
        self.graph = parts.graph.compile(
            checkpointer=self.memory.threads.checkpointer, name="agent"
        )
        self.routes = frozenset(self.graph.nodes) & ROUTES
        self._loop = BackgroundLoop()
        self.upkeep = UpkeepRunner(
            parts.upkeep,
            self.memory,
            self._loop,
            batch_turns=self.settings.extraction_batch_turns if parts.batches else 1,
            idle_seconds=self.settings.extraction_idle_seconds,
        )
        self._runner = TurnRunner(
            graph=self.graph,
            memory=self.memory,
            upkeep=self.upkeep,
            run_history=self.settings.run_history,
            reviews=REVIEWS,
        )

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Wait (briefly) for memory upkeep, then stop the loop, the database and (for its
        last user) the local model's server; a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        self.upkeep.close()
        self._loop.close()
        self.memory.threads.close()
        self._release()

    def wait_for_upkeep(self, timeout: float | None = None) -> bool:
        """Block until no memory upkeep runs in this agent; False if `timeout` passed."""
        return self.upkeep.wait(timeout)

    def __enter__(self) -> ChatAgent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- turns: send, resume, recover, one path each; sync, async, stream only wait. The
    # one hop here, to the agent's own loop, outlives a caller's loop (a notebook's, a
    # request's) and holds the conversations' locks and the upkeep.

    def _send(
        self,
        message: object,
        session_id: object,
        conversation_id: object,
        create_conversation: object,
        mode: object,
        surface: Surface = PYTHON,
    ) -> Turn:
        """A new turn, its request validated (a draft's first message gets a new id);
        `MessageTooLong` when the message alone does not fit the context budget."""
        session = check_id(session_id, "session id")
        conversation, request = parse_request(
            message,
            mode=mode,
            conversation_id=conversation_id,
            create_conversation=create_conversation,
            routes=self.routes,
            surface=surface,
            budget=self.budget,
            system_prompt=AGENT_SYSTEM_PROMPT,
        )
        return self._runner.open(session, conversation or new_conversation_id(), request)

    def _paused(self, session_id: object, conversation_id: object, resume: Any = None) -> Turn:
        """A turn continuing the conversation's run: a resume's `Command` (the runner checks
        the review pending and the decision), or a recovery."""
        session = check_id(session_id, "session id")
        conversation = check_id(conversation_id, "conversation id")
        return self._runner.open(session, conversation, None, resume)

    async def _relay(self, turn: Turn) -> AsyncGenerator[ClientEvent, None]:
        """The turn's events, relayed from the agent's loop; closing this stops the turn
        (closed explicitly: the conversation is free at once, not at garbage collection)."""
        async with aclosing(self._loop.astream(self._runner.stream(turn))) as events:
            async for event in events:
                yield event

    def send(
        self,
        message: str,
        *,
        session_id: str,
        conversation_id: str | None = None,
        create_conversation: bool = False,
        mode: Mode = "auto",
    ) -> TurnResult:
        """Run one turn and return its result (works in notebooks, whose own loop is busy).

        Raises:
            InvalidRequest: bad message, mode or ids, or both/neither conversation options.
            ConversationNotFound: unknown conversation, or another session's.
            ConversationBusy: a turn is already running in the conversation.
        """
        turn = self._send(message, session_id, conversation_id, create_conversation, mode)
        return self._loop.run(self._runner.run(turn))

    async def asend(
        self,
        message: str,
        *,
        session_id: str,
        conversation_id: str | None = None,
        create_conversation: bool = False,
        mode: Mode = "auto",
    ) -> TurnResult:
        """`send` from async code."""
        turn = self._send(message, session_id, conversation_id, create_conversation, mode)
        return await self._loop.arun(self._runner.run(turn))

    async def astream(
        self,
        message: str,
        *,
        session_id: str,
        conversation_id: str | None = None,
        create_conversation: bool = False,
        mode: Mode = "auto",
        surface: Surface = PYTHON,
    ) -> AsyncGenerator[ClientEvent, None]:
        """Run one turn, yielding events (`agent.client_events`): `conversation` first,
        `done` with the `TurnResult` (or `error`) last, then the upkeep's `memory` events.
        Closing the iterator early cancels the turn, which then writes nothing. `surface`
        spells the fields in error messages as the caller does (HTTP: `conversationId`).
        """
        turn = self._send(message, session_id, conversation_id, create_conversation, mode, surface)
        async for event in self._relay(turn):
            yield event

    def resume(
        self, decision: dict[str, Any], *, session_id: str, conversation_id: str
    ) -> TurnResult:
        """Resume a turn waiting for a review with `decision` (e.g. `{"action": "approve"}`)."""
        turn = self._paused(session_id, conversation_id, Command(resume=decision))
        return self._loop.run(self._runner.run(turn))

    async def aresume(
        self, decision: dict[str, Any], *, session_id: str, conversation_id: str
    ) -> TurnResult:
        """`resume` from async code."""
        turn = self._paused(session_id, conversation_id, Command(resume=decision))
        return await self._loop.arun(self._runner.run(turn))

    async def astream_resume(
        self, decision: dict[str, Any], *, session_id: str, conversation_id: str
    ) -> AsyncGenerator[ClientEvent, None]:
        """`aresume` as a stream of events, like `astream`."""
        turn = self._paused(session_id, conversation_id, Command(resume=decision))
        async for event in self._relay(turn):
            yield event

    def recover(self, *, session_id: str, conversation_id: str) -> TurnResult:
        """Continue a task list or delivery that a crash stopped, from its last finished
        step; `InvalidRequest` when no run is unfinished (or it waits for a review)."""
        return self._loop.run(self._runner.run(self._paused(session_id, conversation_id)))

    async def arecover(self, *, session_id: str, conversation_id: str) -> TurnResult:
        """`recover` from async code."""
        return await self._loop.arun(self._runner.run(self._paused(session_id, conversation_id)))

    async def astream_recover(
        self, *, session_id: str, conversation_id: str
    ) -> AsyncGenerator[ClientEvent, None]:
        """`arecover` as a stream of events, like `astream`."""
        async for event in self._relay(self._paused(session_id, conversation_id)):
            yield event

    # -- conversations ------------------------------------------------------------------

    def hydrate(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """The conversation's hydration DTO, with `review`: the payload a task list in it waits for,
        or None. Upkeep owed that nothing pays (its process died) starts here."""
        session = check_id(session_id, "session id")
        conversation = check_id(conversation_id, "conversation id")
        dto = self.memory.hydrate(session, conversation)
        dto["review"] = self._waiting_review(session, conversation)
        assert_client_safe(dto)
        if dto["upkeep"] == "pending":
            self.upkeep.request(session, conversation)
        return dto

    def pending_review(self, *, session_id: str, conversation_id: str) -> dict[str, Any] | None:
        """The review the conversation waits for (the payload `resume` answers), or None."""
        session = check_id(session_id, "session id")
        conversation = check_id(conversation_id, "conversation id")
        self.memory.require_conversation(session, conversation)
        return self._waiting_review(session, conversation)

    def _waiting_review(self, session_id: str, conversation_id: str) -> dict[str, Any] | None:
        thread_id = self.memory.run_thread(session_id, conversation_id)
        interrupts = self.graph.get_state({"configurable": {"thread_id": thread_id}}).interrupts
        if not interrupts:
            return None
        payload = interrupts[0].value
        return dict(payload) if isinstance(payload, dict) else {"value": payload}

    def conversations(self, *, session_id: str) -> dict[str, Any]:
        """`{selectedConversationId, conversations, limit}`, newest activity first, each
        marked `unfinished` when a crash stopped its workflow (`recover` continues it)."""
        session = check_id(session_id, "session id")
        return self._with_unfinished(session, self.memory.conversations(session))

    def _with_unfinished(self, session_id: str, listing: dict[str, Any]) -> dict[str, Any]:
        ids = [entry["id"] for entry in listing["conversations"]]
        stopped = unfinished_runs(self.graph, self.memory, session_id, ids)
        for entry in listing["conversations"]:
            entry["unfinished"] = entry["id"] in stopped
        return listing

    def select(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Select a conversation without reordering the list; returns the listing."""
        session = check_id(session_id, "session id")
        listing = self.memory.select(session, check_id(conversation_id, "conversation id"))
        return self._with_unfinished(session, listing)

    def delete_conversation(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Delete a conversation with its memory, run threads and archived lines; a turn
        still running in it writes nothing (its result says `conversation_deleted`)."""
        return self.memory.delete_conversation(
            check_id(session_id, "session id"), check_id(conversation_id, "conversation id")
        )

    def sweep(self, *, dry_run: bool = False, now: datetime | None = None) -> dict[str, Any]:
        """Apply the retention policy (`memory.retention.sweep`); returns the counts of
        what was (with `dry_run`: would be) removed."""
        return sweep(
            self.memory,
            self.long_term,
            self.settings.retention_days,
            dry_run=dry_run,
            now=now or utcnow(),
        )

    # -- long-term memory ---------------------------------------------------------------

    def memories(self, *, session_id: str, include_history: bool = False) -> dict[str, Any]:
        """`{"memories": [item…], "limit": 100}`: the session's current long-term items
        (`MemoryItem.to_dto`), newest first; with `include_history`, also `"history"`: the
        items later statements changed, most recently changed first."""
        session = check_id(session_id, "session id")
        listing: dict[str, Any] = {
            "memories": [item.to_dto() for item in self.long_term.items(session)],
            "limit": MAX_MEMORY_ITEMS,
        }
        if include_history:
            listing["history"] = [item.to_dto() for item in self.long_term.history(session)]
        return listing

    def remember(self, text: str, *, session_id: str, kind: str | None = None) -> dict[str, Any]:
        """Add a long-term item through the same gate as a turn's and return it (one it
        repeats comes back refreshed); `InvalidRequest` says why a text was refused."""
        session = check_id(session_id, "session id")
        try:
            item = self.long_term.remember(session, text, kind=kind)
        except InvalidInput as exc:  # refused by the gate, or not a text, or a bad kind
            raise InvalidRequest(str(exc)) from None
        return item.to_dto()

    def forget(self, memory_id: str, *, session_id: str) -> None:
        """Delete one long-term item, and redact its text as `[forgotten]` wherever the
        session's memory kept it (archived lines, messages, summaries, pins, titles, run
        checkpoints), in one transaction; `MemoryNotFound` for an item not in this session."""
        session = check_id(session_id, "session id")
        self.long_term.forget(session, memory_id, forget=self.memory.forgetter(session))

    def forget_all(self, *, session_id: str) -> int:
        """Delete every long-term item of the session, and redact what it was learnt from
        as `forget` does, all in one transaction; returns how many items were deleted."""
        session = check_id(session_id, "session id")
        return self.long_term.forget_all(session, forget=self.memory.forgetter(session))

    # -- the archive of earlier conversations -------------------------------------------

    def search_conversations(
        self, query: str, *, session_id: str, limit: int = 10, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The session's archived lines (pruned conversations' too, until retention;
        only `conversation_id`'s when given) sharing words with `query`, most relevant
        first, each marked `superseded` when a later statement changed it."""
        session = check_id(session_id, "session id")
        if conversation_id is not None:
            conversation_id = check_id(conversation_id, "conversation id")
        text = check_search(query, limit)
        found = self.memory.search(session, text, limit, conversation_id=conversation_id)
        if not found:
            return []
        # a line a later statement changed ("I moved to Porto") is found, marked so
        changed = {
            item.provenance.message_id
            for item in self.long_term.history(session)
            if item.provenance is not None
        }
        return [{**line.to_dto(), "superseded": line.message_id in changed} for line in found]

    def forget_history(self, *, session_id: str) -> int:
        """Delete every archived line of the session (its conversations, their memory and
        its long-term items stay); returns how many lines were deleted."""
        return self.memory.forget_history(check_id(session_id, "session id"))

    # -- take it away, bring it back ----------------------------------------------------

    def export(self, *, session_id: str) -> dict[str, Any]:
        """Everything the session owns as one versioned JSON document (`memory.transfer`),
        holding no session id, thread id or key."""
        return export_session(self.memory, self.long_term, check_id(session_id, "session id"))

    def import_(self, document: object, *, session_id: str) -> dict[str, Any]:
        """Bring an export (JSON text, bytes or the parsed document) into the session, all
        or nothing, by the rules of `memory.transfer`; returns what was imported and
        skipped. The document is user input: `InvalidRequest` says what it breaks."""
        session = check_id(session_id, "session id")
        try:
            return import_session(self.memory, self.long_term, session, document)
        except InvalidInput as exc:
            raise InvalidRequest(str(exc)) from None
