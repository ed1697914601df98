"""The graphs `langgraph.json` serves: `graph`, the agent, and `memory`, the read-only view
(`graphs.memory_view`). Async factories: importing builds nothing; the first run opens the
stores and builds the models once, in a worker thread (opening a database blocks). The
server checkpoints run threads; memory lives in `AGENT_DATABASE_URL`, shared with the
HTTP app, `ChatAgent` and the CLI.
"""

from __future__ import annotations

import asyncio
import functools
import threading

from agent.runtime import assemble
from agent.settings import Settings
from graphs.agent import Compiled
from graphs.memory_view import build_memory_view_graph

_building = threading.Lock()


@functools.cache
def _assembled() -> tuple[Compiled, Compiled]:
    parts = assemble(Settings.from_env())
    view = build_memory_view_graph(memory=parts.memory, long_term=parts.long_term)
    return parts.graph.compile(name="agent"), view.compile(name="memory")


def _built() -> tuple[Compiled, Compiled]:
    with _building:  # two first runs at once open the stores once
        return _assembled()


async def graph() -> Compiled:
    """The agent graph, assembled from the environment's settings on first use."""
    return (await asyncio.to_thread(_built))[0]


async def memory() -> Compiled:
    """The memory view graph, over the same stores as `graph`."""
    return (await asyncio.to_thread(_built))[1]
