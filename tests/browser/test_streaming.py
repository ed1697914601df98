"""A reply while it streams: the conversation cannot be left, Stop cancels the turn, a
second tab finds the conversation busy, and server failures are told in the page's
own words."""

from __future__ import annotations

import json
import re

import pytest

from tests.browser.support import (
    BrowserContext,
    Page,
    api_chat,
    expect,
    held_requests,
    last_answer,
    open_page,
    stored_texts,
)
from tests.gates import new_gate
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration

TURNS = re.compile(r"/api/chat(\?.*)?$")
"""A turn's request, whatever its query (the page follows the upkeep after `done`)."""
LEAKY = "Traceback (most recent call last): sqlite3.OperationalError in /srv/agent/x.py"
"""What a server must never show, and the page never repeats."""


def test_switching_is_refused_while_a_reply_streams(
    page: Page, context: BrowserContext, server: Server
) -> None:
    first = api_chat(context.request, server.url, "the first", createConversation=True)
    api_chat(context.request, server.url, "the second", createConversation=True)
    open_page(page, server.url)
    expect(page.locator("#chat-title")).to_have_text("the second")

    with held_requests(page, TURNS) as held:
        page.fill("#message", "a reply that takes its time")
        page.press("#message", "Enter")
        expect(page.locator("#switch-lock")).to_be_visible()
        expect(page.locator("#switch-lock")).to_contain_text("Wait for it to finish")
        expect(page.locator("#new-chat")).to_be_disabled()
        for button in page.locator("#conversation-list button").all():
            expect(button).to_be_disabled()
        expect(page.locator("#stop")).to_be_visible()
        expect(page.locator("#send")).to_be_hidden()
        page.locator(f"#conversation-list li[data-id='{first}'] .conversation-open").click(
            force=True
        )
        expect(page.locator("#chat-title")).to_have_text("the second")
        assert len(held) == 1
        held[0].continue_()
        expect(last_answer(page)).to_have_attribute("data-state", "done")

    expect(page.locator("#switch-lock")).to_be_hidden()
    expect(page.locator("#new-chat")).to_be_enabled()
    page.locator(f"#conversation-list li[data-id='{first}'] .conversation-open").click()
    expect(page.locator("#chat-title")).to_have_text("the first")


def test_stop_cancels_the_turn_and_nothing_is_kept(
    page: Page, context: BrowserContext, server: Server
) -> None:
    cid = api_chat(context.request, server.url, "before the stop", createConversation=True)
    open_page(page, server.url, f"#c={cid}")
    # its gate stays shut: the answer waits after its first token until it is stopped
    page.fill("#message", f"answer slowly, I will stop you gate-{new_gate()}")
    page.press("#message", "Enter")
    expect(last_answer(page).locator(".text")).not_to_have_text("")  # tokens are arriving
    page.click("#stop")
    expect(last_answer(page)).to_have_attribute("data-state", "stopped")
    expect(last_answer(page).locator(".memory-notes")).to_contain_text("nothing from this turn")
    expect(page.locator("#send")).to_be_visible()

    # the server cancelled the turn: the next one is admitted once the cancelled turn has
    # let go of the conversation, and only it is stored
    for _ in range(50):
        response = context.request.post(
            f"{server.url}/api/chat", data={"message": "after the stop", "conversationId": cid}
        )
        if response.status != 409:
            break
        page.wait_for_timeout(100)
    assert response.status == 200, response.text()
    assert stored_texts(context.request, server.url, cid)[::2] == [
        "before the stop",
        "after the stop",
    ]


def test_a_busy_conversation_is_a_notice_not_an_error_page(
    page: Page, context: BrowserContext, server: Server
) -> None:
    cid = api_chat(
        context.request, server.url, "one conversation, two tabs", createConversation=True
    )
    open_page(page, server.url, f"#c={cid}")
    other = open_page(context.new_page(), server.url, f"#c={cid}")
    gate = new_gate()
    page.fill("#message", f"take it slowly in the first tab gate-{gate}")
    page.press("#message", "Enter")
    expect(last_answer(page).locator(".text")).not_to_have_text("")  # the turn waits at its gate

    other.fill("#message", "from the second tab")
    other.press("#message", "Enter")

    expect(other.locator("#notice")).to_be_visible()
    expect(other.locator("#notice-text")).to_contain_text("busy")
    expect(other.locator("#message")).to_have_value("from the second tab")  # not lost
    expect(other.locator("#messages .message")).to_have_count(2)  # only the stored turn
    expect(other.locator("#chat-title")).to_have_text("one conversation, two tabs")
    other.close()
    server.open_gate(gate)
    expect(last_answer(page)).to_have_attribute("data-state", "done")


def test_server_failures_are_told_in_the_pages_own_words(page: Page, server: Server) -> None:
    open_page(page, server.url)
    refused = {"error": {"code": "internal_error", "message": LEAKY}}
    page.route(TURNS, lambda route: route.fulfill(status=500, json=refused))
    page.fill("#message", "first try")
    page.press("#message", "Enter")
    expect(page.locator("#notice-text")).to_contain_text("could not complete")
    expect(page.locator("#message")).to_have_value("first try")
    page.unroute(TURNS)

    broken = f"event: error\ndata: {json.dumps({'code': 'internal_error', 'message': LEAKY})}\n\n"
    page.route(
        TURNS,
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=broken),
    )
    page.press("#message", "Enter")
    expect(last_answer(page)).to_have_attribute("data-state", "failed")
    expect(last_answer(page)).to_contain_text("The turn failed on the server")
    assert "Traceback" not in page.locator("#layout").inner_text()
    assert "sqlite" not in page.locator("#layout").inner_text()
