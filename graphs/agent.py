"""The agent graph: one turn, in order.

```
START → load_memory ─(the route)─► chat ─┬─────────► finalize ─┬─► END
                                        └─► tool ─┘            └─► upkeep → END (inline)
                     ├─► tool ─────────────────────┘
                     ├─► tasklist ─────────────────┘
                     └─► delivery ─────────────────┘
```

Callers compile `build_agent_graph` with their checkpointer. The upkeep graph is its
`upkeep` node, and also runs on its own after a caller's turn (`Context.upkeep`). The
application builds what `langgraph dev` serves: this package never reaches up into `agent/`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.chat import chat_node
from graphs.request import WORKFLOW_ROUTES
from graphs.state import AgentInput, AgentOutput, AgentState, Context, WorkflowInput
from graphs.structured import StructuredPolicy
from graphs.tool import build_tool_graph
from graphs.turn import TurnNodes
from graphs.upkeep import build_upkeep_graph, structured_compactor, structured_extractor
from memory.context import ContextBudget
from memory.conversations import ConversationMemory
from memory.longterm.extraction import EXPLICIT_EXTRACTOR, Extractor, model_extractor
from memory.longterm.store import LongTermMemory

AgentGraph = StateGraph[AgentState, Context, AgentInput, AgentOutput]
Compiled = CompiledStateGraph[Any, Any, Any, Any]
Extraction = Literal["explicit", "model", "off", "rules"]
"""`rules` is a deprecated alias of `explicit` (the rules extractor is retired)."""
RULES_DEPRECATED = (
    "long-term memory mode 'rules' is deprecated: it is 'explicit' (only \"remember that "
    '…" and "forget that …" requests add or forget items without a model)'
)


def explicit_only(extraction: Extraction) -> bool:
    """Whether `extraction` reads explicit requests alone (`rules` warns: deprecated)."""
    if extraction == "rules":
        warnings.warn(RULES_DEPRECATED, DeprecationWarning, stacklevel=3)
    return extraction in ("explicit", "rules")


def extractor_for(
    extraction: Extraction, model: BaseChatModel, method: StructuredPolicy | str | None
) -> Extractor | None:
    """The long-term extractor of `extraction` (None: `off`); its raw output never streams."""
    if extraction == "off":
        return None
    if explicit_only(extraction):
        return EXPLICIT_EXTRACTOR
    runnable = structured_extractor(model, method).with_config(tags=[TAG_NOSTREAM])
    return model_extractor(runnable)


def build_upkeep(
    *,
    memory: ConversationMemory,
    compaction_model: BaseChatModel,
    structured_output_method: StructuredPolicy | str | None = None,
    long_term: LongTermMemory | None = None,
    extraction: Extraction = "explicit",
) -> Compiled:
    """The compiled upkeep graph of an agent graph (`graphs.upkeep`): its compaction
    and extraction run on `compaction_model` (structured output, never streamed)."""
    method = structured_output_method
    compactor = structured_compactor(compaction_model, method).with_config(tags=[TAG_NOSTREAM])
    extractor = extractor_for(extraction, compaction_model, method)
    remembers = None if long_term is None or extractor is None else (long_term, extractor)
    stats = method.stats if isinstance(method, StructuredPolicy) else None
    upkeep = build_upkeep_graph(
        memory=memory, compactor=compactor, long_term=remembers, stats=stats
    )
    return upkeep.compile(name="upkeep")


def build_agent_graph(
    *,
    model: BaseChatModel,
    memory: ConversationMemory,
    compaction_model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] = (),
    structured_output_method: StructuredPolicy | str | None = None,
    workflows: Mapping[str, Compiled] | None = None,
    long_term: LongTermMemory | None = None,
    extraction: Extraction = "explicit",
    budget: ContextBudget | None = None,
    upkeep: Compiled | None = None,
    call_timeout: float | None = None,
) -> AgentGraph:
    """Assemble the agent graph.

    Args:
        compaction_model: the model of compaction and extraction (default: `model`).
        tools: tools offered in the tool route and, in auto mode, to the chat model.
        workflows: compiled workflow subgraphs by route (`tasklist`, `delivery`), each
            reading `WorkflowInput` and writing `WorkflowOutput`.
        long_term: the users' long-term memory; None: no recall, no `remember`.
        extraction: `explicit` (explicit requests only; `rules` is its deprecated alias),
            `model` (the compaction model, with the explicit requests) or `off`.
        budget: the context budget every turn's context is fitted into (None: none).
        upkeep: the compiled upkeep graph, when the caller also runs it (default: built here).
        call_timeout: seconds each chat model call may take (None: unbounded).
    """
    workflows = dict(workflows or {})
    unknown = set(workflows) - set(WORKFLOW_ROUTES)
    if unknown:
        raise ValueError(f"unknown workflow routes: {sorted(unknown)}")
    routes = frozenset({"chat", *(["tool"] if tools else []), *workflows})
    if upkeep is None:
        upkeep = build_upkeep(
            memory=memory,
            compaction_model=compaction_model or model,
            structured_output_method=structured_output_method,
            long_term=long_term,
            extraction=extraction,
        )
    nodes = TurnNodes(
        memory,
        routes,
        long_term=long_term,
        budget=budget,
        remembers=long_term is not None and extraction != "off",
        explicit_only=extraction in ("explicit", "rules"),
    )
    builder: AgentGraph = StateGraph(
        AgentState, context_schema=Context, input_schema=AgentInput, output_schema=AgentOutput
    )
    # load_memory goes to the turn's route (decided once, with the request): its
    # destinations are declared for Studio
    builder.add_node(nodes.load_memory, destinations=tuple(sorted(routes)))
    builder.add_edge(START, "load_memory")
    chat = chat_node(model=model, tools=tools, timeout=call_timeout)
    if tools:  # the chat node routes: on to the tool subgraph, or the turn is done
        builder.add_node("chat", chat, destinations=("finalize", "tool"))
        tool = build_tool_graph(model=model, tools=tools, timeout=call_timeout)
        builder.add_node("tool", tool.compile(name="tool"))
        builder.add_edge("tool", "finalize")
    else:
        builder.add_node("chat", chat)
        builder.add_edge("chat", "finalize")
    for name, workflow in sorted(workflows.items()):
        # only the workflow input reaches the subgraph (its first checkpoint stores what it
        # is given): never the memory context, which stays out of every checkpoint
        builder.add_node(name, workflow, input_schema=WorkflowInput)
        builder.add_edge(name, "finalize")
    builder.add_node(nodes.finalize, destinations=("upkeep", END))
    builder.add_node("upkeep", upkeep)
    builder.add_edge("upkeep", END)
    return builder
