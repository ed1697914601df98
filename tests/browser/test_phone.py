"""The page on a phone (390×844): one overlay at a time, each closed by its own button or
a tap on the scrim; and the first reply's conversation listed while it streams."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.browser.support import (
    ARTIFACTS,
    Browser,
    Page,
    PageLog,
    expect,
    last_answer,
    open_page,
)
from tests.gates import new_gate
from tests.integration.conftest import Server

if TYPE_CHECKING:
    from playwright.sync_api import ViewportSize

pytestmark = pytest.mark.integration

PHONE: ViewportSize = {"width": 390, "height": 844}


_IN_VIEW = """(selector) => {
  const element = document.querySelector(selector);
  const box = element.getBoundingClientRect();
  if (box.width === 0 || box.right > innerWidth || box.bottom > innerHeight) return false;
  const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
  return element === hit || element.contains(hit);
}"""


def _in_view(page: Page, selector: str) -> bool:
    """The element comes on screen and is what a tap at its centre reaches (waiting out
    the panel's 0.15 s slide-in: a box measured mid-transition is partly off screen)."""
    for _ in range(50):
        if page.evaluate(_IN_VIEW, selector):
            return True
        page.wait_for_timeout(100)
    return False


def test_on_a_phone_one_panel_opens_at_a_time_and_each_closes(
    browser: Browser, server: Server
) -> None:
    phone = browser.new_context(viewport=PHONE)
    page = phone.new_page()
    log = PageLog()
    log.watch(page)
    try:
        open_page(page, server.url)
        scrim, sidebar, memory = (
            page.locator(f"#{id_}") for id_ in ("scrim", "sidebar", "memory-panel")
        )
        expect(scrim).to_be_hidden()

        page.click("#toggle-sidebar")
        expect(sidebar).to_be_visible()
        expect(scrim).to_be_visible()
        assert _in_view(page, "#close-sidebar")  # the open sidebar has its own way out
        page.click("#close-sidebar")
        expect(sidebar).to_be_hidden()
        expect(scrim).to_be_hidden()
        expect(page.locator("#toggle-sidebar")).to_have_attribute("aria-expanded", "false")

        page.click("#toggle-sidebar")
        page.mouse.click(PHONE["width"] - 10, PHONE["height"] // 2)  # on the scrim
        expect(sidebar).to_be_hidden()
        expect(scrim).to_be_hidden()

        page.click("#toggle-memory")
        expect(memory).to_be_visible()
        expect(scrim).to_be_visible()
        page.mouse.click(10, PHONE["height"] // 2)  # the scrim, left of the panel
        expect(memory).to_be_hidden()

        # opening one overlay closes the other: never two stacked
        page.click("#toggle-sidebar")
        page.evaluate("document.getElementById('toggle-memory').click()")
        expect(memory).to_be_visible()
        expect(sidebar).to_be_hidden()
        assert _in_view(page, "#close-memory")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTIFACTS / "test_on_a_phone_the_memory_panel.png")
        page.click("#close-memory")
        expect(memory).to_be_hidden()
        expect(scrim).to_be_hidden()
        assert log.errors == [] and log.dialogs == []
    finally:
        phone.close()


def test_the_first_conversation_is_listed_while_its_reply_streams(
    page: Page, server: Server
) -> None:
    open_page(page, server.url)
    expect(page.locator("#conversation-count")).to_contain_text("No conversations yet")
    gate = new_gate()
    page.fill("#message", f"a **first** message gate-{gate}")
    page.press("#message", "Enter")
    expect(last_answer(page).locator(".text")).not_to_have_text("")  # waiting at its gate
    titles = page.locator("#conversation-list .conversation-title")
    expect(titles).to_have_count(1)
    expect(page.locator("#conversation-count")).not_to_contain_text("No conversations yet")
    server.open_gate(gate)
    expect(last_answer(page)).to_have_attribute("data-state", "done")
    expect(titles).to_have_text([f"a first message gate-{gate}"])  # the server's, plain text
