"""Shared by the tests of long-term memory through `ChatAgent`: a scripted chat model,
the long-term block it was sent, and turns with the memory upkeep they left owed paid."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, SystemMessage

from agent import ChatAgent
from memory.context import LONG_TERM_BLOCK_ID
from tests.fakes import ScriptedModel


def chat_model() -> ScriptedModel:
    return ScriptedModel(replies=["ok"] * 40)


def long_term_block(context: list[BaseMessage]) -> str | None:
    """The long-term block the model was sent, or None."""
    blocks = [m for m in context if isinstance(m, SystemMessage) and m.id == LONG_TERM_BLOCK_ID]
    return str(blocks[0].content) if blocks else None


def new_chat(agent: ChatAgent, session: str, text: str) -> Any:
    """A first turn, with the memory upkeep it left owed paid."""
    result = agent.send(text, session_id=session, create_conversation=True)
    assert agent.wait_for_upkeep(30)
    return result


def settled(agent: ChatAgent, text: str, session: str, cid: str) -> Any:
    """A turn, with the memory upkeep it left owed paid."""
    result = agent.send(text, session_id=session, conversation_id=cid)
    assert agent.wait_for_upkeep(30)
    return result


def memory_texts(agent: ChatAgent, session: str) -> list[str]:
    return [m["text"] for m in agent.memories(session_id=session)["memories"]]
