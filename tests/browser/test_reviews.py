"""A task list waiting for its review is part of the conversation: listed, restored after
a reload or in another tab (also when another client started it), never dropped without
asking; and answers render as Markdown, sanitised."""

from __future__ import annotations

import json

import pytest

from agent.api.sessions import NEW_SESSION, SESSION_HEADER
from tests.browser.support import (
    BrowserContext,
    Page,
    api_chat,
    expect,
    keep_screenshot,
    last_answer,
    open_page,
    send,
    stored_texts,
    titles,
)
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration

GOAL = "Set up CI. Add linting."
TASKLIST = f"/tasklist {GOAL}"


def test_a_pending_review_is_listed_and_restored_after_a_reload(
    page: Page, context: BrowserContext, server: Server
) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    expect(page.locator("#review")).to_be_visible()
    entry = page.locator("#conversation-list li")
    expect(entry).to_have_count(1)
    expect(entry.locator(".conversation-title")).to_have_text(GOAL)  # no /tasklist prefix
    expect(entry.locator(".review-badge")).to_have_text("review pending")
    expect(page.locator("#chat-title")).to_have_text(GOAL)
    expect(page.locator("#mode")).to_have_value("auto")

    page.reload()
    page.locator("#layout[data-ready=true]").wait_for()

    review = page.locator("#review")
    expect(review).to_be_visible()
    expect(review.locator(".goal")).to_contain_text(GOAL)
    expect(review.locator("[data-field=title]")).to_have_count(3)
    expect(page.locator(".message.user")).to_have_text([f"You{GOAL}"], use_inner_text=False)
    expect(last_answer(page)).to_have_attribute("data-state", "review")
    expect(page.locator("#chat-title")).to_have_text(GOAL)
    # at 1280×800 the plan's three tasks and its answers fit without a scroll
    body = "document.querySelector('#review .review-body')"
    assert page.evaluate(f"{body}.scrollHeight <= {body}.clientHeight + 1")
    keep_screenshot(page, "review-pending-after-reload.png")

    # another tab of the session shows the same review, and can answer it
    other = context.new_page()
    open_page(other, server.url)
    expect(other.locator("#review")).to_be_visible()
    other.locator("#review [data-action=approve]").click()
    expect(last_answer(other)).to_have_attribute("data-state", "done")
    expect(other.locator("#conversation-list .review-badge")).to_have_count(0)
    other.close()


IN_VIEW_AND_UNCOVERED = """(selectors) => selectors.every((selector) => {
    const node = document.querySelector(selector);
    if (node === null) return false;
    const box = node.getBoundingClientRect();
    if (box.width === 0 || box.top < 0 || box.left < 0) return false;
    if (box.bottom > innerHeight || box.right > innerWidth) return false;
    const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    return hit !== null && node.contains(hit);
})"""
"""Whether each element is inside the viewport and is what a click at its centre hits (not
clipped by a scroll area, nor under another element)."""


def test_every_answer_of_a_review_is_in_view_at_1280_by_800(page: Page, server: Server) -> None:
    """Approve, Reject and Re-plan stay in view, also under the longest task list."""
    assert page.viewport_size == {"width": 1280, "height": 800}
    open_page(page, server.url)
    send(page, TASKLIST)
    answers = [f"#review [data-action={a}]" for a in ("approve", "reject", "respond")]
    # waits for the form to settle; times out (fails) when a button stays hidden
    page.wait_for_function(IN_VIEW_AND_UNCOVERED, arg=answers, timeout=5000)

    add = page.locator("#review button", has_text="Add a task")
    while add.is_enabled():
        add.click()
    expect(page.locator("#review [data-field=title]")).to_have_count(7)
    page.wait_for_function(IN_VIEW_AND_UNCOVERED, arg=answers, timeout=5000)
    # the tasks scroll instead: the last one can be reached
    last = page.locator("#review [data-field=title]").last
    last.scroll_into_view_if_needed()
    expect(last).to_be_in_viewport()


def test_the_api_lists_a_pending_review_and_reads_it_back(
    context: BrowserContext, server: Server
) -> None:
    """`GET /api/conversations/{id}` (and the hydration DTO) carry the pending review."""
    api = context.request
    response = api.post(
        f"{server.url}/api/chat",
        data={"message": TASKLIST, "createConversation": True},
        headers={SESSION_HEADER: NEW_SESSION},  # a script's first request
    )
    cid = response.headers["x-conversation-id"]
    events = [
        json.loads(line.removeprefix("data: "))
        for line in response.text().splitlines()
        if line.startswith("data: ")
    ]
    assert {"stage": "review", "status": "pending"} in events
    interrupt = next(e["interrupt"] for e in events if set(e) == {"interrupt"})
    (entry,) = api.get(f"{server.url}/api/conversations").json()["conversations"]
    assert (entry["id"], entry["title"], entry["reviewPending"]) == (cid, GOAL, True)
    read = api.get(f"{server.url}/api/conversations/{cid}").json()
    assert read["review"] == interrupt and read["messages"] == []
    assert read["review"]["goal"] == GOAL and len(read["review"]["tasks"]) == 3
    thread = api.get(f"{server.url}/api/chat/thread", params={"conversationId": cid}).json()
    assert thread == read

    api.post(
        f"{server.url}/api/chat/resume",
        data={"conversationId": cid, "decision": {"action": "approve"}},
    )
    assert api.get(f"{server.url}/api/conversations/{cid}").json()["review"] is None
    (entry,) = api.get(f"{server.url}/api/conversations").json()["conversations"]
    assert entry["reviewPending"] is False


def test_a_review_started_by_another_client_is_found_and_answered(
    page: Page, context: BrowserContext, server: Server
) -> None:
    """As the CLI or the API leaves it: the page lists it and answers it."""
    cid = api_chat(context.request, server.url, TASKLIST, createConversation=True)
    open_page(page, server.url)
    assert titles(page) == [GOAL]
    expect(page.locator("#conversation-list .review-badge")).to_have_count(1)
    expect(page.locator("#review")).to_be_visible()  # the selected conversation opens

    page.locator("#review [data-action=approve]").click()

    expect(last_answer(page)).to_have_attribute("data-state", "done")
    expect(page.locator("#review")).to_be_hidden()
    assert stored_texts(context.request, server.url, cid)[0] == GOAL


def test_a_message_during_a_review_asks_first_and_says_when_it_dropped_it(
    page: Page, context: BrowserContext, server: Server
) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    question = page.locator("#drop-review")
    answers = page.locator(".message.assistant")
    expect(answers).to_have_count(1)

    page.fill("#message", "Something else entirely")
    page.press("#message", "Enter")
    expect(question).to_be_visible()
    expect(question).to_contain_text(GOAL)
    expect(answers).to_have_count(1)  # nothing was sent
    page.click("#drop-review-answer")  # answer the review instead: nothing is lost
    expect(question).to_be_hidden()
    expect(page.locator("#review")).to_be_visible()
    expect(page.locator("#message")).to_have_value("Something else entirely")

    page.press("#message", "Enter")
    expect(question).to_be_visible()
    page.click("#drop-review-send")

    expect(answers).to_have_count(2)
    expect(answers.last).to_have_attribute("data-state", "done")
    expect(page.locator("[data-role=dropped-review]")).to_contain_text("You dropped the review")
    expect(page.locator("#review")).to_be_hidden()
    expect(page.locator("#conversation-list .review-badge")).to_have_count(0)
    assert titles(page) == ["Something else entirely"]

    page.reload()
    page.locator("#layout[data-ready=true]").wait_for()
    expect(page.locator("#review")).to_be_hidden()
    expect(page.locator(".message.user .text").first).to_have_text("Something else entirely")
    expect(page.locator("#chat-title")).to_have_text("Something else entirely")


def test_a_delivery_report_renders_as_markdown(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, "/delivery Build a login page with tests and docs.")
    text = last_answer(page).locator(".text")
    expect(text.locator("h1")).to_have_text("Delivery report")
    expect(text.locator("strong").first).to_be_visible()
    expect(text).not_to_contain_text("**")
    expect(page.locator("#mode")).to_have_value("auto")
    keep_screenshot(page, "delivery-report-markdown.png")


MALICIOUS = "\n\n".join(
    (
        "# Title",
        "[click me](javascript:window.pwned=1) and [data](data:text/html,<b>x</b>)",
        '<img src=x onerror="window.pwned=1">',
        "![pic](x onerror=window.pwned=1)",
        "<script>window.pwned=1</script>"
        '<a href="https://example.com" onclick="window.pwned=1">a</a>',
        "[safe](https://example.com/docs)",
        "| a | b |\n|---|---|\n| 1 | <b onmouseover=window.pwned=1>2</b> |",
        "```js\nwindow.pwned = 1;\n```",
    )
)


def test_markdown_is_sanitised_links_open_safely(page: Page, server: Server) -> None:
    """Stored answers with hostile Markdown: nothing runs, raw HTML is text, only safe
    links keep an address, and they open without an opener or a referrer."""
    dto = {
        "conversationId": "c" * 32,
        "messages": [
            {"id": "u1", "role": "user", "text": "show me", "createdAt": "2026-01-01T00:00:00Z"},
            {
                "id": "a1",
                "role": "assistant",
                "text": MALICIOUS,
                "createdAt": "2026-01-01T00:00:00Z",
            },
        ],
        "summaryVersion": 0,
        "pinnedDecisions": [],
        "openQuestions": [],
        "restored": True,
        "review": None,
    }
    listing = {
        "selectedConversationId": "c" * 32,
        "conversations": [
            {
                "id": "c" * 32,
                "title": "hostile",
                "createdAt": "2026-01-01T00:00:00Z",
                "lastActiveAt": "2026-01-01T00:00:00Z",
                "reviewPending": False,
            }
        ],
        "limit": 10,
    }
    page.route("**/api/conversations", lambda route: route.fulfill(json=listing))
    page.route("**/api/chat/thread*", lambda route: route.fulfill(json=dto))
    open_page(page, server.url)
    answer = page.locator(".message.assistant .text")
    expect(answer.locator("h1")).to_have_text("Title")
    messages = page.locator("#messages")
    assert messages.locator("script, img, iframe, [onerror], [onclick], [onmouseover]").count() == 0
    hrefs = [a.get_attribute("href") for a in messages.locator("a").all()]
    # javascript: and data: addresses are dropped (the label stays); raw <a> is text
    assert [h for h in hrefs if h] == ["https://example.com/docs"]
    for link in messages.locator("a[href]").all():
        assert link.get_attribute("rel") == "noopener noreferrer"
        assert link.get_attribute("target") == "_blank"
    expect(answer).to_contain_text('<img src=x onerror="window.pwned=1">')  # shown as text
    expect(answer).to_contain_text('onclick="window.pwned=1"')
    expect(answer.locator("table td").last).to_have_text("<b onmouseover=window.pwned=1>2</b>")
    expect(answer.locator("pre code")).to_have_text("window.pwned = 1;\n")
    messages.locator("a", has_text="click me").click()
    messages.locator("td").last.hover()
    assert page.evaluate("window.pwned") is None
    assert json.dumps(hrefs).count("javascript") == 0
