"""The sidebar's search of earlier conversations: hits with date, title and the words
marked (as text, never as HTML); a hit opens its conversation at the line; a pruned
conversation is said to be pruned, with its archived lines."""

from __future__ import annotations

import pytest

from tests.browser.support import BrowserContext, Page, api_chat, expect, open_page
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration


def search(page: Page, query: str) -> None:
    page.fill("#search-text", query)
    page.press("#search-text", "Enter")
    expect(page.locator("#search-results")).to_be_visible()


def test_a_hit_opens_its_conversation_at_the_line(
    page: Page, context: BrowserContext, server: Server
) -> None:
    boat = api_chat(
        context.request,
        server.url,
        "My boat <b>Marisol</b> is moored in Vigo",
        createConversation=True,
    )
    api_chat(context.request, server.url, "Something unrelated", createConversation=True)
    open_page(page, server.url)

    search(page, "Marisol")

    hits = page.locator("#search-results .search-hit")
    expect(hits.first).to_be_visible()
    first = hits.first
    expect(first.locator(".search-title")).to_have_text("My boat <b>Marisol</b> is moored in Vigo")
    expect(first.locator("mark").first).to_have_text("Marisol")
    assert page.locator("#search-results b").count() == 0  # the text is never markup
    expect(first.locator("time")).not_to_be_empty()

    first.click()

    expect(page.locator("#conversation-list li.current")).to_have_attribute("data-id", boat)
    found = page.locator("#messages .message.found")
    expect(found).to_have_count(1)
    expect(found.locator(".text")).to_contain_text("Marisol")


def test_a_pruned_conversation_shows_its_archived_lines(
    page: Page, context: BrowserContext, server: Server
) -> None:
    api_chat(
        context.request,
        server.url,
        "The lighthouse keeper is called Anselmo",
        createConversation=True,
    )
    for n in range(10):
        api_chat(context.request, server.url, f"conversation {n}", createConversation=True)
    open_page(page, server.url)

    search(page, "Anselmo")
    page.locator("#search-results .search-hit").first.click()

    results = page.locator("#search-results")
    expect(results.locator("[data-role=pruned-hit]")).to_contain_text("no longer in the list")
    expect(results.locator(".archived-lines li").first).to_contain_text("Anselmo")
    expect(page.locator("#chat-title")).not_to_have_text("The lighthouse keeper is called Anselmo")
