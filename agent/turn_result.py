"""A turn's result (`TurnResult`), read from the graph's output as its run streams it
(`TurnOutput`): the run's last `values` and the `updates` its nodes made after them.
LangGraph sends the last `values` only once it has stored the last checkpoint, while an
eager stream (one following subgraphs) sends a node's `updates` as soon as it ends: so
the answer `finalize` produced reaches the caller even when storing that checkpoint fails.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Final, cast

from langgraph.types import StreamMode
from pydantic.alias_generators import to_camel

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
    """The outcome of a turn: the graph's output (`graphs.state.AgentOutput` says each
    field), its answer as `text`, and `interrupt`, the review payload of a turn whose
    `status` is `interrupted` (waiting for a review)."""

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
            interrupt = payload if isinstance(payload, dict) else {"value": payload}
            return cls(conversation_id, "interrupted", str(output.get("route", "")), "", interrupt)
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
        """camelCase form for HTTP and stream clients (a deep copy)."""
        fields = {to_camel(name): value for name, value in asdict(self).items()}
        return cast(TurnResultDTO, {**fields, "remembered": list(self.remembered)})


@dataclass
class TurnOutput:
    """The graph's output as a run streams it: `values`, the last `values` with every
    later update applied (output keys are replaced, never appended); `answered` once
    `finalize` ended; `crashed` when the run raised."""

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
        """The turn's result: after a crash, degraded if the answer existed, else failed."""
        if not self.crashed:
            return TurnResult.from_output(conversation_id, self.values)
        if self.answered:
            return TurnResult.from_output(conversation_id, {**self.values, "degraded": True})
        return TurnResult(conversation_id, "failed", "", TURN_FAILED)
