"""Running a compiled agent graph in tests: its final state and its custom events."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from graphs.state import Context


def run_graph(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    payload: dict[str, Any],
    *,
    session: str = "s1",
    conversation: str = "c1",
    mode: str = "auto",
    upkeep: str = "inline",
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run one turn (`astream`, subgraphs included) on the run thread `run-<conversation>`,
    its upkeep `inline` or `deferred` (`Context.upkeep`); returns the final top-level state
    and every custom event, in order."""

    async def go() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        events: list[dict[str, Any]] = []
        final: dict[str, Any] = {}
        config: RunnableConfig = {"configurable": {"thread_id": f"run-{conversation}"}}
        context = Context(
            session_id=session,
            conversation_id=conversation,
            mode=cast(Any, mode),
            upkeep=cast(Any, upkeep),
        )
        stream = graph.astream(
            payload, config, context=context, stream_mode=["custom", "values"], subgraphs=True
        )
        async for namespace, stream_mode, chunk in stream:
            if stream_mode == "custom":
                events.append(cast(dict[str, Any], chunk))
            elif not namespace:
                final = cast(dict[str, Any], chunk)
        return final, events

    return asyncio.run(go())


def run_upkeep(
    upkeep: CompiledStateGraph[Any, Any, Any, Any], *, session: str = "s1", conversation: str = "c1"
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the upkeep graph on its own for a conversation, as a caller does after a
    deferred turn; returns its output and every custom event, in order."""
    events: list[dict[str, Any]] = []
    output: dict[str, Any] = {}
    context = Context(session_id=session, conversation_id=conversation)
    for mode, chunk in upkeep.stream({}, context=context, stream_mode=["custom", "values"]):
        if mode == "custom":
            events.append(cast(dict[str, Any], chunk))
        else:
            output = cast(dict[str, Any], chunk)
    return output, events
