"""Shared by the tests that drive the agent graph through `ChatOpenAI` against the local
OpenAI-compatible stub: settings, one turn's run, and what the provider was sent."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from agent.models import load_chat_model, load_compaction_model
from agent.settings import Settings, StructuredOutputMethod
from agent.tools import BUILTIN_TOOLS
from graphs.agent import build_agent_graph
from graphs.state import Context
from memory.conversations import ConversationMemory
from tests.openai_stub import OpenAIStub

CHAT_MODEL = "stub-chat"
COMPACTION_MODEL = "stub-compact"
SESSION = "s1"
CONVERSATION = "c1"

Graph = CompiledStateGraph[Any, Any, Any, Any]


def settings_for(stub: OpenAIStub, method: StructuredOutputMethod = "json_schema") -> Settings:
    return Settings(
        openai_api_key="test-key",
        openai_base_url=stub.base_url,
        model=CHAT_MODEL,
        compaction_model=COMPACTION_MODEL,
        max_retries=0,
        request_timeout=10,
        structured_output_method=method,
    )


def compile_graph(settings: Settings, memory: ConversationMemory) -> Graph:
    model: BaseChatModel = load_chat_model(settings)
    compaction_model: BaseChatModel = load_compaction_model(settings)
    return build_agent_graph(
        model=model,
        compaction_model=compaction_model,
        memory=memory,
        tools=BUILTIN_TOOLS,
        structured_output_method=settings.structured_output_method,
    ).compile(checkpointer=InMemorySaver())


def run_config() -> RunnableConfig:
    return {"configurable": {"thread_id": f"run-{CONVERSATION}"}}


def run_context() -> Context:
    return Context(session_id=SESSION, conversation_id=CONVERSATION, mode="auto")


def run(graph: Graph, message: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One turn: the final output and the custom events."""

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        events: list[dict[str, Any]] = []
        final: dict[str, Any] = {}
        stream = graph.astream(
            {"message": message},
            run_config(),
            context=run_context(),
            stream_mode=["custom", "values"],
            subgraphs=True,
        )
        async for namespace, mode, chunk in stream:
            if mode == "custom":
                events.append(cast(dict[str, Any], chunk))
            elif not namespace:
                final = cast(dict[str, Any], chunk)
        return final, events

    return asyncio.run(go())


def wire(request: dict[str, Any]) -> list[tuple[str, str]]:
    """The (role, content) pairs of a recorded request's messages."""
    return [(m["role"], m["content"]) for m in request["messages"]]


def tool_names(request: dict[str, Any]) -> set[str]:
    return {tool["function"]["name"] for tool in request.get("tools", [])}


def stored(memory: ConversationMemory) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in memory.read_memory(SESSION, CONVERSATION).messages]
