"""The memory panel: compaction, pins, summary version and open questions of the
conversation, and the long-term items (added by a turn or the form, deleted one by one
or all at once). With UPDATE_DOCS_SCREENSHOT=1 the first test rewrites the README's
screenshot, docs/chat-page.png."""

from __future__ import annotations

import os

import pytest

from tests.browser.support import (
    ARTIFACTS,
    DOCS_SCREENSHOT,
    UPDATE_DOCS,
    BrowserContext,
    Page,
    api_chat,
    expect,
    last_answer,
    open_page,
    send,
)
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration


def test_the_memory_panel_shows_compaction_and_long_term_items(
    page: Page, context: BrowserContext, server: Server
) -> None:
    cid = api_chat(
        context.request,
        server.url,
        "We decided to always deploy on Tuesdays.",
        createConversation=True,
    )
    for text in ("The launch is on 12 May.", "Keep the budget under 500 euros.", "hello again"):
        api_chat(context.request, server.url, text, conversationId=cid)
    open_page(page, server.url, f"#c={cid}")
    page.click("#toggle-memory")
    panel = page.locator("#memory-panel")
    expect(panel).to_be_visible()

    send(page, "Please remember that I am vegetarian.")  # the fifth turn: past 8 messages

    notes = last_answer(page).locator(".memory-notes")
    expect(notes).to_contain_text("Compacted")
    expect(notes).to_contain_text("Remembered")
    expect(panel.locator(".summary-preview")).not_to_be_empty()
    expect(panel.locator(".summary-preview")).to_contain_text("Tuesdays")
    item = panel.locator(".long-term-item")
    expect(item).to_have_count(1)
    expect(item.locator(".item-text")).to_contain_text("vegetarian")
    assert item.locator(".kind").inner_text() in {"boundary", "preference", "goal", "style", "fact"}
    assert item.locator("time").get_attribute("datetime")
    hydration = context.request.get(
        f"{server.url}/api/chat/thread", params={"conversationId": cid}
    ).json()
    version = hydration["summaryVersion"]
    assert version >= 1
    expect(notes).to_contain_text(f"Compacted: summary v{version}")
    expect(panel.locator("h4").first).to_have_text(f"Summary (version {version})")
    expect(panel.locator("h4", has_text="Open questions")).to_be_visible()
    questions = panel.locator(".open-questions li")
    expect(questions).to_have_count(len(hydration["openQuestions"]))

    path = ARTIFACTS / "chat-page-memory-panel.png"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=path)
    if os.environ.get(UPDATE_DOCS) == "1":
        DOCS_SCREENSHOT.write_bytes(path.read_bytes())


def test_a_long_term_item_can_be_added_deleted_and_all_deleted(
    page: Page, context: BrowserContext, server: Server
) -> None:
    open_page(page, server.url)
    send(page, "Please remember that I am vegetarian.")
    page.click("#toggle-memory")
    items = page.locator("#long-term-list .long-term-item")
    expect(items).to_have_count(1)
    expect(items.first).to_contain_text("vegetarian")

    items.first.get_by_role("button").click()

    expect(items).to_have_count(0)
    assert context.request.get(f"{server.url}/api/memories").json()["memories"] == []

    page.fill("#remember-text", "I prefer short answers.")
    page.select_option("#remember-kind", "preference")
    page.click("#remember-form button[type=submit]")
    expect(items).to_have_count(1)
    expect(items.first.locator(".kind")).to_have_text("preference")
    expect(page.locator("#remember-text")).to_have_value("")

    page.fill("#remember-text", "My password is hunter2, remember it.")
    page.click("#remember-form button[type=submit]")
    expect(page.locator("#remember-error")).to_be_visible()  # a secret is refused
    expect(items).to_have_count(1)

    page.fill("#remember-text", "I work in Berlin.")
    page.click("#remember-form button[type=submit]")
    expect(items).to_have_count(2)
    page.locator("#forget-all [data-role=ask]").click()
    page.locator("#forget-all [data-role=confirm]").click()
    expect(items).to_have_count(0)
    assert context.request.get(f"{server.url}/api/memories").json()["memories"] == []
