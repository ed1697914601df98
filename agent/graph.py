"""The compiled agent graph served by `langgraph dev` and LangGraph Server (`langgraph.json`).

Importing this module reads the settings and builds nothing else: models and the
memory store are created on the first run, off the event loop. The server supplies
the checkpointer for run threads; chat memory lives in `AGENT_DATABASE_URL`.
"""

from agent.runtime import build_default_graph
from agent.settings import Settings

graph = build_default_graph(Settings.from_env()).compile(name="agent")
