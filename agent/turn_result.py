"""A turn's result (`TurnResult`), read from the graph's output as its run streams it
(`TurnOutput`).

The outcome of a turn is the agent graph's output (`graphs.state.AgentOutput`): the
last `values` of the run, and the `updates` its nodes made after them. LangGraph sends
a run's last `values` only once it has stored the run's last checkpoint, while, when it
streams eagerly (as it does when it follows subgraphs), a node's `updates` go out as soon
as the node ends: following both, the answer `finalize` produced reaches the caller even
when storing that checkpoint fails.
"""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any, Final

from langgraph.types import StreamMode

from agent.client_events import TurnResultDTO
from agent.errors import TURN_FAILED

INTERRUPT: Final = "__interrupt__"
"""Where LangGraph's output carries a run's pending interrupts."""
OUTPUT_MODES: Final[tuple[StreamMode, ...]] = ("values", "updates")
"""The stream modes that carry the graph's output."""
ANSWERING_NODE: Final = "finalize"
"""The node whose update holds the turn's answer, written to memory."""


@dataclass(frozen=True)
class TurnResult:
    """The outcome of a turn.

    Attributes:
        conversation_id: the conversation the turn ran in (new for a draft).
        status: completed | blocked (both written to memory) | interrupted (waiting
            for a review) | cancelled (a rejected workflow) | failed.
        route: chat | tool | tasklist | delivery.
        text: the final user-visible text.
        interrupt: the pending review payload when `status` is interrupted.
        memory_written: whether the turn was written to chat memory.
        compaction: skipped | pending (the turn's upkeep runs after it) | succeeded |
            failed | fallback.
        degraded: memory storage failed; the answer was still delivered.
        conversation_deleted: the conversation was deleted (or pruned) while the turn
            ran: it stays deleted, and the turn wrote nothing.
        remembered: texts of the long-term items the turn added or said again (empty
            while its upkeep is pending).
        upkeep: pending (memory upkeep runs after the turn: `memory` events and the
            hydration DTO tell its outcome) | done | failed.
    """

    conversation_id: str
    status: str
    route: str
    text: str
    interrupt: dict[str, Any] | None = None
    memory_written: bool = False
    compaction: str = "skipped"
    degraded: bool = False
    conversation_deleted: bool = False
    remembered: tuple[str, ...] = ()
    upkeep: str = "done"

    @classmethod
    def from_output(cls, conversation_id: str, output: dict[str, Any]) -> TurnResult:
        """The result of a run from the graph's output (or its pending interrupt)."""
        interrupts = output.get(INTERRUPT) or ()
        if interrupts:
            payload = getattr(interrupts[0], "value", interrupts[0])
            return cls(
                conversation_id=conversation_id,
                status="interrupted",
                route=str(output.get("route", "")),
                text="",
                interrupt=payload if isinstance(payload, dict) else {"value": payload},
            )
        return cls(
            conversation_id=conversation_id,
            status=str(output.get("status", "failed")),
            route=str(output.get("route", "")),
            text=str(output.get("answer", "")),
            memory_written=bool(output.get("memory_written")),
            compaction=str(output.get("compaction", "skipped")),
            degraded=bool(output.get("degraded")),
            conversation_deleted=bool(output.get("conversation_deleted")),
            remembered=tuple(output.get("remembered") or ()),
            upkeep=str(output.get("upkeep", "done")),
        )

    def to_dict(self) -> TurnResultDTO:
        """camelCase form for HTTP and stream clients."""
        return {
            "conversationId": self.conversation_id,
            "status": self.status,
            "route": self.route,
            "text": self.text,
            "interrupt": deepcopy(self.interrupt),
            "memoryWritten": self.memory_written,
            "compaction": self.compaction,
            "degraded": self.degraded,
            "conversationDeleted": self.conversation_deleted,
            "remembered": list(self.remembered),
            "upkeep": self.upkeep,
        }


@dataclass
class TurnOutput:
    """The graph's output as a run streams it (its top-level `values` and `updates`).

    Attributes:
        values: the output so far: the last `values`, with every later update applied
            (every output key is replaced, never appended), interrupts included.
        answered: whether `finalize` ended, so the turn's answer exists.
        crashed: whether the run raised (logged by the runner).
    """

    values: dict[str, Any] = field(default_factory=dict)
    answered: bool = False
    crashed: bool = False

    def record(self, mode: str, chunk: Any) -> None:
        """Follow one top-level stream part of `OUTPUT_MODES` (others are ignored)."""
        if mode == "values" and isinstance(chunk, dict):
            self.values.update(chunk)
        elif mode == "updates" and isinstance(chunk, dict):
            for node, update in chunk.items():
                self._apply(node, update)

    def _apply(self, node: str, update: Any) -> None:
        if node == INTERRUPT:
            self.values[INTERRUPT] = update
            return
        if node.startswith("__"):  # LangGraph's own keys (`__metadata__`)
            return
        self.answered = self.answered or node == ANSWERING_NODE
        # a node that wrote one key twice reports a list of single-key updates
        for part in update if isinstance(update, list) else [update]:
            if isinstance(part, dict):
                self.values.update(part)

    def result(self, conversation_id: str) -> TurnResult:
        """The turn's result. When the run raised after the answer existed, as when
        storing its last checkpoint failed, the answer is delivered degraded; before
        it, the turn failed with a safe message."""
        if not self.crashed:
            return TurnResult.from_output(conversation_id, self.values)
        if self.answered:
            return TurnResult.from_output(conversation_id, {**self.values, "degraded": True})
        return TurnResult(conversation_id, "failed", "", TURN_FAILED)
