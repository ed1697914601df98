"""Turn requests and results: validation at the boundary, `TurnResult`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from agent.errors import InvalidRequest
from graphs.state import MODES, Context, Mode
from graphs.turn_input import UNKNOWN_MODE
from memory import InvalidInput
from memory.limits import MAX_MESSAGE_CHARS
from memory.schema import validate_id


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
        compaction: skipped | succeeded | failed | fallback.
        degraded: memory storage failed; the answer was still delivered.
    """

    conversation_id: str
    status: str
    route: str
    text: str
    interrupt: dict[str, Any] | None = None
    memory_written: bool = False
    compaction: str = "skipped"
    degraded: bool = False

    @classmethod
    def from_output(cls, conversation_id: str, output: dict[str, Any]) -> TurnResult:
        """The result of a run from the graph's output (or its pending interrupt)."""
        interrupts = output.get("__interrupt__") or ()
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
        )

    def to_dict(self) -> dict[str, Any]:
        """camelCase form for HTTP and stream clients."""
        data = asdict(self)
        return {
            "conversationId": data["conversation_id"],
            "status": data["status"],
            "route": data["route"],
            "text": data["text"],
            "interrupt": data["interrupt"],
            "memoryWritten": data["memory_written"],
            "compaction": data["compaction"],
            "degraded": data["degraded"],
        }


@dataclass
class Outcome:
    """Filled by `_turn_events`: the result, or why the input was invalid."""

    result: TurnResult | None = None
    invalid: str | None = None


@dataclass(frozen=True)
class Turn:
    session_id: str
    conversation_id: str
    created: bool
    config: RunnableConfig
    context: Context


def check_message(message: object) -> str:
    if not isinstance(message, str):
        raise InvalidRequest(f"message must be a string, got {type(message).__name__}")
    text = message.strip()
    if not text:
        raise InvalidRequest("message must not be empty")
    if len(text) > MAX_MESSAGE_CHARS:
        raise InvalidRequest(
            f"message is too long ({len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,})"
        )
    return text


def check_mode(mode: object) -> Mode:
    if mode not in MODES:
        raise InvalidRequest(UNKNOWN_MODE.format(mode=mode, modes=", ".join(MODES)))
    return mode  # type: ignore[return-value]


def valid_id(value: object, what: str) -> str:
    try:
        return validate_id(value, what)
    except InvalidInput as exc:
        raise InvalidRequest(str(exc)) from None
