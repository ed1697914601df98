"""Wiring of the application: settings → models, memory store, tools → the agent graph."""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from agent.models import load_chat_model, load_compaction_model
from agent.settings import Settings
from agent.tools import BUILTIN_TOOLS
from graphs.agent import AgentGraph, Workflow, build_agent_graph
from graphs.delivery import build_delivery_graph
from graphs.resources import Lazy
from graphs.tasklist import build_tasklist_graph
from memory import ConversationMemory, ThreadIds, open_thread_store, resolve_secret


def open_memory(settings: Settings) -> ConversationMemory:
    """Open the memory store named by `AGENT_DATABASE_URL` with the session secret."""
    secret = resolve_secret(settings.secret, settings.data_dir)
    return ConversationMemory(open_thread_store(settings.database_url), ThreadIds(secret))


def workflow_graphs(
    model: BaseChatModel | Lazy[BaseChatModel],
    tools: Sequence[BaseTool],
    structured_output_method: str | None = None,
) -> dict[str, Workflow]:
    """The workflow subgraphs offered beside chat and tool, by route name."""
    method = structured_output_method
    return {
        "tasklist": build_tasklist_graph(model=model, structured_output_method=method).compile(
            name="tasklist"
        ),
        "delivery": build_delivery_graph(
            model=model, tools=tools, structured_output_method=method
        ).compile(name="delivery"),
    }


def assemble_graph(
    *,
    model: BaseChatModel | Lazy[BaseChatModel],
    compaction_model: BaseChatModel | Lazy[BaseChatModel],
    memory: ConversationMemory | Lazy[ConversationMemory],
    tools: Sequence[BaseTool],
    structured_output_method: str | None,
) -> AgentGraph:
    """The agent graph with every route this application offers."""
    return build_agent_graph(
        model=model,
        compaction_model=compaction_model,
        memory=memory,
        tools=tools,
        structured_output_method=structured_output_method,
        workflows=workflow_graphs(model, tools, structured_output_method),
    )


def build_default_graph(
    settings: Settings, *, tools: Sequence[BaseTool] = BUILTIN_TOOLS
) -> AgentGraph:
    """The agent graph with collaborators built from `settings` on first use."""
    return assemble_graph(
        model=Lazy(lambda: load_chat_model(settings)),
        compaction_model=Lazy(lambda: load_compaction_model(settings)),
        memory=Lazy(lambda: open_memory(settings)),
        tools=tools,
        structured_output_method=None if settings.offline else settings.structured_output_method,
    )
