"""What a session owns besides its turns: its conversations, its long-term items, and the
retention policy that removes what nobody uses any more (`SessionData`, which
`ChatAgent`'s data methods delegate to)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from agent.admission import busy_lock, is_unfinished, review_answered
from agent.errors import InvalidRequest
from graphs.request import WORKFLOW_ROUTES, check_id
from memory import LockTimeout
from memory.conversations import ConversationMemory
from memory.errors import InvalidInput
from memory.hydration import assert_client_safe
from memory.limits import MAX_MEMORY_ITEMS, MAX_SEARCH_QUERY_CHARS, MAX_SEARCH_RESULTS
from memory.longterm.store import LongTermMemory
from memory.retention import SweepResult, chatted_sessions, sweep_conversations
from memory.schema import utcnow
from memory.storage import ThreadStore

EMPTY_SEARCH = "a search needs at least one word"
SEARCH_TOO_LONG = "a search is at most {limit} characters (got {length})"
BAD_SEARCH_LIMIT = "limit must be an integer from 1 to {limit}"


def check_search_query(query: object) -> str:
    """`query` stripped, if it is a non-empty string of at most 500 characters.

    Raises:
        InvalidRequest: otherwise (nothing is searched).
    """
    if not isinstance(query, str) or not query.strip():
        raise InvalidRequest(EMPTY_SEARCH)
    text = query.strip()
    if len(text) > MAX_SEARCH_QUERY_CHARS:
        raise InvalidRequest(SEARCH_TOO_LONG.format(limit=MAX_SEARCH_QUERY_CHARS, length=len(text)))
    return text


class SessionData:
    """Conversations, long-term memory and retention, over the agent's stores.

    Args:
        memory: the chat memory (conversations, the archive, the thread store).
        long_term: the users' long-term memory.
        graph: the agent graph, compiled with the run threads' checkpointer (the state
            of a conversation's last run: a review it waits for, a run a crash stopped).
        retention_days: `AGENT_RETENTION_DAYS` (0: keep everything).
    """

    def __init__(
        self,
        *,
        memory: ConversationMemory,
        long_term: LongTermMemory,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        retention_days: float,
    ) -> None:
        self._memory = memory
        self._long_term = long_term
        self._graph = graph
        self._retention_days = retention_days
        self._threads: ThreadStore = memory.threads

    # -- conversations ------------------------------------------------------------------

    def hydrate(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """The conversation's hydration DTO (raises `ConversationNotFound`), with `review`:
        the review a task list in it waits for (its goal, plan and the answers it
        takes, as the `interrupt` event carried it), or None."""
        session_id = check_id(session_id, "session id")
        conversation_id = check_id(conversation_id, "conversation id")
        dto = self._memory.hydrate(session_id, conversation_id)
        dto["review"] = self._waiting_review(session_id, conversation_id)
        assert_client_safe(dto)
        return dto

    def pending_review(self, *, session_id: str, conversation_id: str) -> dict[str, Any] | None:
        """The review the conversation waits for (the payload `resume` answers), or None.

        Raises:
            ConversationNotFound: unknown, pruned, or another session's conversation.
        """
        session_id = check_id(session_id, "session id")
        conversation_id = check_id(conversation_id, "conversation id")
        self._memory.require_conversation(session_id, conversation_id)
        return self._waiting_review(session_id, conversation_id)

    def _waiting_review(self, session_id: str, conversation_id: str) -> dict[str, Any] | None:
        thread_id = self._memory.run_thread(session_id, conversation_id)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        interrupts = self._graph.get_state(config).interrupts
        if not interrupts:
            return None
        payload = interrupts[0].value
        return dict(payload) if isinstance(payload, dict) else {"value": payload}

    def conversations(self, *, session_id: str) -> dict[str, Any]:
        """`{selectedConversationId, conversations, limit}`, newest activity first; each
        conversation says whether its last run is `unfinished` (a crash stopped a task
        list or delivery: `recover` continues it)."""
        session_id = check_id(session_id, "session id")
        listing = self._memory.conversations(session_id)
        stopped = self._unfinished(session_id, [c["id"] for c in listing["conversations"]])
        for entry in listing["conversations"]:
            entry["unfinished"] = entry["id"] in stopped
        return listing

    def _unfinished(self, session_id: str, conversation_ids: Sequence[str]) -> set[str]:
        """The conversations whose last run stopped before its end, read in two queries: a
        workflow's status reads `interrupted` (a task list) or `running` (a delivery)
        until it finishes; of those, the ones not waiting for a review (or whose review
        was answered before a crash) and not running right now."""
        threads = {self._memory.run_thread(session_id, cid): cid for cid in conversation_ids}
        statuses = self._threads.run_channel_values(list(threads), "status")
        open_runs = [t for t, status in statuses.items() if status in ("interrupted", "running")]
        routes = self._threads.run_channel_values(open_runs, "route") if open_runs else {}
        stopped: set[str] = set()
        for thread_id in open_runs:
            if routes.get(thread_id) not in WORKFLOW_ROUTES:
                continue
            cid = threads[thread_id]
            try:
                with busy_lock(self._memory, session_id, cid):  # held while a run goes on
                    state = self._graph.get_state({"configurable": {"thread_id": thread_id}})
            except LockTimeout:
                continue
            answered = review_answered(self._threads.checkpointer, state)
            if is_unfinished(state, answered=answered):
                stopped.add(cid)
        return stopped

    def select(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Select a conversation without reordering the list."""
        return self._memory.select(
            check_id(session_id, "session id"), check_id(conversation_id, "conversation id")
        )

    def delete_conversation(self, *, session_id: str, conversation_id: str) -> dict[str, Any]:
        """Delete a conversation with its memory and run threads. A turn still running in
        it writes nothing when it ends (its result says `conversation_deleted`)."""
        return self._memory.delete_conversation(
            check_id(session_id, "session id"), check_id(conversation_id, "conversation id")
        )

    # -- retention ----------------------------------------------------------------------

    def sweep(self, *, dry_run: bool = False, now: datetime | None = None) -> dict[str, Any]:
        """Apply the retention policy: remove conversations idle for more than
        `AGENT_RETENTION_DAYS` (registry entry, memory and run threads), the archived
        lines of conversations idle that long (listed or pruned from the list), the
        long-term items of sessions that never chatted and added none for as long, and
        long-term items whose TTL ran out. Returns what was (or, with `dry_run`, would
        be) removed: `{conversations, sessions, threads, memories, archivedLines,
        retentionDays, dryRun}` (a dry run does not count archived lines)."""
        days = self._retention_days
        result = SweepResult(dry_run=dry_run)
        lines = 0
        unused = (0, 0)
        if days > 0:
            cutoff = (now or utcnow()) - timedelta(days=days)
            result = sweep_conversations(self._threads, cutoff, dry_run=dry_run)
            # the archive outlives the list (a pruned conversation stays recallable)
            # until its conversation has been idle this long
            lines = 0 if dry_run else self._memory.archive.sweep(cutoff)
            unused = self._long_term.sweep_unused_sessions(
                cutoff, chatted=chatted_sessions(self._threads), dry_run=dry_run
            )
        expired = 0 if dry_run else self._long_term.sweep_expired()
        return {
            "conversations": result.conversations,
            "sessions": result.sessions + unused[0],
            "threads": result.threads,
            "memories": expired + unused[1],
            "archivedLines": lines,
            "retentionDays": days,
            "dryRun": dry_run,
        }

    # -- long-term memory ---------------------------------------------------------------

    def memories(self, *, session_id: str) -> dict[str, Any]:
        """`{"memories": [item…], "limit": 100}`: the session's long-term items, newest
        first, each `{id, kind, text, importance, createdAt, updatedAt, conversationId}`."""
        items = self._long_term.items(check_id(session_id, "session id"))
        return {"memories": [item.to_dto() for item in items], "limit": MAX_MEMORY_ITEMS}

    def remember(self, text: str, *, session_id: str, kind: str | None = None) -> dict[str, Any]:
        """Add a long-term item directly, through the same gate as a turn's; returns it
        (an item it repeats comes back with `updatedAt` refreshed).

        Raises:
            InvalidRequest: the text was refused (a secret, a one-off request, too long…;
                the message says why) or `kind` is unknown. Nothing was written.
        """
        session_id = check_id(session_id, "session id")
        try:
            item = self._long_term.remember(session_id, text, kind=kind)
        except InvalidInput as exc:  # refused by the gate, or not a text, or a bad kind
            raise InvalidRequest(str(exc)) from None
        return item.to_dto()

    def forget(self, memory_id: str, *, session_id: str) -> None:
        """Delete one long-term item: the very next turn no longer recalls it, nor the
        archived lines it was learnt from (they read `[forgotten]`), and its text reads
        `[forgotten]` wherever the session's memory kept it (messages, summaries, pins,
        titles, run checkpoints), so no later context carries it.

        The archive's rewrite, the memory's redaction and the item's deletion commit in
        one transaction: should any of them fail, nothing changed, and the item is still
        listed for the user to forget again.

        Raises:
            MemoryNotFound: no such item in this session (another session's included).
        """
        session_id = check_id(session_id, "session id")
        self._long_term.forget(session_id, memory_id, forget=self._memory.forgetter(session_id))

    def forget_all(self, *, session_id: str) -> int:
        """Delete every long-term item of the session, and redact the archived lines they
        were learnt from and the session's memory as `forget` does, all in one
        transaction; returns how many items were deleted."""
        session_id = check_id(session_id, "session id")
        return self._long_term.forget_all(session_id, forget=self._memory.forgetter(session_id))

    # -- the archive of earlier conversations -------------------------------------------

    def search_conversations(
        self, query: str, *, session_id: str, limit: int = 10, conversation_id: str | None = None
    ) -> list[dict[str, Any]]:
        """The session's archived lines (every conversation, also those pruned from the
        list, until retention removes them; only `conversation_id`'s when given) sharing
        words with `query`, most relevant first:
        `[{id, conversationId, title, messageId, role, createdAt, text}]`.

        Raises:
            InvalidRequest: an empty or over-long query, a limit out of 1-50, or an
                invalid conversation id.
        """
        session_id = check_id(session_id, "session id")
        if conversation_id is not None:
            conversation_id = check_id(conversation_id, "conversation id")
        text = check_search_query(query)
        if (
            isinstance(limit, bool)
            or not isinstance(limit, int)
            or not 1 <= limit <= MAX_SEARCH_RESULTS
        ):
            raise InvalidRequest(BAD_SEARCH_LIMIT.format(limit=MAX_SEARCH_RESULTS))
        found = self._memory.search(session_id, text, limit, conversation_id=conversation_id)
        return [line.to_dto() for line in found]

    def forget_history(self, *, session_id: str) -> int:
        """Delete every archived line of the session (its conversations, their memory and
        its long-term items stay); returns how many lines were deleted."""
        return self._memory.archive.forget_session(check_id(session_id, "session id"))
