"""A long recalled line shows its matched passage, not its head; the recalled block
holds no duplicates, is dated in time order, and stays within its budget."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta

from memory import ThreadState
from memory.archive import ArchivedLine
from memory.archive.lines import ArchiveRole
from memory.archive.passages import GAP, passage, sentences
from memory.archive.recall import LINE_CHARS, choose, render
from memory.archive.terms import query_terms
from memory.context import recall_block
from memory.schema import ChatThreadMessage
from memory.text import approximate_tokens

NOW = datetime(2026, 11, 30, tzinfo=UTC)
FILLER = [f"Here is general advice number {n} about staying organised." for n in range(60)]
SALARY = "Your net salary is 400,000 yen after taxes and pension."
BONUS = "The bonus of 1.2 million yen goes to the mortgage."
ANSWER = " ".join([*FILLER[:30], SALARY, BONUS, *FILLER[30:]])


def test_a_short_text_is_shown_whole() -> None:
    assert passage("  Pickle eats salmon.  ", query_terms("salmon"), 100) == "Pickle eats salmon."


def test_a_long_text_shows_its_best_sentences_in_order_not_its_head() -> None:
    shown = passage(ANSWER, query_terms("what is my net salary?"), 200)
    assert SALARY in shown and FILLER[0] not in shown
    assert len(shown) <= 200 + 2 * len(GAP) + 2
    # a run of sentences around it, in the order said
    assert shown.index(FILLER[29]) < shown.index(SALARY)
    assert shown.startswith("…") and shown.endswith("…")


def test_a_rarer_term_of_the_line_weighs_more() -> None:
    text = " ".join(
        [f"The plan for the garden, step {n}, is in the folder." for n in range(10)]
        + ["The plan names Himmelbeet as a partner garden."]
    )
    shown = passage(text, query_terms("which partner is in the garden plan?"), 60)
    assert "Himmelbeet" in shown


def test_a_text_without_the_terms_shows_its_head() -> None:
    shown = passage(ANSWER, query_terms("tulips"), 120)
    assert shown.startswith(FILLER[0][:50]) and shown.endswith("…") and len(shown) <= 120


def test_sentences_keep_decimals_and_split_list_items() -> None:
    assert sentences("Set it to 1.5 bar. Then wait.\n- one\n- two") == [
        "Set it to 1.5 bar.",
        "Then wait.",
        "- one",
        "- two",
    ]


def said(
    n: int,
    role: ArchiveRole,
    text: str,
    *,
    conversation: str = "c1",
    previous: ArchivedLine | None = None,
    following: ArchivedLine | None = None,
) -> ArchivedLine:
    moment = NOW + timedelta(minutes=n)
    return ArchivedLine(
        n, conversation, "Money", f"m{n}", role, moment, text, 2.0,
        previous=previous, following=following,
    )  # fmt: skip


def test_a_recalled_answer_shows_the_passage_the_question_matched() -> None:
    question = said(1, "user", "Can you go through my pay stubs with me?")
    answer = said(2, "assistant", ANSWER, previous=question)
    terms = query_terms("remind me of my net salary in yen")
    recall = choose([answer], terms, conversation_id="now", state=ThreadState(), max_tokens=2_000)
    text = render(recall.lines)
    assert len(ANSWER) > LINE_CHARS and ANSWER.index(SALARY) > LINE_CHARS
    assert SALARY in text  # past the first LINE_CHARS characters, and shown
    # with the turn it answered, before it
    assert text.index("pay stubs") < text.index(SALARY)


def test_no_line_is_shown_twice_nor_a_copy_of_what_the_context_holds() -> None:
    recent = ChatThreadMessage(id="r1", role="user", text=BONUS, created_at=NOW)
    asked = "What did we decide about my salary, the yearly bonus and the mortgage payments?"
    question = said(1, "user", asked)
    copy = said(3, "user", asked, conversation="c2")
    answer = said(2, "assistant", BONUS, previous=question)
    hit = said(1, "user", question.text, following=answer)
    terms = query_terms("the salary and the bonus")
    recall = choose(
        [hit, copy],
        terms,
        conversation_id="now",
        state=ThreadState(messages=[recent]),
        max_tokens=2_000,
    )
    assert recall.ids == [1]  # the copy of the question and the answer already in view


def tail(n: int) -> str:
    """Filler of its own words (no near copy of another line's)."""
    return " ".join(f"Topic{n}x{k} is note{n}y{k} for later." for k in range(80))


def test_the_block_is_dated_in_time_order_and_within_its_budget() -> None:
    lines = [
        said(
            n,
            "assistant",
            f"In month {n} the net salary was {n}00,000 yen. {tail(n)}",
            conversation=f"c{n}",
        )
        for n in range(1, 15)
    ]
    terms = query_terms("net salary yen")
    for budget in (60, 150, 400, 1_000, 2_000):
        recall = choose(
            list(reversed(lines)),
            terms,
            conversation_id="now",
            state=ThreadState(),
            max_tokens=budget,
        )
        block = recall_block(recall.groups)
        assert block is None or approximate_tokens(block.text) <= budget
        if budget >= 1_000:
            assert block is not None
            shown = block.text
            assert len(recall.lines) > 1 and shown.count("net salary") == len(recall.lines)
            months = [int(m) for m in re.findall(r"In month (\d+)", shown)]
            assert months == sorted(months)
            assert shown.count("- 2026-11-30 ·") == len(recall.lines)  # dated


def test_what_the_current_conversation_holds_keeps_no_other_conversations_line_out() -> None:
    recent = ChatThreadMessage(id="m1", role="user", text=SALARY, created_at=NOW)
    held = said(1, "user", SALARY, conversation="now")  # in view: the best match
    other = said(
        2, "assistant", "Your salary review with the bank is on Friday.", conversation="c2"
    )
    recall = choose(
        [held, dataclasses.replace(other, score=0.5)],
        query_terms("what about my salary"),
        conversation_id="now",
        state=ThreadState(messages=[recent]),
        max_tokens=2_000,
    )
    assert recall.ids == [2]
