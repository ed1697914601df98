"""App factory for the workers benchmark: the real HTTP app, a zero-latency model.

`uvicorn --factory bench.http_app:create`; settings (database, secret) from the environment.
"""

from fastapi import FastAPI

from agent.api import create_app
from agent.service import ChatAgent
from bench.scripted import ScriptedChatModel


def create() -> FastAPI:
    model = ScriptedChatModel()
    return create_app(lambda: ChatAgent(model=model, compaction_model=model))
