"""A conversation whose older messages compaction folded into its summary says so where
they were: the note reads the summary and searches the folded lines of that conversation
only."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.browser.support import BrowserContext, Page, api_chat, expect, open_page
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration

TURNS = (
    "We decided to always deploy on Tuesdays.",
    "The launch is on 12 May.",
    "Keep the budget under 500 euros.",
    "The caterer is called Bellini.",
    "hello again",
)


def compacted(context: BrowserContext, url: str, cid: str) -> dict[str, Any]:
    """The conversation's hydration DTO once its upkeep has folded something."""
    deadline = time.monotonic() + 20
    while True:
        response = context.request.get(f"{url}/api/chat/thread", params={"conversationId": cid})
        dto: dict[str, Any] = response.json()
        if dto["summaryVersion"] >= 1 and dto["upkeep"] != "pending":
            return dto
        assert time.monotonic() < deadline, dto
        time.sleep(0.1)


def test_a_reopened_conversation_shows_where_its_messages_were_folded(
    page: Page, context: BrowserContext, server: Server
) -> None:
    cid = api_chat(context.request, server.url, TURNS[0], createConversation=True)
    for text in TURNS[1:]:
        api_chat(context.request, server.url, text, conversationId=cid)
    api_chat(
        context.request, server.url, "The launch party needs balloons", createConversation=True
    )
    dto = compacted(context, server.url, cid)
    shown = [m["text"] for m in dto["messages"] if m["role"] == "user"]
    assert "The launch is on 12 May." not in shown  # folded, so only the note can find it

    open_page(page, server.url, f"#c={cid}")

    note = page.locator("#messages > li").first
    expect(note).to_have_attribute("data-role", "folded")
    expect(note).to_contain_text(
        f"Earlier messages were folded into a summary (version {dto['summaryVersion']})."
    )
    summary = note.locator(".summary-text")
    expect(summary).to_be_hidden()
    note.get_by_text("Read the summary").click()
    expect(summary).to_have_text(dto["summary"])

    note.locator(".folded-search input").fill("launch")
    note.locator(".folded-search input").press("Enter")
    lines = note.locator(".folded-results li")
    expect(lines.first).to_be_visible()
    expect(note.locator(".folded-results li[data-role=user]")).to_have_count(1)
    expect(note.locator(".folded-results li[data-role=user]")).to_contain_text(
        "You: The launch is on 12 May."
    )
    expect(lines.filter(has_text="balloons")).to_have_count(0)  # another conversation's
    expect(lines.first.locator("mark").first).to_have_text("launch")

    # a line still shown among the recent messages is not a folded one
    note.locator(".folded-search input").fill("caterer Bellini")
    note.locator(".folded-search input").press("Enter")
    expect(note.locator(".folded-results")).to_have_text(
        "Nothing folded matches “caterer Bellini”."
    )
