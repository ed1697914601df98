"""The compiled agent graph served by `langgraph dev` and LangGraph Server (`langgraph.json`).

Importing this module reads the settings and builds nothing else: models and the
memory stores are created on the first run. The server supplies the checkpointer for
run threads; chat memory and the users' long-term memory live in `AGENT_DATABASE_URL`,
shared with the HTTP app, `ChatAgent` and the CLI.
"""

from agent.runtime import build_graph, open_long_term, open_memory
from agent.settings import Settings
from graphs.resources import Lazy

settings = Settings.from_env()
memory = Lazy(lambda: open_memory(settings))
long_term = Lazy(lambda: open_long_term(settings, memory.get()))
graph = build_graph(settings, memory=memory, long_term=long_term).compile(name="agent")
