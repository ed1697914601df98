"""The compiled agent graph served by `langgraph dev` and LangGraph Server (`langgraph.json`).

Importing this module reads the settings and builds nothing else: models and the
memory store are created on the first run. The server supplies the checkpointer for
run threads; chat memory lives in `AGENT_DATABASE_URL`.
"""

from agent.runtime import build_graph, open_memory
from agent.settings import Settings
from graphs.resources import Lazy

settings = Settings.from_env()
graph = build_graph(settings, memory=Lazy(lambda: open_memory(settings))).compile(name="agent")
