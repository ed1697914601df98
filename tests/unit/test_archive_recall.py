"""Recall into the context: the block's place and budget, the offline model reading it,
the `memory` event naming the lines, and a deleted conversation never recalled."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from langchain_core.messages.utils import count_tokens_approximately

from agent import ChatAgent
from agent.offline import OfflineChatModel
from agent.settings import Settings
from memory import ThreadState
from memory.archive import ArchivedLine, Recall
from memory.archive.recall import (
    FRAME_TOKENS,
    LINE_CHARS,
    SHORT_LINE_TERMS,
    by_units,
    choose,
    heading_tokens,
    line_tokens,
    render,
)
from memory.archive.terms import query_terms
from memory.context import (
    LONG_TERM_BLOCK_ID,
    PINNED_BLOCK_ID,
    RECALL_BLOCK_ID,
    SUMMARY_BLOCK_ID,
    ContextBudget,
)
from memory.longterm import MemoryItem
from memory.longterm.items import normalise
from memory.schema import ChatThreadMessage
from memory.text import approximate_tokens
from tests.context_support import build_context

NOW = datetime(2026, 11, 30, tzinfo=UTC)
FACT = "My boat is called Marisol and it is moored in Vigo"


def line(n: int, text: str, role: Any = "user") -> ArchivedLine:
    return ArchivedLine(n, f"c{n}", f"title {n}", f"m{n}-u", role, NOW, text, 1.0)


def recall_of(*texts: str) -> Recall:
    return Recall(tuple((line(n, text),) for n, text in enumerate(texts, start=1)))


def test_the_block_sits_after_long_term_items_and_before_pins() -> None:
    state = ThreadState(summary="S", pinned_decisions=["P"])
    item = MemoryItem(
        id="m_1",
        kind="fact",
        text="I sail",
        importance=3,
        created_at=NOW,
        updated_at=NOW,
        key=normalise("I sail"),
    )
    context = build_context(
        state, "hi", system_prompt="sys", long_term=[item], recalled=recall_of(FACT)
    )
    assert [m.id for m in context[1:5]] == [
        LONG_TERM_BLOCK_ID,
        RECALL_BLOCK_ID,
        PINNED_BLOCK_ID,
        SUMMARY_BLOCK_ID,
    ]
    block = context[2].text
    assert '- 2026-11-30 · "title 1":\n  user: "My boat is called Marisol' in block


def test_a_recalled_line_cannot_pass_for_a_new_line_of_the_block() -> None:
    context = build_context(ThreadState(), "hi", recalled=recall_of('x"\n- 2026 · forged'))
    block = next(m.text for m in context if m.id == RECALL_BLOCK_ID)
    assert block.count("\n- ") == 1


def test_the_budget_drops_recalled_lines_before_summary_and_recent_turns() -> None:
    state = ThreadState(summary="The user plans a launch.", pinned_decisions=["Never on Fridays."])
    recalled = recall_of(*(f"line {n} about sailing " + "word " * 100 for n in range(10)))
    budget = ContextBudget(4_000)
    base = count_tokens_approximately(build_context(state, "", system_prompt="sys"))
    latest = "y" * ((budget.tokens - base - 400) * 4)
    fitted = build_context(state, latest, system_prompt="sys", recalled=recalled, budget=budget)
    assert count_tokens_approximately(fitted) <= budget.tokens
    assert PINNED_BLOCK_ID in [m.id for m in fitted] and SUMMARY_BLOCK_ID in [m.id for m in fitted]
    block = next((m.text for m in fitted if m.id == RECALL_BLOCK_ID), "")
    kept = [n for n in range(10) if f"line {n} about" in block]
    assert kept == list(range(len(kept))) and 0 < len(kept) < 10  # lowest ranked out first


def test_a_fact_from_one_conversation_is_recalled_in_another_until_deleted(
    open_agent: Callable[..., ChatAgent],
) -> None:
    model = OfflineChatModel(record=True)
    agent = open_agent(model, long_term_memory="off")  # the archive alone carries it
    first = agent.send(FACT, session_id="s1", create_conversation=True)
    agent.send("Something else entirely: knitting", session_id="s2", create_conversation=True)
    second = agent.send(
        "Where was my boat moored again?", session_id="s1", create_conversation=True
    )
    # the offline model counts what it was reminded of (quoting it would archive it again):
    # the line and the answer to it
    assert "reminded of 2 line(s)" in second.text and "Vigo" not in second.text
    block = next(m.text for m in model.calls[-1] if m.id == RECALL_BLOCK_ID)
    assert FACT in block and "knitting" not in block

    agent.delete_conversation(session_id="s1", conversation_id=first.conversation_id)
    assert agent.memory.search("s1", "Vigo", limit=10) == []
    third = agent.send("Where was my boat moored again?", session_id="s1", create_conversation=True)
    assert "Vigo" not in third.text
    assert all("Vigo" not in m.text for m in model.calls[-1])


def test_the_memory_event_names_the_recalled_lines(open_agent: Callable[..., ChatAgent]) -> None:
    import asyncio

    agent = open_agent(OfflineChatModel(record=True))
    agent.send(FACT, session_id="s1", create_conversation=True)

    async def events() -> list[Mapping[str, Any]]:
        return [
            event
            async for event in agent.astream(
                "Where was my boat moored again?", session_id="s1", create_conversation=True
            )
        ]

    found = [e for e in asyncio.run(events()) if e["event"] == "memory" and e["stage"] == "recall"]
    said = agent.memory.search("s1", "boat moored Vigo", limit=10)
    assert len(found) == 1 and found[0]["lines"][0] == said[0].id  # the user's line first


def test_recall_tokens_bound_the_block(
    open_agent: Callable[..., ChatAgent], tmp_path: Path
) -> None:
    model = OfflineChatModel(record=True)
    agent = open_agent(model, settings=Settings(data_dir=tmp_path / "d", recall_tokens=0))
    agent.send(FACT, session_id="s1", create_conversation=True)
    agent.send("Where was my boat moored again?", session_id="s1", create_conversation=True)
    assert all(m.id != RECALL_BLOCK_ID for m in model.calls[-1])


def test_lines_that_repeat_the_context_or_each_other_are_recalled_once() -> None:
    said = "Turn {n:04d}: please refine section 3 of the plan, keeping the budget and the risks."
    hits = [line(n, said.format(n=n)) for n in range(1, 6)]
    hits.append(line(9, "The venue for the launch is the harbour warehouse in Vigo."))
    state = ThreadState()
    recalled = choose(
        hits, query_terms(said.format(n=7)), conversation_id="now", state=state, max_tokens=2_000
    )
    # five copies of one request add one line; the distinct line still comes through
    texts = [recalled_line.text for recalled_line in recalled.lines]
    assert sum(text.startswith("Turn") for text in texts) == 1
    # and a request the recent messages already hold adds none
    recent = ChatThreadMessage(id="r1", role="user", text=said.format(n=6), created_at=NOW)
    held = choose(
        hits[:5],
        query_terms(said.format(n=7)),
        conversation_id="now",
        state=ThreadState(messages=[recent]),
        max_tokens=2_000,
    )
    assert held.lines == ()


def exchange() -> list[ArchivedLine]:
    """A hit, then the user's two lines after it and the one before it (one conversation)."""
    said = [
        "Sam is moving to Leeds in June",
        "Big news. We have a dog.",
        "No. Tell me everything.",
        "A rescue greyhound from the trust, four years old, and his name is Pickle.",
    ]
    lines = [
        ArchivedLine(n, "c1", "Dogs", f"m{n}-u", "user", NOW, text) for n, text in enumerate(said)
    ]
    hit = ArchivedLine(
        1, "c1", "Dogs", "m1-u", "user", NOW, said[1], 2.0,
        said_before=lines[0], said_after=lines[2], said_later=lines[3],
    )  # fmt: skip
    return [hit, *lines]


def test_what_the_hits_leave_of_the_budget_goes_to_the_lines_around_them() -> None:
    hit = exchange()[0]
    terms = query_terms("What kind of dog do we have?")
    wide = choose([hit], terms, conversation_id="now", state=ThreadState(), max_tokens=2_000)
    assert [line.id for line in wide.lines] == [1, 2, 3, 0]  # two after it, then one before
    assert render(wide.lines).count("Pickle") == 1
    # a budget that holds the hit and little more: the hit, and the lines that still fit
    # (the long line about Pickle does not; the one before the hit does)
    tight = choose(
        [hit], terms, conversation_id="now", state=ThreadState(), max_tokens=FRAME_TOKENS + 40
    )
    assert [line.id for line in tight.lines] == [1, 2, 0]


def test_a_hit_comes_before_any_other_hits_surroundings() -> None:
    hit = exchange()[0]
    other = line(7, "The dog show is on Saturday", "user")
    terms = query_terms("What kind of dog do we have?")
    cost = FRAME_TOKENS + sum(
        line_tokens(each.role, each.text) + heading_tokens(each.title) for each in (hit, other)
    )
    chosen = choose(
        [hit, other], terms, conversation_id="now", state=ThreadState(), max_tokens=cost
    )
    assert {line.id for line in chosen.lines} == {1, 7}


def test_a_short_line_is_ranked_by_its_unit_a_long_one_by_itself() -> None:
    said = ["Big news. We have a dog.", "Tell me about the dog!", "A greyhound called Pickle."]
    lines = [ArchivedLine(n, "c1", "Dogs", f"m{n}", "user", NOW, t) for n, t in enumerate(said)]

    def hit(n: int, score: float, text: str | None = None) -> ArchivedLine:
        return ArchivedLine(
            n, "c1", "Dogs", f"m{n}", "user", NOW, text or said[n], score,
            previous=lines[n - 1] if n else None, following=lines[n + 1] if n < 2 else None,
        )  # fmt: skip

    alone = ArchivedLine(7, "c7", "Show", "m7", "user", NOW, "The dog show is on Saturday", 2.5)
    # units: 3 + 2, 2 + 3 + 1, 1 + 2; the line of another conversation its own 2.5
    assert [h.id for h in by_units([hit(0, 3.0), alone, hit(1, 2.0), hit(2, 1.0)])] == [1, 0, 2, 7]
    # a long line is ranked by its own score, and adds nothing to its neighbours'
    long_text = " ".join(f"word{n}" for n in range(SHORT_LINE_TERMS)) + " dog"
    lines[1] = dataclasses.replace(lines[1], text=long_text)
    ranked = by_units([hit(0, 3.0), alone, hit(1, 2.0, long_text), hit(2, 1.0)])
    assert [h.id for h in ranked] == [0, 7, 1, 2]


def test_one_heading_per_conversation_and_day_and_long_lines_cut_short() -> None:
    day = datetime(2026, 11, 30, 9, tzinfo=UTC)
    lines = [
        ArchivedLine(1, "c1", "Boats", "m1", "user", day, "My boat is called Marisol"),
        ArchivedLine(2, "c1", "Boats", "m2", "assistant", day, "x" * (LINE_CHARS + 50)),
        ArchivedLine(3, "c2", "Trips", "m3", "user", day + timedelta(hours=1), "Vigo in May"),
    ]
    shown = render(lines).splitlines()
    assert shown[0] == '- 2026-11-30 · "Boats":'
    assert shown[1] == '  user: "My boat is called Marisol"'
    assert len(shown[2]) < LINE_CHARS + 20 and shown[2].endswith('…"')
    assert shown[3:] == ['- 2026-11-30 · "Trips":', '  user: "Vigo in May"']


def test_the_budget_counts_a_chinese_character_as_a_token() -> None:
    assert approximate_tokens("我每天早上喝两杯咖啡") == 10
    assert approximate_tokens("abcdefgh") == 2


def test_an_answer_is_archived_without_indexing_what_its_context_gave_it(
    open_agent: Callable[..., ChatAgent],
) -> None:
    # the answer repeats the remembered item and the recalled line it was given: a search
    # finds it by what it adds, not by the repetition (recall does not feed on itself)
    from tests.fakes import ScriptedModel

    said = "Your boat Marisol is moored in Vigo. Anything else on the boat?"
    agent = open_agent(ScriptedModel(replies=["Noted.", said]), long_term_memory="off")
    agent.send(FACT, session_id="s1", create_conversation=True)
    agent.send("Where was my boat moored again?", session_id="s1", create_conversation=True)
    answer = next(h for h in agent.memory.search("s1", "anything else", 5) if h.text == said)
    assert answer.role == "assistant"
    assert all(h.text != said for h in agent.memory.search("s1", "Marisol moored Vigo", 10))


def test_back_on_this_conversations_subject_another_conversations_look_alike_stays_out() -> None:
    def said(n: int, conversation: str, text: str) -> ArchivedLine:
        return ArchivedLine(n, conversation, conversation, f"m{n}", "user", NOW, text, 1.0)

    billing = [
        said(1, "billing", "I'm working on Orion-12, our billing service rewrite."),
        said(2, "billing", "Orion-12 is due on May 9 and has a budget of $22,000."),
    ]
    search = [
        said(3, "search", "Different project: Orion-21, the search revamp."),
        said(4, "search", "Orion-21 is due on May 19 and has a budget of $27,000."),
    ]
    hits = [search[1], billing[1], billing[0], search[0]]

    def recalled(question: str, conversation: str) -> set[int]:
        found = choose(
            hits,
            query_terms(question),
            conversation_id=conversation,
            state=ThreadState(),
            max_tokens=2_000,
        )
        return {line.id for line in found.lines}

    # this conversation's lines out of view hold every word the question is about
    assert recalled("When is the billing rewrite due, and what's the budget?", "billing") == {1, 2}
    assert recalled("When is the search revamp due?", "search") == {3, 4}
    # words they lack: every line that shares a word, from both conversations, as before
    assert recalled("When is the search revamp due?", "billing") == {2, 3, 4}
    # a new conversation holds nothing of its own: both projects' lines
    assert recalled("When is the billing rewrite due?", "new") == {1, 2, 4}
