"""The HTTP app instance served by uvicorn and by `langgraph dev` (see `agent.api`).

`uvicorn agent.server:app`, or `"http": {"app": "./agent/server.py:app"}` in
langgraph.json. The agent is opened (settings checked first) in the app's lifespan.
"""

from agent.api import create_app

app = create_app()
