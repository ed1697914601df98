"""The tool subgraph: the model with tools bound, looping through a ToolNode until it answers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.channels import UntrackedValue
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from typing_extensions import TypedDict

from graphs.chat import ModelNode, announce_tool_calls
from graphs.prompts import FINAL_ANSWER_NUDGE
from graphs.routing import STOP
from graphs.state import MemoryContext
from graphs.text_tool_calls import checked_reply

DEFAULT_MAX_TOOL_ROUNDS = 6


class ToolOutput(TypedDict):
    """What the tool subgraph hands back to the main graph."""

    turn_messages: Annotated[list[AnyMessage], add_messages]
    """This turn's own messages: the user's, tool calls, tool results, answer (appended
    here; the main graph replaces its copy with the result)."""
    degraded: NotRequired[bool]
    """Set when the model wrote a tool call it could not make (replaced)."""


class ToolState(ToolOutput, total=False):
    """State shared with the main graph."""

    context: Annotated[MemoryContext, UntrackedValue(MemoryContext)]
    """The memory context read before the turn's messages (never checkpointed). A tool
    that reads the user's own data takes the session from the run's context
    (`graphs.state.turn_ids`), never from the model's arguments."""


def tool_rounds(state: ToolOutput) -> int:
    """How many times the model asked for tools in this turn."""
    return sum(1 for m in state["turn_messages"] if isinstance(m, AIMessage) and m.tool_calls)


def pending_tool_calls(state: ToolOutput) -> bool:
    """Whether the last message is a tool request still to be run."""
    last = state["turn_messages"][-1] if state["turn_messages"] else None
    return isinstance(last, AIMessage) and bool(last.tool_calls)


def route_tool_entry(state: ToolState) -> Literal["tools", "call_model"]:
    """Run a tool request handed over by the chat node, else ask the model."""
    return "tools" if pending_tool_calls(state) else "call_model"


def route_after_model(state: ToolState) -> Literal["tools", "__end__"]:
    """Loop while the model asks for tools."""
    return "tools" if pending_tool_calls(state) else STOP


def build_tool_graph(
    *,
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    max_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
    timeout: float | None = None,
) -> StateGraph[ToolState, None, ToolState, ToolOutput]:
    """`START → (tools ⇄ call_model) → END`, each model call at most `timeout` seconds; tool
    errors come back to the model (ToolNode's default), and past `max_rounds` rounds it is
    asked, without tools, for its final answer."""
    with_tools = model.bind_tools(list(tools))  # bound once
    names = frozenset(tool.name for tool in tools)

    def call(state: ToolState) -> tuple[Runnable[Any, Any], list[BaseMessage]]:
        """Ask the model, with tools bound, for a tool call or the final answer; past
        `max_rounds` tool rounds, without tools, for the final answer."""
        context = state.get("context") or MemoryContext()
        messages = context.with_turn(state["turn_messages"])
        if tool_rounds(state) >= max_rounds:
            return model, [*messages, HumanMessage(content=FINAL_ANSWER_NUDGE)]
        return with_tools, messages

    def done(state: ToolState, reply: AIMessage) -> ToolOutput:
        last_round = tool_rounds(state) >= max_rounds
        if last_round:
            reply = AIMessage(content=reply.content, id=reply.id)  # never another tool call
        # a call written as text is run as a real one, or never taken for the answer
        reply, degraded = checked_reply(reply, names, may_call=not last_round)
        announce_tool_calls(reply)
        output: ToolOutput = {"turn_messages": [reply]}
        return {**output, "degraded": True} if degraded else output

    builder = StateGraph(ToolState, output_schema=ToolOutput)
    builder.add_node("call_model", ModelNode(call, done, timeout=timeout))
    builder.add_node("tools", ToolNode(list(tools), messages_key="turn_messages"))
    builder.add_conditional_edges(START, route_tool_entry)
    builder.add_conditional_edges("call_model", route_after_model)
    builder.add_edge("tools", "call_model")
    return builder
