"""The chat subgraph: one model call with the memory context.

In auto mode the model may ask for a tool; the main graph then continues the turn
in the tool subgraph with the tool request as the last message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage
from langchain_core.tools import BaseTool
from langgraph.channels import UntrackedValue
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from graphs.events import emit
from graphs.resources import Lazy
from graphs.state import MemoryContext


class ChatOutput(TypedDict):
    """What the chat subgraph hands back to the main graph."""

    turn_messages: list[AnyMessage]
    """This turn's own messages, the model's reply last (replaced)."""


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
    return [*context.messages, *state["turn_messages"]]


def build_chat_graph(
    *, model: BaseChatModel | Lazy[BaseChatModel], tools: Sequence[BaseTool] = ()
) -> StateGraph[ChatState, None, ChatState, ChatOutput]:
    """`START → call_model → END`.

    Args:
        model: the chat model (or a lazy provider of it).
        tools: offered to the model when `tools_allowed` is set.
    """
    provider = Lazy.of(model)

    async def call_model(state: ChatState) -> ChatOutput:
        """Answer from the memory context, or ask for a tool in auto mode."""
        chat_model = await provider.aget()
        runnable = (
            chat_model.bind_tools(list(tools))
            if tools and state.get("tools_allowed")
            else chat_model
        )
        reply = await runnable.ainvoke(model_input(state))
        if isinstance(reply, AIMessage):
            announce_tool_calls(reply)
        return {"turn_messages": [*state["turn_messages"], reply]}

    builder = StateGraph(ChatState, output_schema=ChatOutput)
    builder.add_node(call_model)
    builder.add_edge(START, "call_model")
    builder.add_edge("call_model", END)
    return builder
