"""The chat page in a real headless Chromium, against the HTTP app under uvicorn.

One server (the offline model; messages with "slowly" stream with a pause per piece)
and one browser per module; each test has its own browser context, so its own cookie
and session. Each test leaves a screenshot in tests/artifacts/web/; with
UPDATE_DOCS_SCREENSHOT=1 the memory-panel test rewrites docs/chat-page.png.

Without a browser the module is skipped, except under CI=true, where that fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.web import MEDIA_TYPES
from tests.integration.conftest import REPO, Server, start_uvicorn, stop

try:
    from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

    from tests.integration.web_support import (
        ARTIFACTS,
        DOCS_SCREENSHOT,
        UPDATE_DOCS,
        PageLog,
        api_chat,
        browser_unavailable,
        held_requests,
        last_answer,
        launch,
        open_page,
        screenshot_name,
        send,
        stored_texts,
        titles,
    )
except ImportError as exc:  # the dev extra (playwright) is not installed
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"playwright is not installed: {exc}", allow_module_level=True)

pytestmark = pytest.mark.integration

XSS = "<img src=x onerror=alert(1)>"
TASKLIST = "/tasklist Set up CI. Add linting."


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_uvicorn("create_paced_offline", tmp_path_factory.mktemp("web"))
    try:
        yield started
    finally:
        stop(started.process)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    manager = sync_playwright().start()
    try:
        try:
            chromium = launch(manager)
        except Exception as exc:
            browser_unavailable(str(exc).splitlines()[0])
        yield chromium
        chromium.close()
    finally:
        manager.stop()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh context: no cookie, so a new session on the server."""
    fresh = browser.new_context(viewport={"width": 1280, "height": 800})
    yield fresh
    fresh.close()


@pytest.fixture
def log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(context: BrowserContext, log: PageLog, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page of the test's context; its screenshot is kept, and it must have logged no
    error (a CSP violation, an uncaught exception) and opened no dialog."""
    opened = context.new_page()
    log.watch(opened)
    yield opened
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.screenshot(path=ARTIFACTS / screenshot_name(request.node.name))
    assert log.errors == []
    assert log.dialogs == []


def record_partial_answers(page: Page) -> None:
    """Record the answer's text each time it changes while it streams."""
    page.evaluate(
        """() => {
            window.partialAnswers = [];
            const messages = document.getElementById("messages");
            new MutationObserver(() => {
                const text = messages.querySelector(
                    ".message.assistant[data-state=streaming] .text");
                if (text && text.textContent) window.partialAnswers.push(text.textContent);
            }).observe(messages, {subtree: true, childList: true, characterData: true});
        }"""
    )


# -- conversations ------------------------------------------------------------------------


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
    final = answer.locator(".text").text_content() or ""
    partials = list(dict.fromkeys(page.evaluate("window.partialAnswers")))
    assert all(final.startswith(p) for p in partials), (partials, final)
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


def test_a_conversation_is_deleted_after_confirmation(
    page: Page, context: BrowserContext, server: Server
) -> None:
    keep = api_chat(context.request, server.url, "keep me", createConversation=True)
    drop = api_chat(context.request, server.url, "delete me", createConversation=True)
    open_page(page, server.url, f"#c={drop}")
    row = page.locator(f"#conversation-list li[data-id='{drop}']")
    row.locator("[data-role=ask]").click()
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


# -- streaming: the switch lock, stop, busy ---------------------------------------------


def test_switching_is_refused_while_a_reply_streams(
    page: Page, context: BrowserContext, server: Server
) -> None:
    first = api_chat(context.request, server.url, "the first", createConversation=True)
    api_chat(context.request, server.url, "the second", createConversation=True)
    open_page(page, server.url)
    expect(page.locator("#chat-title")).to_have_text("the second")

    with held_requests(page, "**/api/chat") as held:
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
    page.fill("#message", "answer slowly, I will stop you")
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
    page.fill("#message", "take it slowly in the first tab")
    page.press("#message", "Enter")
    expect(last_answer(page).locator(".text")).not_to_have_text("")  # the turn is running

    other.fill("#message", "from the second tab")
    other.press("#message", "Enter")

    expect(other.locator("#notice")).to_be_visible()
    expect(other.locator("#notice-text")).to_contain_text("busy")
    expect(other.locator("#message")).to_have_value("from the second tab")  # not lost
    expect(other.locator("#messages .message")).to_have_count(2)  # only the stored turn
    expect(other.locator("#chat-title")).to_have_text("one conversation, two tabs")
    other.close()
    expect(last_answer(page)).to_have_attribute("data-state", "done")


# -- task-list review -------------------------------------------------------------------


def test_a_task_list_is_approved_from_the_form(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    review = page.locator("#review")
    expect(review).to_be_visible()
    expect(review.locator("h2")).to_have_text("Review the task list")
    titles_in_form = review.locator("[data-field=title]")
    expect(titles_in_form).to_have_count(3)
    assert titles_in_form.nth(0).input_value() == "Set up CI"
    expect(last_answer(page).locator(".progress")).to_contain_text("Planned 3 tasks")

    review.locator("[data-action=approve]").click()

    answer = last_answer(page)
    expect(answer).to_have_attribute("data-state", "done")
    expect(answer.locator(".text")).to_contain_text("### Outcome")
    expect(answer.locator(".text")).to_contain_text("- Add linting")
    expect(answer.locator(".progress")).to_contain_text("Task 3 of 3 done")
    expect(answer.locator(".memory-notes")).to_contain_text("Saved to memory")
    expect(review).to_be_hidden()
    expect(page.locator("#messages .decision")).to_have_text("You approved the task list.")
    assert titles(page) == ["Set up CI. Add linting."]


def test_edited_tasks_are_what_the_task_list_runs(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    review = page.locator("#review")
    rows = review.locator(".task-row")
    expect(rows).to_have_count(3)
    rows.nth(2).get_by_role("button", name="Remove this task").click()
    rows.nth(1).locator("[data-field=title]").fill("Add linting and formatting")
    rows.nth(1).locator("[data-field=criteria]").fill("ruff passes")
    approve = review.locator("[data-action=approve]")
    expect(approve).to_have_text("Approve edited tasks")

    approve.click()

    answer = last_answer(page).locator(".text")
    expect(answer).to_contain_text("- Add linting and formatting")
    expect(answer).not_to_contain_text("Check the result against the goal")


def test_feedback_replans_and_a_rejection_is_not_kept(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, TASKLIST)
    review = page.locator("#review")
    review.locator("[data-action=reject]").click()  # no reason given: the form says so
    expect(review.locator(".form-error").last).to_contain_text("write a few words")

    review.locator("#review-respond").fill("Plan the linting first.")
    review.locator("[data-action=respond]").click()
    expect(page.locator("#messages .decision")).to_have_text(
        "You asked for a new plan: Plan the linting first."
    )
    expect(last_answer(page)).to_have_attribute("data-state", "review")  # a new plan
    expect(review).to_be_visible()

    review.locator("#review-reject").fill("not now")
    review.locator("[data-action=reject]").click()
    expect(last_answer(page).locator(".text")).to_contain_text("not now")
    expect(last_answer(page).locator(".memory-notes")).to_contain_text("Cancelled")
    expect(review).to_be_hidden()
    expect(page.locator("#conversation-list li")).to_have_count(0)  # a rejection is not kept


def test_delivery_stages_are_shown_in_words(page: Page, server: Server) -> None:
    open_page(page, server.url)
    send(page, "/delivery Build a login page with tests and docs.")
    answer = last_answer(page)
    expect(answer.locator(".route")).to_have_text("delivery")
    progress = answer.locator(".progress")
    for words in ("Planned 2 tasks", "2 of 2 tasks done", "Quality review passed", "Report ready"):
        expect(progress).to_contain_text(words)
    expect(answer.locator(".text")).to_contain_text("# Delivery report")


# -- memory -----------------------------------------------------------------------------


def test_the_memory_panel_shows_compaction_pins_and_long_term_items(
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
    expect(panel.locator(".pinned-decisions")).to_contain_text("Tuesdays")
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


# -- safety and layout ------------------------------------------------------------------

LEAKY = "Traceback (most recent call last): sqlite3.OperationalError in /srv/agent/x.py"


def test_server_failures_are_told_in_the_pages_own_words(page: Page, server: Server) -> None:
    open_page(page, server.url)
    refused = {"error": {"code": "internal_error", "message": LEAKY}}
    page.route("**/api/chat", lambda route: route.fulfill(status=500, json=refused))
    page.fill("#message", "first try")
    page.press("#message", "Enter")
    expect(page.locator("#notice-text")).to_contain_text("could not complete")
    expect(page.locator("#message")).to_have_value("first try")
    page.unroute("**/api/chat")

    broken = f"event: error\ndata: {json.dumps({'code': 'internal_error', 'message': LEAKY})}\n\n"
    page.route(
        "**/api/chat",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=broken),
    )
    page.press("#message", "Enter")
    expect(last_answer(page)).to_have_attribute("data-state", "failed")
    expect(last_answer(page)).to_contain_text("The turn failed on the server")
    assert "Traceback" not in page.locator("#layout").inner_text()
    assert "sqlite" not in page.locator("#layout").inner_text()


def test_markup_in_messages_is_shown_as_text(page: Page, log: PageLog, server: Server) -> None:
    open_page(page, server.url)
    send(page, XSS)
    expect(page.locator(".message.user .text")).to_have_text(XSS)
    expect(last_answer(page).locator(".text")).to_contain_text(XSS)
    expect(page.locator("#chat-title")).to_have_text(XSS)
    expect(page.locator("#conversation-list .conversation-title")).to_have_text(XSS)

    page.reload()
    page.locator("#layout[data-ready=true]").wait_for()
    expect(page.locator(".message.user .text")).to_have_text(XSS)
    assert page.locator("#layout img").count() == 0
    assert log.dialogs == []


def test_the_page_fits_a_360_pixel_screen(browser: Browser, server: Server) -> None:
    narrow = browser.new_context(viewport={"width": 360, "height": 740})
    page = narrow.new_page()
    log = PageLog()
    log.watch(page)
    try:
        open_page(page, server.url)
        expect(page.locator("#sidebar")).to_be_hidden()
        send(page, "a message on a small screen")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 360

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=ARTIFACTS / "test_the_page_fits_a_360_pixel_screen-chat.png")

        page.click("#toggle-sidebar")
        expect(page.locator("#sidebar")).to_be_visible()
        expect(page.locator("#toggle-sidebar")).to_have_attribute("aria-expanded", "true")
        page.locator("#conversation-list .conversation-open").first.click()
        expect(page.locator("#sidebar")).to_be_hidden()

        page.click("#toggle-memory")
        box = page.locator("#memory-panel").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 360
        page.screenshot(path=ARTIFACTS / "test_the_page_fits_a_360_pixel_screen.png")
        assert log.errors == [] and log.dialogs == []
    finally:
        narrow.close()


# -- serving --------------------------------------------------------------------------------


def _imports(source: str) -> list[str]:
    return re.findall(r'^import .* from "\./([\w.-]+)";$', source, flags=re.MULTILINE)


def test_the_page_is_served_whole_with_a_strict_policy(server: Server) -> None:
    with httpx.Client(base_url=server.url) as client:
        index = client.get("/")
        assert index.status_code == 200
        assert index.headers["content-type"].startswith("text/html")
        policy = index.headers["content-security-policy"]
        assert "default-src 'self'" in policy and "script-src 'self'" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
        assert index.headers["x-content-type-options"] == "nosniff"
        assert not re.search(r"<script(?![^>]*\bsrc=)", index.text)  # no inline script
        assert " style=" not in index.text

        # every module the page loads is served, as JavaScript, from this server only
        pending, seen = ["app.js"], set()
        while pending:
            name = pending.pop()
            seen.add(name)
            module = client.get(f"/web/{name}")
            assert module.status_code == 200, name
            assert module.headers["content-type"].startswith("text/javascript")
            assert module.headers["x-content-type-options"] == "nosniff"
            assert not re.search(r"https?://", module.text), name
            assert "innerHTML" not in module.text and "insertAdjacentHTML" not in module.text
            pending.extend(set(_imports(module.text)) - seen)
        assert {"app.js", "api.js", "sse.js", "review.js", "memory.js"} <= seen
        style = client.get("/web/style.css")
        assert style.status_code == 200 and "url(" not in style.text

        assert client.get("/web/__init__.py").status_code == 404


def test_a_built_wheel_carries_the_page(tmp_path: Path) -> None:
    """A non-editable install serves the page too: the static files are package data."""
    source = tmp_path / "source"
    for name in ("agent", "graphs", "memory"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        packaged = {Path(name).name for name in archive.namelist() if name.startswith("agent/web/")}
    page_files = {
        path.name for path in (REPO / "agent" / "web").iterdir() if path.suffix in MEDIA_TYPES
    }
    assert "index.html" in page_files and "app.js" in page_files
    assert page_files <= packaged
