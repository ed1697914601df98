"""The application's one wiring point: settings and explicit collaborators → the agent graph.

`ChatAgent` and the module-level graph of `langgraph dev` (`agent/graph.py`) both
build their graph here, and open their memory here; only where the graph is compiled
differs (the server supplies its own checkpointer for run threads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from agent.models import (
    RecentEmbeddings,
    at_temperature_zero,
    load_chat_model,
    load_compaction_model,
    load_embeddings,
    token_counter,
)
from agent.offline import OfflineChatModel
from agent.search_tool import search_conversations_tool
from agent.settings import LongTermMode, Settings
from agent.tools import BUILTIN_TOOLS
from graphs.agent import AgentGraph, Extraction, Workflow, build_agent_graph
from graphs.decisions import Validator
from graphs.delivery import build_delivery_graph
from graphs.resources import Lazy
from graphs.tasklist import REVIEWS as TASKLIST_REVIEWS
from graphs.tasklist import build_tasklist_graph
from memory import ThreadIds, resolve_secret
from memory.archive.archive import open_archive
from memory.archive.embedding import ArchiveEmbeddings
from memory.budget import ContextBudget
from memory.conversations import ConversationMemory
from memory.longterm.store import LongTermMemory
from memory.storage import open_thread_store

MINUTES_PER_DAY = 24 * 60

REVIEWS: Mapping[str, Validator] = {**TASKLIST_REVIEWS}
"""The decision validators of every workflow's reviews, by interrupt kind."""


def archive_embeddings(settings: Settings) -> ArchiveEmbeddings | None:
    """The archive's embeddings when `AGENT_EMBEDDINGS_MODEL` is set (built, not called)."""
    if not settings.embeddings_model:
        return None
    return ArchiveEmbeddings(
        RecentEmbeddings(load_embeddings(settings)),
        settings.embeddings_model,
        settings.embeddings_dims,
        settings.embeddings_max_distance,
    )


def open_memory(
    settings: Settings, *, database_url: str | None = None, secret: str | None = None
) -> ConversationMemory:
    """The memory store (`AGENT_DATABASE_URL`) under the session secret, with the archive
    of past turns, its lines embedded when `AGENT_EMBEDDINGS_MODEL` is set (SQLite then
    opens with its vector index: sqlean.py with sqlite-vec). The secret is resolved
    first, so a bad one opens nothing. Explicit arguments win.

    Raises:
        UnsupportedDatabaseUrl: embeddings were asked for, and the database cannot index
            them (SQLite without sqlean.py or sqlite-vec installed; PostgreSQL, where the
            archive has no pgvector index), so nothing starts.
    """
    ids = ThreadIds(resolve_secret(secret or settings.secret, settings.data_dir))
    embeddings = archive_embeddings(settings)
    url = database_url or settings.database_url
    threads = open_thread_store(url, vectors=embeddings is not None)
    try:
        archive = open_archive(
            threads, ids, recall_tokens=settings.recall_tokens, embeddings=embeddings
        )
    except BaseException:
        threads.close()
        raise
    return ConversationMemory(threads, ids, archive=archive)


def open_long_term(settings: Settings, memory: ConversationMemory) -> LongTermMemory:
    """The users' long-term memory in the same database as `memory`, with the store's
    vector index when `AGENT_EMBEDDINGS_MODEL` is set and the TTL of
    `AGENT_MEMORY_TTL_DAYS`.

    Raises:
        UnsupportedDatabaseUrl: embeddings were asked for, and the database cannot index
            them (SQLite opened without its vector index, PostgreSQL without pgvector).
    """
    index: Any = None
    if settings.embeddings_model:
        # the archive's client: a message both recalls look up is embedded once
        archive = memory.archive.embeddings
        embed = archive.embeddings if archive is not None else load_embeddings(settings)
        index = {"dims": settings.embeddings_dims, "embed": embed, "fields": ["text"]}
    ttl_minutes = settings.memory_ttl_days * MINUTES_PER_DAY or None
    # the TTL is refreshed by recall itself (`LongTermMemory._refresh`), not on every read;
    # an expired item is gone for every read at once, not only after the hourly sweep
    ttl: Any = (
        None
        if ttl_minutes is None
        else {"default_ttl": ttl_minutes, "refresh_on_read": False, "omit_expired": True}
    )
    store = memory.threads.open_items(index=index, ttl=ttl)
    return LongTermMemory(
        store,
        memory.threads.locks,
        memory.ids,
        semantic=index is not None,
        ttl_minutes=ttl_minutes,
        lock_timeout=memory.threads.lock_timeout,
    )


def extraction_for(
    mode: LongTermMode, settings: Settings, model: BaseChatModel | None
) -> Extraction:
    """The extractor `mode` names; `auto` is `model` with a real model and `rules` with the
    offline one (its extraction would only repeat the rules)."""
    if mode != "auto":
        return mode
    offline = isinstance(model, OfflineChatModel) if model is not None else settings.offline
    return "rules" if offline else "model"


def context_budget(settings: Settings, model: BaseChatModel | None = None) -> ContextBudget:
    """`AGENT_CONTEXT_BUDGET_TOKENS`, counted by `model`'s own local counter if it has one."""
    return ContextBudget(settings.context_budget_tokens, token_counter(model))


def workflow_graphs(
    model: Lazy[BaseChatModel],
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


def build_graph(
    settings: Settings,
    *,
    memory: Lazy[ConversationMemory],
    model: BaseChatModel | None = None,
    compaction_model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] | None = None,
    long_term: Lazy[LongTermMemory] | None = None,
    long_term_memory: LongTermMode | None = None,
    budget: ContextBudget | None = None,
) -> AgentGraph:
    """The agent graph with every route this application offers. Collaborators are
    `Lazy`: importing the module-level graph of `langgraph dev` opens nothing.

    Args:
        settings: where the models not given come from (built on first use).
        memory: the chat memory (`Lazy.of` one already open).
        model: the chat model (default: `ChatOpenAI` from the settings, or the offline
            model without a key).
        compaction_model: the compaction model (default: `model` at temperature 0, else
            the settings' compaction model).
        tools: the tool route's tools (default: the built-in tools and
            `search_conversations`).
        long_term: the users' long-term memory (None: the graph has none).
        long_term_memory: the extraction mode (default `AGENT_LONG_TERM_MEMORY`).
        budget: the context budget (default: `context_budget(settings, model)`).
    """
    chat_model = Lazy.of(model) if model is not None else Lazy(lambda: load_chat_model(settings))
    compactor = (
        Lazy.of(compaction_model)
        if compaction_model is not None
        else Lazy.of(at_temperature_zero(model))
        if model is not None
        else Lazy(lambda: load_compaction_model(settings))
    )
    # a structured-output method names an OpenAI-compatible endpoint's dialect: it
    # applies to models built from the settings, not to models passed in
    method = settings.structured_output_method if model is None and not settings.offline else None
    # the default tools add the search of the user's earlier conversations; a workflow
    # runs without it (its steps work on the request, not on the user's history)
    tool_list = BUILTIN_TOOLS if tools is None else list(tools)
    chat_tools = [*tool_list, search_conversations_tool(memory)] if tools is None else tool_list
    return build_agent_graph(
        model=chat_model,
        compaction_model=compactor,
        memory=memory,
        tools=chat_tools,
        structured_output_method=method,
        workflows=workflow_graphs(chat_model, tool_list, method),
        long_term=long_term,
        extraction=extraction_for(
            long_term_memory or settings.long_term_memory, settings, compaction_model or model
        ),
        budget=budget or context_budget(settings, model),
    )
