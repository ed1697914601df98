"""Conversations on the page: the first message streams and lists one, a reload shows
what the server holds, ten are kept, one is deleted after confirmation."""

from __future__ import annotations

import pytest

from tests.browser.support import (
    BrowserContext,
    Page,
    api_chat,
    expect,
    last_answer,
    open_page,
    record_partial_answers,
    send,
    titles,
)
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration


def test_the_first_message_streams_and_creates_a_listed_conversation(
    page: Page, server: Server
) -> None:
    open_page(page, server.url)
    expect(page.locator("#chat-title")).to_have_text("New chat")
    expect(page.locator("#conversation-list li")).to_have_count(0)
    record_partial_answers(page)

    send(page, "Please answer slowly: what does streaming look like?")

    answer = last_answer(page)
    expect(answer).to_have_attribute("data-state", "done")
    # compared word by word: the whole answer is rendered Markdown, its paragraphs no
    # longer apart by the blank lines that streamed
    final = " ".join((answer.locator(".text").text_content() or "").split())
    partials = list(dict.fromkeys(page.evaluate("window.partialAnswers")))
    assert all(final.startswith(" ".join(p.split())) for p in partials), (partials, final)
    # the answer grew on screen piece by piece before it was whole
    assert len([p for p in partials if len(p) < len(final)]) >= 3, partials
    expect(answer.locator(".route")).to_have_text("chat")
    expect(answer.locator(".memory-notes")).to_contain_text("Saved to memory")

    item = page.locator("#conversation-list li")
    expect(item).to_have_count(1)
    expect(item.locator(".conversation-title")).to_have_text(
        "Please answer slowly: what does streaming look like?"
    )
    expect(item.locator(".conversation-open")).to_have_attribute("aria-current", "true")
    conversation_id = item.get_attribute("data-id")
    assert page.evaluate("location.hash") == f"#c={conversation_id}"


def test_a_reload_restores_the_conversation_from_the_server(
    page: Page, context: BrowserContext, server: Server
) -> None:
    open_page(page, server.url)
    send(page, "We decided to always deploy on Tuesdays.")
    send(page, "what is 12*(3+4)?")
    expect(last_answer(page).locator(".progress")).to_contain_text("Tool: calculator")
    expect(last_answer(page).locator(".route")).to_have_text("tools")
    first_id = page.locator("#conversation-list li").first.get_attribute("data-id")

    page.reload()
    page.locator("#layout[data-ready=true]").wait_for()
    texts = page.locator("#messages .message .text").all_inner_texts()
    assert len(texts) == 4
    assert texts[0] == "We decided to always deploy on Tuesdays."
    assert "84" in texts[3]
    assert page.evaluate("localStorage.length + sessionStorage.length") == 0

    # a second conversation, then back to the first from the sidebar: the server
    # remembers the selection, so a page opened without a fragment shows the first
    page.click("#new-chat")
    send(page, "a second conversation")
    expect(page.locator("#conversation-list li")).to_have_count(2)
    page.locator(f"#conversation-list li[data-id='{first_id}'] .conversation-open").click()
    expect(page.locator("#chat-title")).to_have_text("We decided to always deploy on Tuesdays.")

    fresh = open_page(context.new_page(), server.url)
    expect(fresh.locator("#chat-title")).to_have_text("We decided to always deploy on Tuesdays.")
    expect(fresh.locator("#messages .message")).to_have_count(4)
    fresh.close()


def test_eleven_conversations_leave_the_ten_most_recent_listed(
    page: Page, context: BrowserContext, server: Server
) -> None:
    for n in range(10):
        api_chat(context.request, server.url, f"conversation {n}", createConversation=True)
    open_page(page, server.url)
    assert titles(page) == [f"conversation {n}" for n in reversed(range(10))]

    page.click("#new-chat")
    send(page, "the eleventh")

    expect(page.locator("#conversation-list li")).to_have_count(10)
    expect(page.locator("#conversation-list .conversation-title").first).to_have_text(
        "the eleventh"
    )
    assert "conversation 0" not in titles(page)
    expect(page.locator("#conversation-count")).to_contain_text("10 of 10")
    # the conversation that went is named, not removed in silence
    expect(page.locator("#notice")).to_be_visible()
    expect(page.locator("#notice-text")).to_contain_text("“conversation 0”")


def test_a_conversation_is_deleted_after_confirmation(
    page: Page, context: BrowserContext, server: Server
) -> None:
    keep = api_chat(context.request, server.url, "keep me", createConversation=True)
    drop = api_chat(
        context.request, server.url, "delete me, the one about the roof", createConversation=True
    )
    open_page(page, server.url, f"#c={drop}")
    row = page.locator(f"#conversation-list li[data-id='{drop}']")
    title = row.locator(".conversation-title")
    width = title.bounding_box()["width"]  # type: ignore[index]
    row.locator("[data-role=ask]").click()
    # the question takes a line of its own: the title keeps its width, not "de…"
    expect(row.locator("[data-role=confirm]")).to_be_visible()
    assert title.bounding_box()["width"] >= width  # type: ignore[index]
    expect(title).to_have_text("delete me, the one about the roof")
    row.locator("[data-role=cancel]").click()
    expect(page.locator("#conversation-list li")).to_have_count(2)

    row.locator("[data-role=ask]").click()
    row.locator("[data-role=confirm]").click()

    expect(page.locator("#conversation-list li")).to_have_count(1)
    expect(page.locator("#conversation-list li")).to_have_attribute("data-id", keep)
    expect(page.locator("#chat-title")).to_have_text("New chat")  # the open one went
    assert page.evaluate("location.hash") == "#new"
    gone = context.request.get(f"{server.url}/api/chat/thread", params={"conversationId": drop})
    assert gone.status == 404
