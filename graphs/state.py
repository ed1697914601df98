"""State and context schemas of the agent graph.

The run state is turn-scoped: every key is replaced (never appended) from one turn
to the next, so nothing in it grows with the length of the conversation. The
conversation itself lives in its chat-memory thread (`memory/`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from langchain_core.messages import AnyMessage
from typing_extensions import TypedDict

Mode = Literal["auto", "chat", "tool", "tasklist", "delivery"]
RouteName = Literal["chat", "tool", "tasklist", "delivery"]
MODES: tuple[str, ...] = get_args(Mode)
DEFAULT_SESSION_ID = "studio"


@dataclass(kw_only=True)
class Context:
    """Per-run settings, passed as `context=` (LangGraph `context_schema`).

    Attributes:
        session_id: whose conversations these are (Studio default: "studio").
        conversation_id: the conversation; defaults to the run's thread id.
        mode: auto | chat | tool | tasklist | delivery.
    """

    session_id: str = DEFAULT_SESSION_ID
    conversation_id: str | None = None
    mode: Mode = "auto"


class AgentInput(TypedDict, total=False):
    """What a run accepts: `{"message": …}` or Studio chat input `{"messages": […]}`."""

    message: str | None
    """The user's message (replaced each turn; cleared once read)."""
    messages: list[AnyMessage]
    """Studio chat input: only the last human message is used; client history is ignored.
    On output: this turn's user message and answer (replaced each turn)."""
    mode: str | None
    """Optional route override for this turn (cleared once read)."""
    session_id: str
    """Optional session id (Studio); the context's session id otherwise."""
    conversation_id: str
    """Optional conversation id; the context's, else the run's thread id."""


class AgentOutput(TypedDict, total=False):
    """What a run returns."""

    conversation_id: str
    """The conversation the turn belongs to (replaced)."""
    answer: str
    """The final user-visible text (replaced)."""
    route: RouteName
    """The subgraph that answered (replaced)."""
    status: str
    """completed | blocked | cancelled | failed (replaced); a run paused for a review
    returns before finalize, with LangGraph's `__interrupt__`."""
    memory_written: bool
    """Whether the turn was written to chat memory (replaced)."""
    compaction: str
    """skipped | succeeded | failed | fallback (replaced)."""
    degraded: bool
    """True when memory storage failed; the answer is still delivered (replaced)."""
    hydration: dict[str, Any] | None
    """The conversation's hydration DTO after the turn (replaced)."""
    messages: list[AnyMessage]
    """This turn's user message and answer, for Studio's chat view (replaced)."""


class WorkflowInput(TypedDict, total=False):
    """What a workflow subgraph (tasklist, delivery) reads from the main graph."""

    user_text: str
    """The goal or request (the route prefix already stripped)."""
    memory_summary: str
    """The conversation's summary, as background (replaced)."""
    memory_pins: list[str]
    """The conversation's pinned decisions, as background (replaced)."""


class WorkflowOutput(TypedDict, total=False):
    """What a workflow subgraph returns to the main graph; nothing else leaves it."""

    workflow_text: str
    """The user-visible final text: summary, report, or why nothing was done (replaced)."""
    workflow_status: str
    """completed | blocked (both written to memory) | rejected | failed (replaced)."""


class AgentState(AgentInput, AgentOutput, WorkflowInput, WorkflowOutput, total=False):
    """The run state: input, output and the turn's working data, all replaced per turn."""

    session_id: str
    turn_id: str
    """Random id of this turn; the stable ids of its memory messages derive from it."""
    user_text: str
    """The validated user text (a workflow prefix stripped)."""
    tools_allowed: bool
    """Whether the chat model may ask for tools (auto mode)."""
    turn_messages: list[AnyMessage]
    """The model's working messages for this turn: memory context, tool calls, answer;
    after finalize only the turn's own messages, from the user's on (replaced)."""
    context_size: int
    """How many leading `turn_messages` are memory context (replaced)."""
    memory_messages: int
    """How many messages the chat memory holds after finalize."""
