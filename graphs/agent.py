"""The agent graph: `load_memory -(route)→ {chat, tool, …} → finalize`, and the memory
upkeep `upkeep → embed → remember → compact → settle`, reached from `finalize` (inline)
or from START (`{"catch_up": true}`, a run of its own after the turn).

`build_agent_graph` takes its collaborators (models, tools, the memory) and returns
an uncompiled `StateGraph`; callers compile it with their checkpointer. The module-
level graph for `langgraph dev` lives with the application wiring (`agent/graph.py`),
so that this package never reaches up into `agent/`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from typing_extensions import TypedDict

from graphs.chat import build_chat_graph
from graphs.events import emit
from graphs.finalize import make_finalize
from graphs.load_memory import make_load_memory
from graphs.prompts import AGENT_SYSTEM_PROMPT
from graphs.request import WORKFLOW_ROUTES
from graphs.resources import Lazy
from graphs.state import AgentInput, AgentOutput, AgentState, Context, Node, WorkflowInput
from graphs.tool import DEFAULT_MAX_TOOL_ROUNDS, build_tool_graph
from graphs.upkeep import (
    make_compact,
    make_embed,
    make_remember,
    make_settle,
    make_upkeep,
    route_entry,
)
from memory.budget import ContextBudget
from memory.conversations import ConversationMemory
from memory.longterm import RULES_EXTRACTOR, Extractor, model_extractor, structured_extractor
from memory.longterm.store import LongTermMemory

AgentGraph = StateGraph[AgentState, Context, AgentInput, AgentOutput]
Workflow = CompiledStateGraph[Any, Any, Any, Any]
Extraction = Literal["rules", "model", "off"]


def extractor_for(
    extraction: Extraction, model: Lazy[BaseChatModel], method: str | None
) -> Lazy[Extractor] | None:
    """The long-term extractor of `extraction` (None for `off`); the model's is built on
    first use, and its raw output never streams (memory internals)."""
    if extraction == "off":
        return None
    if extraction == "rules":
        return Lazy.of(RULES_EXTRACTOR)
    return Lazy(
        lambda: model_extractor(
            structured_extractor(model.get(), method).with_config(tags=[TAG_NOSTREAM])
        )
    )


class ChatOutcome(TypedDict):
    """What `route_after_chat` reads: the turn's messages, not the whole state."""

    turn_messages: list[AnyMessage]


def route_after_chat(state: ChatOutcome) -> Literal["tool", "finalize"]:
    """A tool request from the chat model continues the turn in the tool subgraph, and
    the new route is announced (in the main graph, so every stream client sees it)."""
    last = state["turn_messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        emit("route", route="tool")
        return "tool"
    return "finalize"


def build_agent_graph(
    *,
    model: BaseChatModel | Lazy[BaseChatModel],
    memory: ConversationMemory | Lazy[ConversationMemory],
    compaction_model: BaseChatModel | Lazy[BaseChatModel] | None = None,
    tools: Sequence[BaseTool] = (),
    structured_output_method: str | None = None,
    system_prompt: str = AGENT_SYSTEM_PROMPT,
    max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
    workflows: Mapping[str, Workflow] | None = None,
    long_term: LongTermMemory | Lazy[LongTermMemory] | None = None,
    extraction: Extraction = "rules",
    budget: ContextBudget | None = None,
) -> AgentGraph:
    """Assemble the agent graph.

    Args:
        model: the chat model, or a `Lazy` that builds it on first use.
        memory: chat memory and registry storage, or a `Lazy` of it.
        compaction_model: structured-output model for compaction (default: `model`).
        tools: tools offered in the tool route and, in auto mode, to the chat model.
        structured_output_method: passed to `with_structured_output` for compaction.
        system_prompt: the first message of every context.
        max_tool_rounds: tool rounds per turn before the model must answer.
        workflows: compiled workflow subgraphs by route (`tasklist`, `delivery`), each
            reading `WorkflowInput` and writing `WorkflowOutput` (graphs/state.py).
        long_term: the users' long-term memory; None leaves it out (no recall, no
            `remember` node).
        extraction: how `remember` extracts: `rules`, `model` (the compaction model,
            structured output) or `off` (recall only, no `remember` node).
        budget: the context budget every turn's context is fitted into, and a new
            message checked against (None: no budget).
    """
    chat_model = Lazy.of(model)
    compactor = chat_model if compaction_model is None else Lazy.of(compaction_model)
    workflows = dict(workflows or {})
    unknown = set(workflows) - set(WORKFLOW_ROUTES)
    if unknown:
        raise ValueError(f"unknown workflow routes: {sorted(unknown)}")
    routes = frozenset({"chat", *(["tool"] if tools else []), *workflows})
    long_term_memory = None if long_term is None else Lazy.of(long_term)
    builder: AgentGraph = StateGraph(
        AgentState, context_schema=Context, input_schema=AgentInput, output_schema=AgentOutput
    )
    chat_memory = Lazy.of(memory)
    # load_memory goes to the turn's route (decided once, with the request): its
    # destinations are declared for Studio
    builder.add_node(
        "load_memory",
        make_load_memory(chat_memory, routes, system_prompt, long_term_memory, budget),
        destinations=tuple(sorted(routes)),
    )
    _add_routes(builder, chat_model, tools, max_tool_rounds, workflows)
    extractor = extractor_for(extraction, compactor, structured_output_method)
    remember = None
    if long_term_memory is not None and extractor is not None:
        remember = make_remember(long_term_memory, extractor, chat_memory)
    _add_upkeep(builder, chat_memory, remember, compactor, structured_output_method)
    return builder


def _add_routes(
    builder: AgentGraph,
    model: Lazy[BaseChatModel],
    tools: Sequence[BaseTool],
    max_tool_rounds: int,
    workflows: Mapping[str, Workflow],
) -> None:
    """The routes a turn takes after `load_memory`, each ending at `finalize`."""
    builder.add_node("chat", build_chat_graph(model=model, tools=tools).compile(name="chat"))
    if tools:
        tool_graph = build_tool_graph(model=model, tools=tools, max_rounds=max_tool_rounds)
        builder.add_node("tool", tool_graph.compile(name="tool"))
        builder.add_conditional_edges("chat", route_after_chat)
        builder.add_edge("tool", "finalize")
    else:
        builder.add_edge("chat", "finalize")
    for name, workflow in sorted(workflows.items()):
        # only the workflow input reaches the subgraph (its first checkpoint stores what it
        # is given): never the memory context, which stays out of every checkpoint
        builder.add_node(name, workflow, input_schema=WorkflowInput)
        builder.add_edge(name, "finalize")


def _add_upkeep(
    builder: AgentGraph,
    chat_memory: Lazy[ConversationMemory],
    remember: Node | None,
    compactor: Lazy[BaseChatModel],
    structured_output_method: str | None,
) -> None:
    """`finalize`, and the upkeep a turn leaves owed: paid after `finalize` in the same
    run, or in a run of its own that starts at `upkeep` once the caller's turn is done.
    `finalize` and `upkeep` go on with `Command`: their destinations are declared."""
    remembers = remember is not None
    builder.add_node(
        "finalize", make_finalize(chat_memory, remember=remembers), destinations=("upkeep", END)
    )
    after_embed = ("remember", "compact", "settle") if remembers else ("compact", "settle")
    builder.add_node(
        "upkeep", make_upkeep(chat_memory, remember=remembers), destinations=("embed", *after_embed)
    )
    # reached only when the record owes a vector: with embeddings, after every turn
    builder.add_node("embed", make_embed(chat_memory, remember=remembers), destinations=after_embed)
    if remember is not None:
        builder.add_node("remember", remember, destinations=("compact", "settle"))
    builder.add_node("compact", make_compact(chat_memory, compactor, structured_output_method))
    builder.add_node("settle", make_settle(chat_memory))
    builder.add_conditional_edges(START, route_entry)
    builder.add_edge("compact", "settle")
    builder.add_edge("settle", END)
