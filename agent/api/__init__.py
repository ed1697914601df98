"""The HTTP API: a FastAPI app over one `ChatAgent` (see `agent.api.app.create_app`)."""

from agent.api.app import create_app

__all__ = ["create_app"]
