"""How the terminal chat renders without a terminal: reviews, the conversation listing, a
conversation's memory, and answers as Markdown."""

from __future__ import annotations

import io
import re
from typing import cast

from agent.cli.printer import TurnPrinter
from agent.cli.render import render_listing, render_memory, render_review
from agent.client_events import ClientEvent
from agent.offline import OfflineChatModel
from tests.unit.cli_support import REGISTRY, REVISION, STRATEGY, done


def test_render_strategy_review() -> None:
    lines = render_review(STRATEGY).splitlines()
    assert lines[0] == "── strategy review ──"
    assert "goal: Launch the beta" in lines
    tasks = lines.index("tasks:")
    assert lines[tasks + 1] == "  1. Write the docs [pending] (id t1)"
    assert lines[tasks + 2 : tasks + 4] == [
        "       - a quickstart exists",
        "       - every command is described",
    ]
    assert lines[tasks + 4] == "  2. Ship the build (id t2)"
    assert lines[-1] == (
        "answer with: approve | edit <task>; <task>; … | reject <reason> | respond <feedback>"
    )


def test_render_revision_review_marks_blocking_issues() -> None:
    lines = render_review(REVISION).splitlines()
    assert lines[0] == "── revision review ──"
    issues = lines.index("issues:")
    assert lines[issues + 1] == "  - No installer yet (task: Ship the build) [blocking]"
    assert lines[issues + 2] == "  - Check the wording"
    assert lines[-1] == "answer with: accept | revise"


def test_render_review_shows_a_refused_answer_and_unknown_kinds() -> None:
    assert "(the last answer was refused: bad edit)" in render_review(
        {**STRATEGY, "error": "bad edit"}
    )
    text = render_review({"kind": "budget_review", "limit": 3, "actions": ["ok"]})
    assert text.splitlines()[0] == "── review (budget_review) ──"
    assert '"limit": 3' in text and text.endswith("answer with: ok")


def test_render_listing_numbers_conversations_and_marks_the_current_one() -> None:
    assert render_listing(REGISTRY, current="b" * 32).splitlines() == [
        "conversations (2 of 10):",
        f"  1. another  ({'a' * 32})",
        f"* 2. hello  ({'b' * 32})",
    ]
    assert render_listing(REGISTRY, current=None).splitlines()[-1].startswith("(you are in a new")
    assert render_listing({"conversations": [], "limit": 10}, current=None).startswith(
        "no conversations yet"
    )


def test_render_listing_says_how_to_answer_what_waits_without_switching_to_here() -> None:
    waiting = {"reviewPending": True, "unfinished": True}
    registry = {
        "conversations": [
            {"id": "a" * 32, "title": "another", **waiting},
            {"id": "b" * 32, "title": "hello", **waiting},
        ],
        "limit": 10,
    }
    other, here = render_listing(registry, current="b" * 32).splitlines()[1:]
    assert other.endswith(
        "[unfinished: /switch to it, then /recover]  [review pending: /switch to it, then /review]"
    )
    assert here.startswith("* 2.")
    assert here.endswith("[unfinished: /recover]  [review pending: /review]")


def test_render_memory() -> None:
    dto = {
        "conversationId": "c" * 32,
        "summaryPreview": "User: hello / Assistant: hi",
        "summaryVersion": 2,
        "pinnedDecisions": ["We decided to always deploy on Tuesdays."],
        "openQuestions": ["Which region hosts the database?"],
        "messages": [
            {"role": "user", "text": "hello\nthere"},
            {"role": "assistant", "text": "x" * 500},
        ],
    }
    lines = render_memory(dto).splitlines()
    assert lines[:6] == [
        "memory of conversation cccccccc:",
        "summary (version 2): User: hello / Assistant: hi",
        "pinned decisions:",
        "  1. We decided to always deploy on Tuesdays.",
        "open questions:",
        "  - Which region hosts the database?",
    ]
    assert lines[6:8] == ["recent messages (2):", "  user: hello there"]
    assert (
        lines[8].startswith("  assistant: xxx") and lines[8].endswith("…") and len(lines[8]) < 230
    )
    empty = render_memory({"conversationId": "c", "messages": [], "pinnedDecisions": []})
    assert empty.splitlines()[1:] == [
        "summary: none yet",
        "pinned decisions: none",
        "recent messages: none",
    ]


def test_answers_render_as_markdown_on_a_terminal() -> None:
    from agent.cli.markdown import MarkdownView

    out, err = io.StringIO(), io.StringIO()
    printer = TurnPrinter(out, err, markdown=MarkdownView(out, width=60, force=True))
    for event in (
        {"event": "conversation", "conversationId": "c1"},
        {"event": "status", "stage": "route", "route": "chat"},
        {"event": "token", "text": "# Plan\n\n**Bold** and "},
        {"event": "token", "text": "`code`\n\n- one\n- two\n"},
        {"event": "memory", "stage": "write", "status": "succeeded"},
        done(route="chat", text="# Plan\n\n**Bold** and `code`\n\n- one\n- two\n"),
    ):
        printer.handle(cast(ClientEvent, event))
    text = out.getvalue()
    assert "\x1b[" in text  # styled for the terminal
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)
    assert "**" not in plain and "# Plan" not in plain and "`code`" not in plain
    assert "Plan" in plain and "• one" in plain
    assert plain.rstrip().endswith("[memory: written]")


def test_a_sentence_after_an_offline_answers_list_is_a_paragraph_of_its_own() -> None:
    """The offline answer's list of long-term items is followed by a sentence: Markdown
    (markdown-it, which `rich` renders with) makes it a paragraph, not part of the last item,
    and the terminal shows it on a line of its own."""
    from markdown_it import MarkdownIt

    from agent.cli.markdown import MarkdownView
    from memory.longterm.items import MemoryItem, normalise
    from memory.schema import ThreadState, utcnow
    from tests.context_support import build_context

    now = utcnow()
    items = [
        MemoryItem(
            id=f"m_{n}",
            kind="fact",
            text=text,
            importance=3,
            created_at=now,
            updated_at=now,
            key=normalise(text),
        )
        for n, text in enumerate(("I am vegetarian", "I live in Porto"))
    ]
    answer = OfflineChatModel().invoke(build_context(ThreadState(), "hi", long_term=items)).text
    tokens = [t.type for t in MarkdownIt().parse(answer)]
    after_list = tokens[tokens.index("bullet_list_close") + 1 :]
    assert after_list[:3] == ["paragraph_open", "inline", "paragraph_close"]

    out = io.StringIO()
    MarkdownView(out, width=200, force=True).show(answer)
    lines = [
        line.strip() for line in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).splitlines()
    ]
    last_item = next(n for n, line in enumerate(lines) if line.endswith("I live in Porto"))
    assert lines[last_item] == "• [fact] I live in Porto"
    following = [line for line in lines[last_item + 1 :] if line]
    assert following == ["I see no earlier messages in this conversation."]
