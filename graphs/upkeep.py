"""The nodes that look after memory once a turn is written: `upkeep`, `embed`,
`remember`, `compact` and `settle`.

`finalize` records in the turn's own transaction what upkeep the turn leaves owed (the
user's message to extract from, when it has a cue; a compaction past eight messages;
with embeddings, the vector of the user's archived line). `upkeep` reads that record
and pays it: `embed` embeds the session's newest archived lines that have none yet,
`remember` extracts what the user said about themselves and writes it through the
long-term gate, `compact` folds older turns into the summary and pinned decisions, and
`settle` takes what was paid off the record.
The upkeep runs after `finalize` in the same run (`Context.upkeep == "inline"`), or as
a run of its own that starts at `upkeep` (`{"catch_up": true}`) once the caller's turn
is done. A failure never fails the turn: the record says `failed`, and what a crash
left unpaid is still on it for the next upkeep.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import TypedDict

from graphs.events import emit_memory
from graphs.resources import Lazy
from graphs.run_input import run_ids
from graphs.state import AgentState, AgentUpdate, Context, Node
from memory import ThreadState, hydration_dto
from memory.compaction import CompactionStatus, structured_compactor
from memory.conversations import ConversationMemory
from memory.longterm import Extractor
from memory.longterm.store import LongTermMemory

logger = logging.getLogger(__name__)


class Entry(TypedDict, total=False):
    """What `route_entry` reads of a run's input: one key, not the whole state."""

    catch_up: bool | None


def route_entry(state: Entry) -> Literal["load_memory", "upkeep"]:
    """A run starts a turn, or (`catch_up`) pays the upkeep its conversation owes."""
    return "upkeep" if state.get("catch_up") else "load_memory"


def after_remember(state: ThreadState) -> str:
    """`compact` when the memory holds more than eight messages, else `settle`."""
    return "compact" if state.compaction_owed else "settle"


def after_embed(state: ThreadState, *, remember: bool) -> str:
    """`remember` when extractions are owed (and the graph has it), else as
    `after_remember`."""
    return "remember" if state.upkeep_owed and remember else after_remember(state)


def _ended(ids: AgentUpdate, status: str) -> Command[Any]:
    """End an upkeep that found nothing owed. A stream told `pending` (an earlier
    upkeep paid the record since) still hears how the upkeep it follows ended."""
    emit_memory("upkeep", status)
    return Command(update={**ids, "upkeep": status}, goto=END)


def make_upkeep(memory: Lazy[ConversationMemory], *, remember: bool) -> Node:
    """Build `upkeep`: read what the conversation owes and go to what pays it.

    Args:
        memory: the chat memory.
        remember: whether the graph has a `remember` node (long-term memory on).
    """

    def upkeep(
        state: AgentState, config: RunnableConfig, runtime: Runtime[Context]
    ) -> Command[Any]:
        """Read the conversation's upkeep record (one read), then extract from the owed
        user messages, compact, and settle the record."""
        thread_id = config.get("configurable", {}).get("thread_id")
        # a catch-up run names its conversation as a turn does
        session_id, conversation_id = run_ids(state, runtime.context, thread_id)
        ids: AgentUpdate = {
            "catch_up": None,
            "session_id": session_id,
            "conversation_id": conversation_id,
        }
        snapshot = memory.get().read_with_registry(session_id, conversation_id)
        stored = snapshot.state
        if stored is None or not snapshot.registry.owns(conversation_id):
            return _ended(ids, "done")
        if not stored.owes_upkeep and stored.upkeep != "pending":  # paid already
            return _ended(ids, stored.upkeep)
        update: AgentUpdate = {
            **ids,
            "owed": list(stored.upkeep_owed),
            "memory_state": stored,
            "upkeep_failed": False,
            "embedded": "",
        }
        if stored.embedding_owed is not None:
            return Command(update=update, goto="embed")
        return Command(update=update, goto=after_embed(stored, remember=remember))

    return upkeep


def make_embed(memory: Lazy[ConversationMemory], *, remember: bool) -> Node:
    """Build `embed`: store the vectors of the session's newest archived lines that have
    none (the turn's own, and those an earlier upkeep failed to embed).

    Args:
        memory: the chat memory (its archive has the embeddings).
        remember: whether the graph has a `remember` node (long-term memory on).
    """

    def embed(state: AgentState) -> Command[Any]:
        """Embed the archived lines owed a vector: one embeddings call, no lock held, the
        vectors stored in a short transaction of their own. A failure leaves the lines
        found by their words only; the turn stands."""
        stored = state.get("memory_state") or ThreadState()
        update: AgentUpdate = {"embedded": stored.embedding_owed or ""}
        emit_memory("embed", "started")
        try:
            added = memory.get().archive.embed_lines(state["session_id"])
        except Exception:
            logger.exception("embedding archived lines failed; they are found by their words")
            emit_memory("embed", "failed")
            update |= {"upkeep_failed": True, "degraded": True}
        else:
            emit_memory("embed", "succeeded", lines=added)
        return Command(update=update, goto=after_embed(stored, remember=remember))

    return embed


def make_remember(
    long_term: Lazy[LongTermMemory],
    extractor: Lazy[Extractor],
    memory: Lazy[ConversationMemory] | None = None,
) -> Node:
    """Build `remember`: extract what the user said about themselves and write it
    through the long-term gate; what it retires (revoked or superseded) is forgotten in
    the archive of `memory` in the write's own transaction, so recall never brings the
    old statement back (the conversations' memory keeps it: it was said)."""

    def remember(state: AgentState) -> Command[Any]:
        """Extract lasting preferences, boundaries, goals, style and facts from the
        user's own text of each completed turn owed (never the answer, tools or
        artifacts)."""
        goto = after_remember(state.get("memory_state") or ThreadState())
        remembered: list[str] = []
        failed = False
        session_id = state["session_id"]
        # what the writes retire is forgotten in the archive, in their own transactions
        forget = None if memory is None else memory.get().forgetter(session_id, redact_memory=False)
        for message in state.get("owed") or []:
            emit_memory("remember", "started")
            try:
                write = long_term.get().remember_turn(
                    session_id,
                    state["conversation_id"],
                    message.text,
                    extractor.get(),
                    forget=forget,
                )
            except Exception:
                logger.exception("long-term extraction failed; the turn stands")
                emit_memory("remember", "failed")
                failed = True
                continue
            remembered += write.remembered
            emit_memory(
                "remember",
                "succeeded" if write.plan.changed else "skipped",
                remembered=write.added,
                retired=write.retired,
            )
        update: AgentUpdate = {"remembered": remembered}
        if failed:
            update |= {"upkeep_failed": True, "degraded": True}
        return Command(update=update, goto=goto)

    return remember


def make_compact(
    memory: Lazy[ConversationMemory],
    model: Lazy[BaseChatModel],
    method: str | None = None,
) -> Node:
    """Build `compact`: fold older turns into the summary and pinned decisions."""
    # built once: nostream, the compaction model's raw output is memory internals
    compactor = Lazy(
        lambda: structured_compactor(model.get(), method).with_config(tags=[TAG_NOSTREAM])
    )

    def compact(state: AgentState) -> AgentUpdate:
        """Run the compaction model (structured output) over the conversation's memory."""
        session_id, conversation_id = state["session_id"], state["conversation_id"]
        emit_memory("compact", "started")
        try:
            result = memory.get().compact(
                session_id, conversation_id, compactor.get(), snapshot=state.get("memory_state")
            )
        except Exception:
            logger.exception("compaction failed before reaching the model")
            emit_memory("compact", "failed")
            return {
                "compaction": CompactionStatus.FAILED.value,
                "degraded": True,
                "upkeep_failed": True,
            }
        emit_memory(
            "compact",
            result.status.value,
            summaryChars=result.summary_chars,
            pinnedDecisions=result.pinned_count,
            summaryVersion=result.state.summary_version,
        )
        update: AgentUpdate = {"compaction": result.status.value}
        if result.status is CompactionStatus.FAILED:
            update["upkeep_failed"] = True
        return update

    return compact


def make_settle(memory: Lazy[ConversationMemory]) -> Node:
    """Build `settle`: take what this upkeep paid off the conversation's record."""

    def settle(state: AgentState) -> AgentUpdate:
        """Record the upkeep's end: the extractions paid, and `done`, `failed`, or
        `pending` while more is owed (a turn that landed meanwhile)."""
        session_id, conversation_id = state["session_id"], state["conversation_id"]
        paid = [message.id for message in state.get("owed") or []]
        if state.get("embedded"):  # the embedding owed through that message
            paid.append(state["embedded"])
        failed = bool(state.get("upkeep_failed"))
        try:
            stored = memory.get().settle_upkeep(session_id, conversation_id, paid, failed=failed)
        except Exception:  # the record still says pending: the next upkeep pays it
            logger.exception("settling the memory upkeep failed")
            stored, failed = None, True
        status = "failed" if failed else stored.upkeep if stored is not None else "done"
        emit_memory("upkeep", status)
        update: AgentUpdate = {"upkeep": status}
        if stored is not None:
            update["hydration"] = hydration_dto(conversation_id, stored)
        return update

    return settle
