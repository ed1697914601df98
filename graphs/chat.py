"""The chat subgraph: one model call with the memory context; in auto mode a tool request
makes the main graph continue the turn in the tool subgraph. `ModelNode` calls the model
in the caller's thread under `invoke` and awaits it under `astream` (cancellable).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Annotated, Any, NotRequired, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.channels import UntrackedValue
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphs.events import emit
from graphs.state import MemoryContext
from graphs.text_tool_calls import checked_reply
from memory.bounded import bounded_ainvoke, bounded_invoke

S = TypeVar("S", bound=Mapping[str, Any])
U = TypeVar("U", bound=Mapping[str, Any])


class ChatOutput(TypedDict):
    """What the chat subgraph hands back to the main graph."""

    turn_messages: list[AnyMessage]
    """This turn's own messages, the model's reply last (replaced)."""
    degraded: NotRequired[bool]
    """Set when the model wrote a tool call it could not make (replaced)."""


class ChatState(ChatOutput, total=False):
    """State shared with the main graph."""

    context: Annotated[MemoryContext, UntrackedValue(MemoryContext)]
    """The memory context read before the turn's messages (never checkpointed)."""
    tools_allowed: bool
    """Whether the model may ask for a tool (replaced)."""


def announce_tool_calls(reply: AIMessage) -> None:
    """Stream one `tool_call` event per requested tool (names only, never arguments)."""
    for call in reply.tool_calls:
        emit("tool_call", name=call["name"], id=call.get("id"))


def model_input(state: ChatState) -> list[BaseMessage]:
    """The memory context followed by this turn's own messages."""
    context = state.get("context") or MemoryContext()
    return context.with_turn(state["turn_messages"])


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


def build_chat_graph(
    *, model: BaseChatModel, tools: Sequence[BaseTool] = (), timeout: float | None = None
) -> StateGraph[ChatState, None, ChatState, ChatOutput]:
    """`START → call_model → END`; `tools` offered when `tools_allowed` is set, the call
    bounded by `timeout` seconds (`memory.bounded.ModelTimeout`)."""
    with_tools = model.bind_tools(list(tools)) if tools else model  # bound once
    names = frozenset(tool.name for tool in tools)

    def call(state: ChatState) -> tuple[Runnable[Any, Any], list[BaseMessage]]:
        """Answer from the memory context, or ask for a tool in auto mode."""
        allowed = bool(tools) and state.get("tools_allowed", False)
        return (with_tools if allowed else model), model_input(state)

    def done(state: ChatState, reply: AIMessage) -> ChatOutput:
        # a tool request is announced where the turn goes on to the tool route; one
        # written as text is made a real one where tools are allowed, never an answer
        allowed = bool(tools) and state.get("tools_allowed", False)
        reply, degraded = checked_reply(reply, names, may_call=allowed)
        output: ChatOutput = {"turn_messages": [*state["turn_messages"], reply]}
        return {**output, "degraded": True} if degraded else output

    builder = StateGraph(ChatState, output_schema=ChatOutput)
    builder.add_node("call_model", ModelNode(call, done, timeout=timeout))
    builder.add_edge(START, "call_model")
    builder.add_edge("call_model", END)
    return builder
