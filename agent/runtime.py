"""The application's one wiring point: settings and explicit collaborators → an agent's
stores and graphs (`assemble`), for `ChatAgent` and `langgraph dev` (`agent/graph.py`)
alike; only the checkpointer the graph is compiled with differs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool

from agent.local_model import endpoint_settings, serve
from agent.models import (
    RecentEmbeddings,
    at_temperature_zero,
    load_chat_model,
    load_compaction_model,
    load_embeddings,
    token_counter,
)
from agent.offline import OfflineChatModel
from agent.run_ids import scrub_run_ids
from agent.search_tool import search_conversations_tool
from agent.settings import LongTermMode, Settings
from agent.tools import BUILTIN_TOOLS
from graphs.agent import AgentGraph, Compiled, Extraction, build_agent_graph, build_upkeep
from graphs.decisions import Validator
from graphs.delivery import build_delivery_graph
from graphs.structured import StructuredPolicy
from graphs.tasklist import REVIEWS as TASKLIST_REVIEWS
from graphs.tasklist import build_tasklist_graph
from memory import ThreadIds, resolve_secret
from memory.archive.archive import open_archive
from memory.archive.embedding import (
    LOCAL,
    LOCAL_DIMS,
    LOCAL_MAX_DISTANCE,
    LOCAL_MODEL,
    ArchiveEmbeddings,
    LocalEmbeddings,
    local_embeddings,
)
from memory.context import ContextBudget
from memory.conversations import ConversationMemory
from memory.longterm.store import LongTermMemory
from memory.storage import open_thread_store

MINUTES_PER_DAY = 24 * 60

REVIEWS: Mapping[str, Validator] = {**TASKLIST_REVIEWS}
"""The decision validators of every workflow's reviews, by interrupt kind."""


def archive_embeddings(settings: Settings) -> ArchiveEmbeddings | None:
    """The archive's embeddings when `AGENT_EMBEDDINGS_MODEL` names a model; `local` has its own
    name, size and distance, and no recent-vector cache (its query and passage forms differ)."""
    if not settings.embeddings_model:
        return None
    if settings.embeddings_model == LOCAL:
        return ArchiveEmbeddings(local_embeddings(), LOCAL_MODEL, LOCAL_DIMS, LOCAL_MAX_DISTANCE)
    return ArchiveEmbeddings(
        RecentEmbeddings(load_embeddings(settings)),
        settings.embeddings_model,
        settings.embeddings_dims,
        settings.embeddings_max_distance,
    )


def relevance_judge(settings: Settings) -> LocalEmbeddings | None:
    """The local model whose query embedding the relevance judge reads: whatever ranks
    (lexical by default, an endpoint's model, the local one: then the same instance, and
    a message is embedded once), unless `AGENT_EMBEDDINGS_MODEL=none`."""
    return local_embeddings() if settings.judges_relevance else None


def open_memory(
    settings: Settings, *, database_url: str | None = None, secret: str | None = None
) -> ConversationMemory:
    """The memory store under the session secret, with the archive of past turns (its
    lines embedded when `AGENT_EMBEDDINGS_MODEL` is set). The secret is resolved first,
    so a bad one opens nothing; `UnsupportedDatabaseUrl` when the database cannot index
    the embeddings asked for."""
    ids = ThreadIds(resolve_secret(secret or settings.secret, settings.data_dir))
    embeddings = archive_embeddings(settings)
    url = database_url or settings.database_url
    threads = open_thread_store(url, vectors=embeddings is not None)
    try:
        archive = open_archive(
            threads,
            ids,
            recall_tokens=settings.recall_tokens,
            embeddings=embeddings,
            judge=relevance_judge(settings),
        )
    except BaseException:
        threads.close()
        raise
    return ConversationMemory(threads, ids, archive=archive)


def open_long_term(settings: Settings, memory: ConversationMemory) -> LongTermMemory:
    """The users' long-term memory in `memory`'s database, with the store's vector index
    when `AGENT_EMBEDDINGS_MODEL` is set, and the TTL of `AGENT_MEMORY_TTL_DAYS`."""
    index: Any = None
    if settings.embeddings_model and not _items_stay_lexical(settings, memory):
        # the archive's client: a message both recalls look up is embedded once
        archive = memory.archive.embeddings
        embed = archive.embeddings if archive is not None else load_embeddings(settings)
        dims = archive.dims if archive is not None else settings.embeddings_dims
        index = {"dims": dims, "embed": embed, "fields": ["text"]}
    ttl_minutes = settings.memory_ttl_days * MINUTES_PER_DAY or None
    # recall itself refreshes the TTL (`LongTermMemory.recall_with_changes`), not every read;
    # an expired item is gone for every read at once, not only after the hourly sweep
    ttl: Any = {"default_ttl": ttl_minutes, "refresh_on_read": False, "omit_expired": True}
    store = memory.threads.open_items(index=index, ttl=ttl if ttl_minutes else None)
    return LongTermMemory(
        store,
        memory.threads.locks,
        memory.ids,
        semantic=index is not None,
        ttl_minutes=ttl_minutes,
        lock_timeout=memory.threads.lock_timeout,
    )


def _items_stay_lexical(settings: Settings, memory: ConversationMemory) -> bool:
    """Whether long-term items go without a vector index although embeddings are set:
    with `local` on a PostgreSQL server without pgvector (the archive keeps its vectors
    in its own table there; LangGraph's store can only index with pgvector). An
    endpoint's model still asks for the index, and fails to start without it."""
    documents: Any = memory.threads.documents
    if settings.embeddings_model != LOCAL or documents.dialect != "postgresql":
        return False
    from memory.storage.postgres.items import has_pgvector

    return not has_pgvector(documents.pool)


def extraction_for(
    mode: LongTermMode, settings: Settings, model: BaseChatModel | None
) -> Extraction:
    """The extractor `mode` names; `auto` is `model` with a real model and `explicit`
    with the offline one (which judges no meaning)."""
    if mode != "auto":
        return mode
    offline = isinstance(model, OfflineChatModel) if model is not None else settings.offline
    return "explicit" if offline else "model"


def workflow_graphs(
    model: BaseChatModel,
    tools: Sequence[BaseTool],
    memory: ConversationMemory,
    method: StructuredPolicy,
) -> dict[str, Compiled]:
    """The workflow subgraphs offered beside chat and tool, by route name; each reads the
    conversation's summary and pins from `memory` as its background."""

    def background(session_id: str, conversation_id: str) -> tuple[str, list[str]]:
        state = memory.read_memory(session_id, conversation_id)
        return state.summary, list(state.pinned_decisions)

    tasklist = build_tasklist_graph(
        model=model, structured_output_method=method, background=background
    )
    delivery = build_delivery_graph(
        model=model, tools=tools, structured_output_method=method, background=background
    )
    return {
        "tasklist": tasklist.compile(name="tasklist"),
        "delivery": delivery.compile(name="delivery"),
    }


def _nothing() -> None:
    """Nothing to let go of: the agent started nothing besides its stores."""


@dataclass(frozen=True)
class Assembly:
    """An agent's parts, open and wired: its stores, its graph (uncompiled: each caller
    compiles it with its saver) and the compiled upkeep graph a caller also runs after a
    turn; `release` lets go of the local model's server, when its owner closes."""

    memory: ConversationMemory
    long_term: LongTermMemory
    budget: ContextBudget
    graph: AgentGraph
    upkeep: Compiled
    structured: StructuredPolicy
    release: Callable[[], None] = _nothing
    batches: bool = False
    """Whether a model extracts (its extraction is batched)."""


def assemble(
    settings: Settings,
    *,
    database_url: str | None = None,
    secret: str | None = None,
    model: BaseChatModel | None = None,
    compaction_model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] | None = None,
    long_term_memory: LongTermMode | None = None,
) -> Assembly:
    """Open the stores and build the graphs of an agent; explicit arguments win over
    `settings`.

    Args:
        model: the chat model (default: `ChatOpenAI` from the settings, else the offline one).
        compaction_model: default: `model` at temperature 0, else `AGENT_COMPACTION_MODEL`
            (default `AGENT_MODEL`).
        tools: the tool route's tools (default: the built-ins and `search_conversations`).
        long_term_memory: the extraction mode (default `AGENT_LONG_TERM_MEMORY`).
    """
    release = _nothing
    if settings.local and model is None:
        # the local model is an endpoint like any other once its server runs
        endpoint, release = serve(settings)
        settings = endpoint_settings(settings, endpoint)
    with contextlib.ExitStack() as on_failure:  # what opened closes again if a step fails
        on_failure.callback(release)
        memory = open_memory(settings, database_url=database_url, secret=secret)
        on_failure.callback(memory.threads.close)
        scrub_run_ids(memory)  # an earlier release's run threads held the raw ids
        long_term = open_long_term(settings, memory)
        chat_model = model or load_chat_model(settings)
        compactor = (
            compaction_model
            or (at_temperature_zero(model) if model is not None else None)
            or load_compaction_model(settings)
        )
        # a structured-output method names an OpenAI-compatible endpoint's dialect: a
        # model that speaks none (the offline one, a scripted one) uses its own
        method = StructuredPolicy(
            settings.structured_output_method, timeout=settings.request_timeout
        )
        extraction = extraction_for(
            long_term_memory or settings.long_term_memory, settings, compaction_model or model
        )
        upkeep = build_upkeep(
            memory=memory,
            compaction_model=compactor,
            structured_output_method=method,
            long_term=long_term,
            extraction=extraction,
        )
        # the default tools add the search of the user's earlier conversations; a workflow
        # runs without it (its steps work on the request, not on the user's history)
        tool_list = BUILTIN_TOOLS if tools is None else list(tools)
        chat_tools = [*tool_list, search_conversations_tool(memory)] if tools is None else tool_list
        # counted by the model's own local counter if it has one
        budget = ContextBudget(settings.context_budget_tokens, token_counter(model))
        graph = build_agent_graph(
            model=chat_model,
            memory=memory,
            tools=chat_tools,
            structured_output_method=method,
            workflows=workflow_graphs(chat_model, tool_list, memory, method),
            long_term=long_term,
            extraction=extraction,
            budget=budget,
            upkeep=upkeep,
            call_timeout=settings.call_timeout,
        )
        on_failure.pop_all()
    batches = extraction == "model"
    return Assembly(memory, long_term, budget, graph, upkeep, method, release, batches)
