"""The memory panel's provenance and history: each long-term item says where it was said
(a link that opens that line, or a pruned conversation's archived lines), the items a
later statement changed fold away as history with what replaced them, and search marks
the lines they came from (offline model, scripted extraction model)."""

from __future__ import annotations

import pytest

from tests.browser.support import (
    ARTIFACTS,
    Browser,
    BrowserContext,
    Locator,
    Page,
    PageLog,
    api_chat,
    expect,
    last_answer,
    open_page,
    send,
)
from tests.integration.conftest import Server
from tests.integration.http_app import LISBON, PORTO

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(extracting_server: Server) -> Server:
    """Items that a later statement changes need an extraction model: a scripted one."""
    return extracting_server


def current_item(page: Page, text: str) -> Locator:
    return page.locator("#long-term-list .long-term-item").filter(has_text=text)


def test_items_show_their_source_and_changed_ones_fold_into_history(
    page: Page, context: BrowserContext, server: Server
) -> None:
    open_page(page, server.url)
    page.click("#toggle-memory")
    send(page, LISBON)
    send(page, PORTO)
    expect(last_answer(page).locator(".memory-notes")).to_contain_text(
        "1 older long-term item no longer used"
    )
    cid = page.evaluate("new URLSearchParams(location.hash.slice(1)).get('c')")

    items = page.locator("#long-term-list .long-term-item")
    expect(items.locator(".item-text")).to_have_text([PORTO, "I work as a data engineer."])
    expect(items.locator(".quote")).to_have_text(
        ["“I moved to Porto.”", "“I work as a data engineer.”"]
    )
    expect(items.locator("[data-role=provenance-link]")).to_have_text([LISBON, LISBON])
    times = items.locator("[data-role=provenance] time")
    expect(times).to_have_count(2)
    assert all(times.nth(n).get_attribute("datetime") for n in range(2))

    fold = page.locator("#long-term-history")
    expect(fold).to_be_visible()
    expect(fold).not_to_have_attribute("open", "")  # collapsed until asked for
    expect(fold.locator("summary")).to_have_text("History (1 changed item)")
    changed = fold.locator(".long-term-item")
    expect(changed).to_be_hidden()
    fold.locator("summary").click()
    expect(changed).to_have_count(1)
    expect(changed.locator(".item-text")).to_have_text("I live in Lisbon")
    expect(changed.locator("[data-role=change]")).to_contain_text("replaced by “I moved to Porto.”")
    expect(changed.locator(".quote")).to_have_text("“I live in Lisbon”")

    # the statement a later one changed is still found, marked so in words
    page.fill("#search-text", "Lisbon")
    page.press("#search-text", "Enter")
    hits = page.locator("#search-results .search-hit")
    expect(hits.filter(has_text=f"You: {LISBON}").locator(".changed-mark")).to_have_text(
        "changed since"
    )
    expect(page.locator("#search-results .changed-mark")).to_have_count(1)
    page.locator("[data-role=close-search]").click()

    # a link opens its conversation at the line, from another conversation
    page.click("#new-chat")
    expect(page.locator("#chat-title")).to_have_text("New chat")
    current_item(page, PORTO).locator("[data-role=provenance-link]").click()
    expect(page.locator("#conversation-list li.current")).to_have_attribute("data-id", cid)
    found = page.locator("#messages .message.found")
    expect(found).to_have_count(1)
    expect(found.locator(".text")).to_have_text(PORTO)
    changed.locator("[data-role=provenance-link]").click()
    expect(found.locator(".text")).to_have_text(LISBON)

    # a form item says it was added here; its markup stays text
    page.fill("#remember-text", "I like <b>green</b> tea")
    page.click("#remember-form button[type=submit]")
    added = current_item(page, "green")
    expect(added.locator("[data-role=provenance]")).to_contain_text("added by you on")
    assert page.locator("#memory-panel b").count() == 0

    changed.get_by_role("button", name="Forget: I live in Lisbon").click()
    expect(fold).to_be_hidden()
    listing = context.request.get(f"{server.url}/api/memories?history=true").json()
    assert listing["history"] == []
    assert [item["text"] for item in listing["memories"]] == [
        "I like <b>green</b> tea",
        PORTO,
        "I work as a data engineer.",
    ]
    expect(items).to_have_count(3)


def test_a_pruned_source_shows_its_archived_lines_in_the_panel(
    page: Page, context: BrowserContext, server: Server
) -> None:
    cid = api_chat(context.request, server.url, LISBON, createConversation=True)
    api_chat(context.request, server.url, PORTO, conversationId=cid)
    for n in range(10):
        api_chat(context.request, server.url, f"conversation {n}", createConversation=True)
    open_page(page, server.url)
    page.click("#toggle-memory")

    link = current_item(page, PORTO).locator("[data-role=provenance-link]")
    expect(link).to_have_text("a conversation no longer listed")
    link.click()

    lines = current_item(page, PORTO).locator(".source-lines")
    expect(lines.locator("[data-role=pruned-hit]")).to_contain_text("no longer in the list")
    expect(lines.locator(".search-title")).to_have_text(LISBON)
    expect(lines.locator(".archived-lines li.found")).to_contain_text(PORTO)
    assert page.locator("#conversation-list li.current").get_attribute("data-id") != cid

    link.click()  # a second click folds them away
    expect(lines).to_be_hidden()


OVERFLOWING = """(panel) => {
    const box = panel.getBoundingClientRect();
    return [...panel.querySelectorAll("*")]
        .filter((node) => node.getClientRects().length)
        .filter((node) => {
            const rect = node.getBoundingClientRect();
            return rect.left < box.left - 0.5 || rect.right > box.right + 0.5;
        })
        .map((node) => `${node.tagName}.${node.className}: ${node.textContent.slice(0, 40)}`);
}"""


def test_the_panel_with_history_fits_a_390_pixel_screen(browser: Browser, server: Server) -> None:
    narrow = browser.new_context(viewport={"width": 390, "height": 844})
    page = narrow.new_page()
    log = PageLog()
    log.watch(page)
    try:
        # a long title with a long unbroken word, as a link inside the provenance line
        long_title = f"Notes:Supercalifragilisticexpialidociousdataplatforms. {LISBON}"
        cid = api_chat(narrow.request, server.url, long_title, createConversation=True)
        api_chat(narrow.request, server.url, PORTO, conversationId=cid)
        open_page(page, server.url, f"#c={cid}")
        page.click("#toggle-memory")
        panel = page.locator("#memory-panel")
        page.locator("#long-term-history summary").click()
        expect(panel.locator("#long-term-history-list .long-term-item")).to_have_count(1)

        assert panel.evaluate(OVERFLOWING) == []
        assert panel.evaluate("(node) => node.scrollWidth <= node.clientWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        panel.locator("#long-term-history").scroll_into_view_if_needed()
        page.screenshot(path=ARTIFACTS / "test_the_panel_with_history_fits_a_390_pixel_screen.png")

        # the overlay gives way to the line it links to
        panel.locator("#long-term-list [data-role=provenance-link]").first.click()
        expect(panel).to_be_hidden()
        expect(page.locator("#messages .message.found")).to_have_count(1)
        assert log.errors == [] and log.dialogs == []
    finally:
        narrow.close()
