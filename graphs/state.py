"""State and context schemas of the agent graph, and the per-turn reset.

The run state is turn-scoped: every key is replaced (never appended) each turn, and it
holds the turn, never the conversation's memory: what a model reads travels in untracked
channels, never checkpointed, so a run thread never holds memory, prompts or an earlier
turn's words.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Final, Literal, cast

from langchain_core.messages import AnyMessage, BaseMessage, convert_to_messages
from langgraph.channels import UntrackedValue
from typing_extensions import TypedDict

from graphs.request import DEFAULT_SESSION_ID, Mode, RouteName, TurnRequest, run_ids
from memory.analysis import UserText
from memory.context import ContextBudget, ContextParts
from memory.longterm.items import MemoryItem
from memory.session_documents import Snapshot


@dataclass(kw_only=True)
class Context:
    """Per-run settings, passed as `context=` (LangGraph `context_schema`)."""

    session_id: str = DEFAULT_SESSION_ID
    conversation_id: str | None = None
    """The conversation; defaults to the run's thread id."""
    mode: Mode = "auto"
    """A raw input's route override."""
    upkeep: Literal["inline", "deferred"] = "inline"
    """`inline`: the run goes on from `finalize` to the upkeep it leaves owed (Studio, the
    server); `deferred`: the caller runs the upkeep graph after the run, off the reply path."""
    request: TurnRequest | None = None
    """The turn, validated by the caller (`ChatAgent`), which admitted its conversation; None
    for a raw input (Studio, the SDK): `load_memory` checks it."""


def turn_ids(context: object = None) -> tuple[str, str]:
    """(session id, conversation id) of the running turn, from its context (default: the
    run's): the ids never travel in state, so that no checkpoint holds them in clear (a
    run thread's id is their HMAC). A context `ChatAgent` made holds both; otherwise as
    `run_ids` resolves them (under `langgraph dev` a thread is a conversation)."""
    from langgraph.config import get_config
    from langgraph.runtime import get_runtime

    if context is None:
        context = get_runtime().context
    if not isinstance(context, Context):
        context = Context()
    if isinstance(context.request, TurnRequest) and context.conversation_id:
        return context.session_id, context.conversation_id
    thread_id = get_config().get("configurable", {}).get("thread_id")
    return run_ids({}, context.session_id, context.conversation_id, thread_id)


@dataclass(frozen=True)
class MemoryContext:
    """What the model reads before this turn's own messages (`memory.context`), with the
    `budget` each call is fitted into, the long-term items the turn `held` (those
    forgotten meanwhile are taken out of its write) and the documents it `read` (its
    write starts from them when nothing changed them). A container rather than a bare
    list, so that LangGraph's `messages` stream never shows the memory to a client."""

    parts: ContextParts | None = None
    budget: ContextBudget | None = None
    held: tuple[MemoryItem, ...] = ()
    read: Snapshot | None = None

    def with_turn(self, turn: Sequence[BaseMessage]) -> list[BaseMessage]:
        """The memory context followed by the turn's own messages, fitted into the budget
        on every call: a tool round adds its calls and results, and the whole must fit."""
        if self.parts is None:
            return list(turn)
        parts = replace(self.parts, tail=tuple(turn))
        return (parts if self.budget is None else self.budget.fit(parts)).messages()


def as_messages(_: list[AnyMessage], update: list[Any]) -> list[AnyMessage]:
    """Reducer of `messages`: replace, turning Studio's message dicts into messages, so
    that a `messages` stream knows the input message it must not show again. Input
    that is not a list of messages is kept as sent: `load_memory` rejects it clearly."""
    try:
        return cast(list[AnyMessage], convert_to_messages(update))
    except (TypeError, ValueError, NotImplementedError):
        return cast(list[AnyMessage], update)


class AgentInput(TypedDict, total=False):
    """What a run accepts: `{"message": …}` or Studio chat input `{"messages": […]}`."""

    message: str | None
    """The user's message (replaced each turn)."""
    messages: Annotated[list[AnyMessage], as_messages]
    """Studio chat input: only the last human message is used; client history is ignored.
    On output: this turn's user message and answer (replaced each turn)."""
    mode: str | None
    """Optional route override for this turn (replaced each turn). The session and
    conversation are the run's context's (`turn_ids`), never input."""


class AgentOutput(TypedDict, total=False):
    """What a run returns: the turn's outcome (every key replaced each turn). The
    conversation itself is read with `hydrate` / `GET /api/chat/thread`."""

    conversation_id: Annotated[str, UntrackedValue(str)]
    """The run's context's conversation (`turn_ids`): output, never checkpointed."""
    answer: Annotated[str, UntrackedValue(str)]
    """The final user-visible text, in the run's output and never checkpointed: the run
    thread keeps it once, as the last of `messages`."""
    route: RouteName
    """The subgraph that answered."""
    status: str
    """completed | blocked | cancelled | failed once the turn ends; until then `interrupted` for a
    task list (it stops for its review first), else `running` (a crash leaves either)."""
    memory_written: bool
    """Whether the turn was written to chat memory."""
    conversation_deleted: bool
    """Deleted or pruned while the turn ran: it stays deleted, and the turn wrote nothing."""
    compaction: str
    """skipped | pending (left to the upkeep) | succeeded | failed | fallback."""
    remembered: list[str]
    """The long-term items the turn added or repeated, as texts (empty while upkeep is pending)."""
    upkeep: str
    """The memory upkeep after the turn: pending (runs after it) | done | failed."""
    degraded: bool
    """True when memory storage failed; the answer is still delivered."""
    messages: Annotated[list[AnyMessage], as_messages]
    """This turn's user message and answer, for Studio's chat view."""


Background = Callable[[str, str], tuple[str, list[str]]]
"""(session id, conversation id) → the conversation's summary and pinned decisions: a
workflow's background, read by the workflow when it needs it, so that it never travels
in the workflow's input (a subgraph's first checkpoint stores its input)."""


class WorkflowInput(TypedDict, total=False):
    """What a workflow subgraph (tasklist, delivery) reads from the main graph."""

    user_text: str
    """The goal or request, its route prefix stripped."""


class WorkflowOutput(TypedDict, total=False):
    """What a workflow subgraph returns to the main graph; nothing else leaves it."""

    workflow_text: str
    """The user-visible final text: summary, report, or why nothing was done (replaced)."""
    workflow_status: str
    """completed | blocked (both written to memory) | rejected | failed (replaced)."""


WORKFLOW_MAX_TOKENS = 2_000
"""The most a workflow step's structured answer may take (a plan, a task's result, a review)."""


class AgentState(AgentInput, AgentOutput, WorkflowOutput, total=False):
    """The run state: input, output and the turn's working data, all replaced per turn."""

    turn_id: str
    """Random id of this turn; the stable ids of its memory messages derive from it."""
    user_text: str
    """The validated user text (a workflow prefix stripped)."""
    tools_allowed: bool
    """Whether the chat model may ask for tools (auto mode)."""
    turn_messages: list[AnyMessage]
    """The turn's messages: the user's, tool calls and results, the answer (subgraphs append)."""
    said: Annotated[UserText, UntrackedValue(UserText)]
    """The one reading of the user's text this turn makes (secrets, the user's own
    words), handed to `finalize` (never checkpointed)."""
    context: Annotated[MemoryContext, UntrackedValue(MemoryContext)]
    """The memory context of this turn's model calls (never checkpointed)."""


FRESH_TURN: Final[dict[str, Any]] = {
    "message": None,
    "mode": None,
    "messages": [],
    "answer": "",
    "status": "running",
    "memory_written": False,
    "conversation_deleted": False,
    "compaction": "skipped",
    "remembered": [],
    "upkeep": "done",
    "degraded": False,
    "turn_messages": [],
    "workflow_text": "",
    "workflow_status": "",
}
"""Every per-turn key, reset when a turn starts (`load_memory` sets the rest): nothing
of the previous turn leaks into this one."""
