"""The chat node: one model call with the memory context.

A node of the agent graph, not a subgraph of one node, which would add a graph run of its
own to every turn (its loop, its checkpoint read) and buy nothing. The model call has a
sync and an async body (`ModelNode`): `graph.invoke` calls the model in the caller's
thread, `graph.astream` awaits it (streaming, cancellable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, NotRequired, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.types import Command
from typing_extensions import TypedDict

from graphs.bounded import bounded_ainvoke, bounded_invoke
from graphs.events import emit
from graphs.state import MemoryContext
from graphs.text_tool_calls import checked_reply

S = TypeVar("S", bound=Mapping[str, Any])
U = TypeVar("U")


class ChatOutput(TypedDict):
    """What the chat node writes."""

    turn_messages: list[AnyMessage]
    """This turn's own messages, the model's reply last (replaced)."""
    degraded: NotRequired[bool]
    """Set when the model wrote a tool call it could not make (replaced)."""


class ChatState(ChatOutput, total=False):
    """What the chat node reads of the agent graph's state."""

    context: MemoryContext
    """The memory context read before the turn's messages (never checkpointed)."""
    tools_allowed: bool
    """Whether the model may ask for a tool."""


def announce_tool_calls(reply: AIMessage) -> None:
    """Stream one `tool_call` event per requested tool (names only, never arguments)."""
    for call in reply.tool_calls:
        emit("tool_call", name=call["name"], id=call.get("id"))


class ModelNode(Runnable[S, U]):
    """A node that calls a model (`call` picks the runnable and its input from the state,
    `done` makes the update from the reply), sync and async: a plain `Runnable`, without
    the traced run and per-call signature inspection a `RunnableLambda` would add."""

    def __init__(
        self,
        call: Callable[[S], tuple[Runnable[Any, Any], list[BaseMessage]]],
        done: Callable[[S, AIMessage], U],
        name: str = "call_model",
        timeout: float | None = None,
    ) -> None:
        self.call, self.done, self.name, self.timeout = call, done, name, timeout

    def invoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        runnable, messages = self.call(input)
        reply = bounded_invoke(partial(runnable.invoke, messages, config), self.timeout)
        return self.done(input, reply)

    async def ainvoke(self, input: S, config: RunnableConfig | None = None, **kwargs: Any) -> U:
        runnable, messages = self.call(input)
        call = partial(runnable.ainvoke, messages, config)
        return self.done(input, await bounded_ainvoke(call, self.timeout))


def chat_node(
    *, model: BaseChatModel, tools: Sequence[BaseTool] = (), timeout: float | None = None
) -> ModelNode[ChatState, ChatOutput | Command[Literal["tool", "finalize"]]]:
    """The chat node: the model answers from the memory context and the turn's messages
    (`tools` offered when `tools_allowed`; the call bounded by `timeout` seconds). With
    tools, the node also routes (`Command`) to the tool subgraph or to the end, and
    announces the route once, then the tools called. Routing here, not in an edge, keeps
    the turn on the event loop: LangGraph runs a plain function in a worker thread.
    """
    with_tools = model.bind_tools(list(tools)) if tools else model  # bound once
    names = frozenset(tool.name for tool in tools)

    def call(state: ChatState) -> tuple[Runnable[Any, Any], list[BaseMessage]]:
        """Answer from the memory context, or ask for a tool in auto mode."""
        allowed = bool(tools) and state.get("tools_allowed", False)
        context = state.get("context") or MemoryContext()
        return (with_tools if allowed else model), context.with_turn(state["turn_messages"])

    def done(
        state: ChatState, reply: AIMessage
    ) -> ChatOutput | Command[Literal["tool", "finalize"]]:
        # a call written as text is made a real one where tools are allowed, never an answer
        allowed = bool(tools) and state.get("tools_allowed", False)
        reply, degraded = checked_reply(reply, names, may_call=allowed)
        output: ChatOutput = {"turn_messages": [*state["turn_messages"], reply]}
        if degraded:
            output["degraded"] = True
        if not tools:
            return output
        asked = bool(reply.tool_calls)
        if allowed:
            emit("route", route="tool" if asked else "chat")
        if asked:
            announce_tool_calls(reply)
        return Command(update=output, goto="tool" if asked else "finalize")

    return ModelNode(call, done, name="chat", timeout=timeout)
