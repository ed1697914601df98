"""The sidebar's search of earlier conversations: one result per turn with date, title
and the words marked (as text, never as HTML); a hit opens its conversation at the line;
a pruned conversation is said to be pruned, with its archived lines."""

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


def line_boxes(page: Page, selector: str) -> list[int]:
    """How many line boxes the text of each element matching `selector` takes."""
    return list(
        page.evaluate(
            """(selector) => [...document.querySelectorAll(selector)].map((node) => {
                const range = document.createRange();
                range.selectNodeContents(node);
                return range.getClientRects().length;
            })""",
            selector,
        )
    )


def test_results_are_turns_dated_on_one_line_and_shown_as_words(
    page: Page, context: BrowserContext, server: Server
) -> None:
    """The offline model echoes the message: its answer adds nothing to the result of the
    turn. The search tool's answer quotes other lines: it is not found by what it quotes
    (its context), and reads back as words, no escapes."""
    said = 'My config: {"boat": "Marisol"}\nmoored in Vigo'
    config = api_chat(context.request, server.url, said, createConversation=True)
    api_chat(context.request, server.url, "What did I say about Marisol?", createConversation=True)
    open_page(page, server.url)

    search(page, "Marisol")

    hits = page.locator("#search-results .search-hit")
    expect(hits).to_have_count(2)  # the config turn, and the question with its answer
    texts = hits.all_inner_texts()
    assert all("\\" not in text for text in texts), texts
    echoed = page.locator(f"#search-results .search-hit[data-conversation-id='{config}']")
    expect(echoed.locator(".search-snippet")).to_have_count(1)
    expect(echoed.locator(".search-snippet")).to_have_attribute("data-role", "user")
    expect(echoed.locator(".search-snippet")).to_contain_text('{"boat": "Marisol"} moored')
    asked = hits.filter(has_text="What did I say about Marisol?")
    expect(asked.locator(".search-snippet[data-role=assistant]")).to_have_count(0)
    assert line_boxes(page, "#search-results time") == [1, 1]

    search(page, "earlier conversations found")  # the answer's own words
    answer = hits.filter(has_text="What did I say about Marisol?").locator(
        ".search-snippet[data-role=assistant]"
    )
    expect(answer).to_contain_text('My config: {"boat": "Marisol"} moored in Vigo')
    assert "\\" not in answer.inner_text()


def test_a_turn_whose_answer_differs_shows_both_lines_in_one_result(
    page: Page, server: Server
) -> None:
    """As a real model answers: the question and its answer, one result, each marked."""
    when = "2025-03-04T10:00:00+00:00"
    hit = {"conversationId": "c" * 32, "title": "Boiler", "createdAt": when}
    results = [
        {
            **hit,
            "id": 2,
            "messageId": "t1-a",
            "role": "assistant",
            "text": "The boiler needs 1.5 bar.",
        },
        {**hit, "id": 1, "messageId": "t1-u", "role": "user", "text": "What does the boiler need?"},
        {
            **hit,
            "id": 3,
            "messageId": "t2-u",
            "role": "user",
            "text": "The boiler is in the attic.",
        },
    ]
    page.route(
        "**/api/search?*",
        lambda route: route.fulfill(json={"query": "boiler", "results": results, "limit": 10}),
    )
    open_page(page, server.url)

    search(page, "boiler")

    hits = page.locator("#search-results .search-hit")
    expect(hits).to_have_count(2)
    first = hits.first.locator(".search-snippet")
    expect(first).to_have_text(
        ["You: What does the boiler need?", "Agent: The boiler needs 1.5 bar."]
    )
    expect(first.locator("mark")).to_have_count(2)
    expect(hits.first.locator("time")).to_contain_text("2025")  # another year says so
    expect(page.locator("#search-results > p")).to_have_text("2 results")
