"""The nodes that look after memory once a turn is written: `remember` and `compact`.

`remember` extracts what the user said about themselves (only after a completed turn
whose text has a cue) and writes it through the long-term gate; `compact` folds older
turns into the summary and pinned decisions when the memory holds more than eight
messages. A failure in either never fails the turn: the result says `degraded`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END
from langgraph.types import Command

from graphs.events import emit_memory
from graphs.outcome import record_extra
from graphs.resources import Lazy
from graphs.state import AgentState, AgentUpdate
from memory import ConversationMemory, ThreadState, hydration_dto
from memory.compaction import CompactionStatus, structured_compactor
from memory.limits import MAX_RECENT_MESSAGES
from memory.longterm import Extractor, LongTermMemory, MemoryWrite

logger = logging.getLogger(__name__)

Node = Callable[..., AgentUpdate | Command[Any]]


def after_memory(state: ThreadState) -> str:
    """`compact` when the memory holds more than eight messages, else the end."""
    return "compact" if len(state.messages) > MAX_RECENT_MESSAGES else END


def forget_retired(memory: ConversationMemory, session_id: str, write: MemoryWrite) -> None:
    """Forget the retired items' texts in the archive (a failure leaves the turn as it
    is: the items themselves are already gone)."""
    for item in write.retired_items:
        try:
            memory.archive.forget_text(session_id, item.text)
        except Exception:
            logger.exception("forgetting a retired item in the archive failed")


def make_remember(
    long_term: Lazy[LongTermMemory],
    extractor: Lazy[Extractor],
    memory: Lazy[ConversationMemory] | None = None,
) -> Node:
    """Build `remember`: extract what the user said about themselves and write it
    through the long-term gate; what it retires (revoked or superseded) is forgotten in
    the archive of `memory` too, so recall never brings the old statement back."""

    def remember(state: AgentState, config: RunnableConfig) -> Command[Any]:
        """Extract lasting preferences, boundaries, goals, style and facts from the
        user's own text of this completed turn (never the answer, tools or artifacts)."""
        emit_memory("remember", "started")
        goto = after_memory(state.get("memory_state") or ThreadState())
        try:
            write = long_term.get().remember_turn(
                state["session_id"], state["conversation_id"], state["user_text"], extractor.get()
            )
        except Exception:
            logger.exception("long-term extraction failed; the turn stands")
            emit_memory("remember", "failed")
            record_extra(config, degraded=True)
            return Command(update={"degraded": True}, goto=goto)
        if memory is not None:
            forget_retired(memory.get(), state["session_id"], write)
        remembered = list(write.remembered)
        emit_memory(
            "remember",
            "succeeded" if write.plan.changed else "skipped",
            remembered=write.added,
            retired=write.retired,
        )
        record_extra(config, remembered=remembered)
        return Command(update={"remembered": remembered}, goto=goto)

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
            return {"compaction": CompactionStatus.FAILED.value, "degraded": True}
        emit_memory(
            "compact",
            result.status.value,
            summaryChars=result.summary_chars,
            pinnedDecisions=result.pinned_count,
            summaryVersion=result.state.summary_version,
        )
        return {
            "compaction": result.status.value,
            "hydration": hydration_dto(conversation_id, result.state),
        }

    return compact
