"""Forgetting a long-term item takes its text out of everything the session's memory keeps
(messages, summary, pins, titles, run checkpoints and pending writes, every
conversation), so that no later context carries it; on both backends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import AIMessage

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.offline.local import ModelCall
from agent.settings import Settings
from memory.redaction import FORGOTTEN
from tests.context_support import overwrite_memory

ITEM = "I like green tea"
SENT: list[str] = []


class RecordingModel(OfflineChatModel):
    """The offline model (task lists included), recording every text it is sent; a plain
    chat answer repeats the user's words, as an answer listing what it remembers would."""

    def respond(self, call: ModelCall) -> AIMessage:
        SENT.extend(message.text for message in call.messages)
        answer = super().respond(call)
        if answer.tool_calls:
            return answer
        return AIMessage(content=f"answer to: {call.messages[-1].text}")


def stored_values(agent: ChatAgent) -> str:
    """Every memory document, channel value and pending write of every thread, as text."""
    threads = agent.memory.threads
    saver = threads.checkpointer
    parts = [repr(threads.get_many(threads.documents.list_threads("")))]
    for found in saver.list(None):
        parts.append(repr(found.checkpoint["channel_values"]))
        parts.append(repr(found.pending_writes))
    return "\n".join(parts).casefold()


def test_forgetting_redacts_the_text_from_the_session_memory(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", long_term_memory="off")
    agent = open_agent(RecordingModel(), settings=settings)
    chat = agent.send(f"{ITEM}, with honey", session_id="s", create_conversation=True)
    cid = chat.conversation_id
    assert ITEM.casefold() in chat.text.casefold()  # the answer repeats it
    state = agent.memory.read_memory("s", cid)
    overwrite_memory(
        agent.memory,
        "s",
        cid,
        state.model_copy(
            update={"summary": f"The user said: {ITEM.upper()}.", "pinned_decisions": [ITEM]}
        ),
    )
    # a task list waiting for its review holds the text in its run checkpoints
    waiting = agent.send(
        f"/tasklist Plan the party; note: {ITEM}", session_id="s", create_conversation=True
    )
    assert waiting.status == "interrupted"
    agent.send("someone else's words", session_id="other", create_conversation=True)
    item = agent.remember(ITEM, session_id="s")
    agent.remember(ITEM, session_id="other")
    assert ITEM.casefold() in stored_values(agent)

    agent.forget(item["id"], session_id="s")

    assert agent.memories(session_id="s")["memories"] == []
    texts = [m["text"] for m in agent.hydrate(session_id="s", conversation_id=cid)["messages"]]
    assert texts == [f"{FORGOTTEN}, with honey", f"answer to: {FORGOTTEN}, with honey"]
    memory = agent.memory.read_memory("s", cid)
    assert (memory.summary, memory.pinned_decisions) == (
        f"The user said: {FORGOTTEN}.",
        [FORGOTTEN],
    )
    titles = [c["title"] for c in agent.conversations(session_id="s")["conversations"]]
    assert titles and all(ITEM.casefold() not in title.casefold() for title in titles)
    assert ITEM.casefold() not in stored_values(agent)
    # another session's memory is its own
    assert [m["text"] for m in agent.memories(session_id="other")["memories"]] == [ITEM]

    # the paused task list still resumes, and no later context carries the text
    SENT.clear()
    done = agent.resume(
        {"action": "approve"}, session_id="s", conversation_id=waiting.conversation_id
    )
    assert done.status == "completed"
    agent.send("what do I like?", session_id="s", conversation_id=cid)
    assert SENT and not [text for text in SENT if ITEM.casefold() in text.casefold()]


def test_forgetting_all_redacts_every_item(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "data", long_term_memory="off")
    agent = open_agent(RecordingModel(), settings=settings)
    cid = agent.send("I live in Lyon and I like jazz", session_id="s", create_conversation=True)
    for text in ("I live in Lyon", "I like jazz"):
        agent.remember(text, session_id="s")
    assert agent.forget_all(session_id="s") == 2
    texts = [
        m["text"]
        for m in agent.hydrate(session_id="s", conversation_id=cid.conversation_id)["messages"]
    ]
    assert texts == [f"{FORGOTTEN} and {FORGOTTEN}", f"answer to: {FORGOTTEN} and {FORGOTTEN}"]
    assert "lyon" not in stored_values(agent) and "jazz" not in stored_values(agent)
