"""App factory for HTTP tests: the real app over a `ChatAgent` with a paced model.

`uvicorn --factory tests.integration.http_app:create` (settings from the environment).
"""

from fastapi import FastAPI

from agent.server import create_app
from agent.service import ChatAgent
from tests.fakes import PacedModel


def create() -> FastAPI:
    return create_app(ChatAgent(model=PacedModel(slow_pause=0.3)))
