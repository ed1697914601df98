"""Long-term memory through `ChatAgent` without an extraction model: what is asked to be
remembered is recalled across conversations and never across sessions, forgetting takes
effect on the very next turn, secrets are refused on every path, the memory event counts
the changes, and faults only degrade the turn."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from agent import ChatAgent, InvalidRequest, MemoryNotFound
from memory.context import LONG_TERM_BLOCK_ID
from tests.fakes import ScriptedModel
from tests.unit.longterm_agent_support import (
    chat_model,
    long_term_block,
    memory_texts,
    new_chat,
    settled,
)

pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def model() -> ScriptedModel:
    return chat_model()


@pytest.fixture
def agent(open_agent: Callable[..., ChatAgent], model: ScriptedModel) -> ChatAgent:
    return open_agent(model, long_term_memory="explicit")


def test_a_preference_said_in_one_conversation_is_in_the_next(
    agent: ChatAgent, model: ScriptedModel
) -> None:
    first = new_chat(agent, "alice", "Remember that I prefer short answers.")
    # the turn was done before its upkeep: what it remembered comes after
    assert (first.upkeep, first.remembered) == ("pending", ())
    assert memory_texts(agent, "alice") == ["I prefer short answers"]
    assert long_term_block(model.calls[-1]) is None  # said in this very turn: not yet known
    new_chat(agent, "alice", "Explain recursion")
    context = model.calls[-1]
    block = long_term_block(context)
    assert block is not None and "[fact] I prefer short answers" in block
    # order: system prompt, long-term block, …, the new input last
    assert context[0].id is None and context[1].id == LONG_TERM_BLOCK_ID
    assert context[-1].content == "Explain recursion"
    # another session never sees it: not in its context, not in its list
    new_chat(agent, "mallory", "Explain recursion")
    assert long_term_block(model.calls[-1]) is None
    assert agent.memories(session_id="mallory") == {"memories": [], "limit": 100}
    (item,) = agent.memories(session_id="alice")["memories"]
    assert set(item) == {
        "id",
        "kind",
        "text",
        "importance",
        "createdAt",
        "updatedAt",
        "conversationId",
        "provenance",
    }
    assert item["conversationId"] == first.conversation_id
    assert item["provenance"]["conversationId"] == first.conversation_id
    assert item["provenance"]["quote"] == "I prefer short answers"
    # an ordinary sentence, offline, is left to episodic recall
    new_chat(agent, "alice", "I'm vegetarian and I live in Lisbon.")
    assert memory_texts(agent, "alice") == ["I prefer short answers"]


def test_a_revoked_preference_leaves_no_trace_in_storage_or_context(
    agent: ChatAgent, model: ScriptedModel
) -> None:
    cid = new_chat(agent, "s", "Remember that I prefer Chinese answers").conversation_id
    said = "Forget that I prefer Chinese answers. Remember that I want English answers."
    settled(agent, said, "s", cid)
    assert memory_texts(agent, "s") == ["I want English answers"]
    settled(agent, "hello", "s", cid)
    block = long_term_block(model.calls[-1])
    assert block is not None and "English" in block and "Chinese" not in block


def test_forgetting_takes_effect_on_the_very_next_turn(
    agent: ChatAgent, model: ScriptedModel
) -> None:
    cid = new_chat(agent, "s", "Please remember that I am vegetarian.").conversation_id
    (item,) = agent.memories(session_id="s")["memories"]
    with pytest.raises(MemoryNotFound):
        agent.forget(item["id"], session_id="other")
    agent.forget(item["id"], session_id="s")
    agent.send("what should I cook?", session_id="s", conversation_id=cid)
    assert long_term_block(model.calls[-1]) is None
    assert agent.memories(session_id="s")["memories"] == []
    with pytest.raises(MemoryNotFound):
        agent.forget(item["id"], session_id="s")
    agent.remember("I like jazz", session_id="s")
    agent.remember("Call me Sam", session_id="s")
    assert agent.forget_all(session_id="s") == 2
    assert agent.memories(session_id="s")["memories"] == []


def test_one_off_requests_store_nothing_and_repeats_store_one(agent: ChatAgent) -> None:
    cid = new_chat(agent, "s", "Translate this into English: bonjour").conversation_id
    for _ in range(3):
        settled(agent, "Remember that I am allergic to peanuts", "s", cid)
    assert [m["text"] for m in agent.memories(session_id="s")["memories"]] == [
        "I am allergic to peanuts"
    ]


@pytest.mark.parametrize(
    "secret",
    [
        "Remember that my password is hunter2",
        "remember the code word is bluebird",
        "my API key is sk-proj-abcdefghijklmnopqrstu12345, remember it",
        "remember my card 4111 1111 1111 1111",
        "remember my passport number X12345678",
    ],
)
def test_secrets_are_refused_on_every_path(agent: ChatAgent, secret: str) -> None:
    result = new_chat(agent, "s", secret)
    assert result.status == "completed" and result.remembered == ()
    with pytest.raises(InvalidRequest, match="secrets are never remembered"):
        agent.remember(secret, session_id="s")
    assert agent.memories(session_id="s")["memories"] == []


def test_a_secret_beside_something_lasting_keeps_the_rest(agent: ChatAgent) -> None:
    """The skip filter lets the turn through; the gate refuses only the secret."""
    said = "Remember that I am allergic to peanuts. My wifi password is sunflower2024."
    result = new_chat(agent, "s", said)
    assert result.status == "completed"
    texts = memory_texts(agent, "s")
    assert texts == ["I am allergic to peanuts"]
    assert "sunflower2024" not in json.dumps(agent.memories(session_id="s"))


def test_remember_checks_kind_and_text(agent: ChatAgent) -> None:
    with pytest.raises(InvalidRequest, match="kind must be one of"):
        agent.remember("I like jazz", session_id="s", kind="secretive")
    item = agent.remember("I like jazz", session_id="s", kind="preference")
    assert (item["kind"], item["text"], item["conversationId"]) == (
        "preference",
        "I like jazz",
        None,
    )


def test_the_memory_event_counts_what_was_added_and_retired(agent: ChatAgent) -> None:
    async def events(text: str, **where: Any) -> list[Mapping[str, Any]]:
        return [e async for e in agent.astream(text, session_id="s", **where)]

    first = asyncio.run(events("Remember that I prefer Chinese answers", create_conversation=True))
    cid = first[0]["conversationId"]
    said = "Forget that I prefer Chinese answers. Remember that I want English answers."
    second = asyncio.run(events(said, conversation_id=cid))
    # the stream stays open after `done` for the upkeep's events
    names = [(e["event"], e.get("stage")) for e in second]
    done = names.index(("done", None))
    assert done < names.index(("memory", "remember")) and names[-1] == ("memory", "upkeep")
    assert second[done]["result"]["upkeep"] == "pending"
    assert second[done]["result"]["remembered"] == []
    remembered = [e for e in second if e["event"] == "memory" and e["stage"] == "remember"]
    assert [(e["status"], e.get("remembered"), e.get("retired")) for e in remembered] == [
        ("started", None, None),
        ("succeeded", 1, 1),
    ]
    assert second[-1]["status"] == "done"
    assert memory_texts(agent, "s") == ["I want English answers"]


def test_a_failing_store_leaves_the_turn_completed_and_degraded(
    agent: ChatAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OSError("disk gone")

    monkeypatch.setattr(agent.long_term.store, "batch", broken)
    result = new_chat(agent, "s", "Remember that I prefer short answers")
    assert (result.status, result.text, result.memory_written) == ("completed", "ok", True)
    # recall failed: degraded; the upkeep failed after the turn
    assert (result.degraded, result.upkeep, result.remembered) == (True, "pending", ())
    hydration = agent.memory.hydrate("s", result.conversation_id)  # not a catch-up
    assert hydration["upkeep"] == "failed"
    monkeypatch.undo()
    assert agent.memories(session_id="s")["memories"] == []


def test_a_failed_turn_remembers_nothing(open_agent: Callable[..., ChatAgent]) -> None:
    model = ScriptedModel(replies=[RuntimeError("model down")])
    agent = open_agent(model, long_term_memory="explicit")
    result = new_chat(agent, "s", "Remember that I prefer short answers")
    assert result.status == "failed"
    assert agent.memories(session_id="s")["memories"] == []


def test_off_extracts_nothing_but_recalls_what_was_added(
    open_agent: Callable[..., ChatAgent],
) -> None:
    model = chat_model()
    agent = open_agent(model, long_term_memory="off")
    new_chat(agent, "s", "I prefer short answers")
    assert agent.memories(session_id="s")["memories"] == []
    agent.remember("I prefer short answers", session_id="s")
    new_chat(agent, "s", "hello")
    assert "I prefer short answers" in (long_term_block(model.calls[-1]) or "")


def test_rules_is_a_deprecated_alias_of_explicit(open_agent: Callable[..., ChatAgent]) -> None:
    with pytest.warns(DeprecationWarning, match="'rules' is deprecated"):
        agent = open_agent(chat_model(), long_term_memory="rules")
    cid = new_chat(agent, "s", "I'm vegetarian and I live in Lisbon.").conversation_id
    assert memory_texts(agent, "s") == []  # no rules judge an ordinary sentence
    settled(agent, "记住我住在里斯本。Remember that I'm vegetarian.", "s", cid)
    assert sorted(memory_texts(agent, "s")) == ["I'm vegetarian", "我住在里斯本"]
