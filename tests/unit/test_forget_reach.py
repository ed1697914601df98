"""What a forgetting reaches: the user's own words that stated the item; on both
backends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent import ChatAgent
from memory.longterm import ExtractionOutput, Operation
from tests.fakes import ScriptedModel
from tests.unit.test_forget_redaction import stored_values


def said(agent: ChatAgent, text: str, **where: Any) -> str:
    result = agent.send(text, session_id="s", **(where or {"create_conversation": True}))
    assert agent.wait_for_upkeep(30)
    return result.conversation_id


def listed(agent: ChatAgent) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    found = agent.memories(session_id="s", include_history=True)
    return found["memories"], found["history"]


def add(quote: str, text: str) -> Operation:
    return Operation(op="add", turn=1, quote=quote, text=text, kind="fact")


def test_forgetting_takes_out_the_users_words_that_stated_the_item(
    open_agent: Callable[..., ChatAgent],
) -> None:
    words = "I've been a vegetarian since 2019"
    model = ScriptedModel(
        replies=["Noted."],
        structured=[ExtractionOutput(operations=[add(words, "I am vegetarian")])],
    )
    agent = open_agent(model, long_term_memory="model")
    cid = said(agent, f"Honestly, {words}.")
    ((item,), _) = listed(agent)
    assert item["provenance"]["quote"] == words

    agent.forget(item["id"], session_id="s")

    texts = [m["text"] for m in agent.hydrate(session_id="s", conversation_id=cid)["messages"]]
    assert texts == ["Honestly, [forgotten].", "Noted."]
    titles = [c["title"] for c in agent.conversations(session_id="s")["conversations"]]
    assert titles == ["Honestly, [forgotten]."]
    assert "since 2019" not in stored_values(agent)
    assert agent.search_conversations("vegetarian 2019", session_id="s") == []
