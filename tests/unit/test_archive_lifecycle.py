"""The archive's lifecycle through `ChatAgent`: forgetting a preference forgets where
it was learnt, a revocation too; the search tool and `search_conversations` see only
the session's own lines; `forget_history` empties the archive; the retention sweep
removes idle conversations' lines (both backends)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent, InvalidRequest
from agent.cli.commands import Command, UsageError, parse_command
from agent.offline import OfflineChatModel
from agent.settings import Settings
from memory.schema import ThreadState, utcnow
from memory.turns import chat_turn

PREFERENCE = "I prefer green tea over coffee"
SAID = f"Remember that {PREFERENCE}."


def send(agent: ChatAgent, text: str, **where: Any) -> Any:
    """A turn, with the memory upkeep after it paid (the sequence is the test's)."""
    result = agent.send(text, **where)
    assert agent.wait_for_upkeep(30)
    return result


def archived_user_texts(agent: ChatAgent) -> list[str]:
    """The texts of the archive's user lines, read from its table (search leaves redacted
    lines out)."""
    return archived_texts(agent, "WHERE role = 'user'")


def archived_texts(agent: ChatAgent, where: str = "") -> list[str]:
    """The texts of the archive's lines (`where`: which), read from its table."""
    found: list[str] = []

    def read(cursor: Any) -> None:
        sql = f"SELECT text FROM archive_lines {where} ORDER BY id"
        rows = cursor.execute(sql).fetchall()  # PostgreSQL's cursor reads dicts
        found.extend(row["text"] if isinstance(row, dict) else row[0] for row in rows)

    agent.memory.threads.put_many({}, also=read)
    return found


def context_text(model: OfflineChatModel) -> str:
    return "\n".join(m.text for m in model.calls[-1][:-1])


def test_a_forgotten_preference_is_never_recalled_again(
    open_agent: Callable[..., ChatAgent],
) -> None:
    model = OfflineChatModel(record=True)
    agent = open_agent(model)
    send(agent, SAID, session_id="s1", create_conversation=True)
    (item,) = agent.memories(session_id="s1")["memories"]
    send(agent, "Which green tea would suit me?", session_id="s1", create_conversation=True)
    assert PREFERENCE in context_text(model)

    agent.forget(item["id"], session_id="s1")
    send(agent, "Which green tea would suit me?", session_id="s1", create_conversation=True)
    assert "green tea over coffee" not in context_text(model)
    assert all("coffee" not in h["text"] for h in agent.search_conversations(
        "green tea coffee", session_id="s1"))  # fmt: skip


def test_forgetting_reaches_every_line_however_many(
    open_agent: Callable[..., ChatAgent],
) -> None:
    # more lines repeat the item than any search reads (the archive is read a page at a
    # time, by the lines' texts): none is left, to search or to recall
    agent = open_agent(OfflineChatModel(record=True), long_term_memory="off")
    memory, days = agent.memory, 130
    memory.accept_draft("s1", "c0")
    for day in range(days):
        turn = chat_turn(f"I love jazzberry jam. Day {day}.", f"Jazzberry jam again, day {day}!")
        assert memory.write_turn("s1", "c0", turn).written
    assert len(agent.search_conversations("jazzberry", session_id="s1", limit=50)) == 50
    item = agent.remember("I love jazzberry jam", session_id="s1")
    agent.forget(item["id"], session_id="s1")
    texts = archived_texts(agent)
    assert len(texts) >= 2 * days and not any("jazzberry" in text.casefold() for text in texts)
    assert agent.search_conversations("jazzberry", session_id="s1") == []
    recalled = memory.recall("s1", "new", "what jam did I say I love?", ThreadState())
    assert all("jazzberry" not in line.text.casefold() for line in recalled.lines)


def test_forget_all_forgets_the_lines_too(open_agent: Callable[..., ChatAgent]) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    send(agent, SAID, session_id="s1", create_conversation=True)
    assert agent.forget_all(session_id="s1") == 1
    assert agent.search_conversations("coffee", session_id="s1") == []


def test_forget_that_forgets_the_statement(open_agent: Callable[..., ChatAgent]) -> None:
    model = OfflineChatModel(record=True)
    agent = open_agent(model)
    send(agent, "Remember that I love spicy food", session_id="s1", create_conversation=True)
    assert [m["text"] for m in agent.memories(session_id="s1")["memories"]] == ["I love spicy food"]
    send(agent, "Forget that I love spicy food", session_id="s1", create_conversation=True)
    assert agent.memories(session_id="s1")["memories"] == []
    send(agent, "Any spicy food for dinner?", session_id="s1", create_conversation=True)
    assert "I love spicy food" not in context_text(model)


def test_search_is_the_sessions_own_and_checks_its_input(
    open_agent: Callable[..., ChatAgent],
) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    mine = send(agent, "The boat is called Marisol", session_id="s1", create_conversation=True)
    send(agent, "The boat is called Esperanza", session_id="s2", create_conversation=True)
    hits = agent.search_conversations("boat", session_id="s1")
    assert {h["conversationId"] for h in hits} == {mine.conversation_id}
    assert all("Esperanza" not in h["text"] for h in hits)
    for bad in ("", "   ", "x" * 501):
        with pytest.raises(InvalidRequest):
            agent.search_conversations(bad, session_id="s1")
    with pytest.raises(InvalidRequest):
        agent.search_conversations("boat", session_id="s1", limit=0)


def test_the_offline_model_searches_when_asked_what_was_said(
    open_agent: Callable[..., ChatAgent],
) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    send(agent, "My boat Marisol is moored in Vigo", session_id="s1", create_conversation=True)
    send(agent, "My boat Esperanza is moored in Porto", session_id="s2", create_conversation=True)
    english = send(
        agent, "What did I say about my boat?", session_id="s1", create_conversation=True
    )
    assert english.route == "tool"
    assert "In our earlier conversations I found" in english.text
    # the tool's quoted records read back as words: date, title, speaker and text
    assert re.search(
        r"^- \d{4}-\d\d-\d\d · My boat Marisol is moored in Vigo · you: "
        r"My boat Marisol is moored in Vigo$",
        english.text,
        re.MULTILINE,
    )
    assert "Marisol" in english.text and "Esperanza" not in english.text
    send(agent, "我每天早上喝两杯咖啡", session_id="s1", create_conversation=True)
    chinese = send(agent, "当时我们聊过咖啡吗？", session_id="s1", create_conversation=True)
    assert chinese.route == "tool" and "我每天早上喝两杯咖啡" in chinese.text


DECISION = "Decision: we deploy the billing service on Tuesdays, after the smoke tests pass."


def test_the_search_tool_finds_what_compaction_folded_and_never_the_recent_window(
    open_agent: Callable[..., ChatAgent],
) -> None:
    # two turns after compaction folded the decision out of view, asking for it in the
    # same conversation finds it; a line still in view is never a result of the tool,
    # and user-facing search returns every matching line of the session
    agent = open_agent(OfflineChatModel(record=True))
    first = send(agent, DECISION, session_id="s1", create_conversation=True)
    where = {"session_id": "s1", "conversation_id": first.conversation_id}
    for text in ("The ficus needs water weekly.", "Order new chairs.", "The printer is broken."):
        send(agent, text, **where)
    send(agent, "Deployments also need a changelog entry.", **where)
    state = agent.memory.read_memory("s1", first.conversation_id)
    assert DECISION not in [m.text for m in state.messages]  # folded
    assert "Deployments also need a changelog entry." in [m.text for m in state.messages]
    asked = send(agent, "Remind me what we said about deployments?", **where)
    assert asked.route == "tool" and DECISION in asked.text
    assert "changelog" not in asked.text
    everything = {h["text"] for h in agent.search_conversations("deployments", session_id="s1")}
    assert {DECISION, "Deployments also need a changelog entry."} <= everything


def test_the_search_tool_answers_from_view_what_is_still_in_view(
    open_agent: Callable[..., ChatAgent],
) -> None:
    # asked two turns after saying it, the line is still in view: the tool says so and
    # gives it, instead of "nothing said earlier matches"
    agent = open_agent(OfflineChatModel(record=True))
    first = send(
        agent, "Deployments need a changelog entry.", session_id="s1", create_conversation=True
    )
    where = {"session_id": "s1", "conversation_id": first.conversation_id}
    send(agent, "Order new chairs.", **where)
    asked = send(agent, "Remind me what we said about deployments?", **where)
    assert asked.route == "tool"
    assert "Nothing said earlier matches" not in asked.text
    assert "still among this conversation's recent messages" in asked.text
    assert "Deployments need a changelog entry." in asked.text


def test_recall_brings_the_conversations_folded_lines_never_its_recent_ones(
    open_agent: Callable[..., ChatAgent],
) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    memory = agent.memory
    memory.accept_draft("s1", "c1")
    for text in (DECISION, "Order new chairs.", "Deployments also need a changelog entry."):
        assert memory.write_turn("s1", "c1", chat_turn(text, "Noted.")).written
    stored = memory.read_memory("s1", "c1")
    window = stored.model_copy(update={"messages": stored.messages[-2:]})  # the rest folded
    found = [
        line.text
        for line in memory.recall("s1", "c1", "what did we decide about deploying?", window).lines
    ]
    assert DECISION in found and "Deployments also need a changelog entry." not in found


def test_forget_history_empties_the_archive_only(open_agent: Callable[..., ChatAgent]) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    first = send(agent, SAID, session_id="s1", create_conversation=True)
    assert agent.forget_history(session_id="s1") == 2
    assert agent.search_conversations("tea", session_id="s1") == []
    assert agent.memories(session_id="s1")["memories"]  # long-term items stay
    assert agent.hydrate(session_id="s1", conversation_id=first.conversation_id)["messages"]


def test_the_sweep_removes_lines_of_conversations_idle_past_retention(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    settings = Settings(data_dir=tmp_path / "d", retention_days=30)
    agent = open_agent(OfflineChatModel(record=True), settings=settings)
    send(agent, "The boat is called Marisol", session_id="s1", create_conversation=True)
    assert agent.sweep(now=utcnow() + timedelta(days=29))["archivedLines"] == 0
    assert agent.search_conversations("Marisol", session_id="s1")
    assert agent.sweep(now=utcnow() + timedelta(days=31))["archivedLines"] == 2
    assert agent.search_conversations("Marisol", session_id="s1") == []


@pytest.mark.parametrize(
    ("secret", "word"),
    [
        ("password是abc123XYZq", "abc123xyzq"),
        ("my bank login is jsmith / P@ssw0rd!77", "jsmith"),
        ("username jsmith password bluebirds", "bluebirds"),
        ("用户名 zhang_wei，密码 qwerty", "qwerty"),
    ],
)
def test_a_password_in_any_phrasing_is_refused_and_archived_redacted(
    open_agent: Callable[..., ChatAgent], secret: str, word: str
) -> None:
    agent = open_agent(OfflineChatModel(record=True))
    with pytest.raises(InvalidRequest, match="secrets are never remembered"):
        agent.remember(secret, session_id="s1")
    send(agent, secret, session_id="s1", create_conversation=True)
    assert agent.memories(session_id="s1")["memories"] == []
    assert agent.search_conversations(word, session_id="s1") == []
    assert archived_user_texts(agent) == ["[redacted]"]


def test_the_cli_parses_search() -> None:
    assert parse_command("/search boat name") == Command("search", text="boat name")
    with pytest.raises(UsageError):
        parse_command("/search")


def test_forgetting_two_items_never_brings_back_the_first(
    open_agent: Callable[..., ChatAgent],
) -> None:
    # the second item's plan reads the answer the first one forgot whole: it must not
    # write back a copy of it with only the second item's sentence forgotten
    agent = open_agent(OfflineChatModel(record=True), long_term_memory="off")
    memory = agent.memory
    memory.accept_draft("s1", "c1")
    turn = chat_turn(
        "I love jazzberry jam and I live in Lisbon",
        "Jazzberry jam it is. Lisbon is lovely in spring.",
        user_message_id="t1-u",
        assistant_message_id="t1-a",
    )
    assert memory.write_turn("s1", "c1", turn).written
    first = agent.remember("I love jazzberry jam", session_id="s1")
    second = agent.remember("I live in Lisbon", session_id="s1")
    agent.forget_all(session_id="s1")
    texts = archived_texts(agent)
    assert {first["id"], second["id"]} and not any(
        "jazzberry" in text.casefold() or "lisbon" in text.casefold() for text in texts
    ), texts
