"""Helpers of the chat page tests: Chromium (Debian's, driven by Playwright), artifacts,
and what a test does on the page (send, wait, read).

Importing this module skips the importing test module when Playwright is not installed,
except under `CI=true`, where that is an error.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

try:
    from playwright.sync_api import (
        APIRequestContext,
        Browser,
        BrowserContext,
        ConsoleMessage,
        Locator,
        Page,
        Playwright,
        Route,
        expect,
        sync_playwright,
    )
except ImportError as exc:  # the dev extra (playwright) is not installed
    if os.environ.get("CI") == "true":
        raise
    pytest.skip(f"playwright is not installed: {exc}", allow_module_level=True)

from agent.api.sessions import NEW_SESSION, SESSION_HEADER
from tests.integration.conftest import REPO

ARTIFACTS = REPO / "tests" / "artifacts" / "web"
"""Screenshots of each test (ignored by git, except the two docs/evaluation.md links)."""
DOCS_SCREENSHOT = REPO / "docs" / "chat-page.png"
UPDATE_DOCS = "UPDATE_DOCS_SCREENSHOT"
"""Set to 1 to rewrite the README's screenshot from the test run."""
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
NO_BROWSER = (
    "no Chromium could start ({reason}); install Debian's chromium package "
    "(apt-get install chromium)"
)


def chromium_path() -> str | None:
    """Debian's chromium (Playwright's own browser download is not used)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found or next((p for p in CHROMIUM_PATHS if Path(p).exists()), None)


def browser_unavailable(reason: str) -> None:
    """Skip (on a developer machine without a browser), or fail under `CI=true`."""
    message = NO_BROWSER.format(reason=reason)
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {message}")
    pytest.skip(message)


def launch(playwright: Playwright) -> Browser:
    executable = chromium_path()
    if executable is None:
        browser_unavailable("chromium is not on PATH")
    # --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start
    return playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])


@dataclass
class PageLog:
    """What the page said that a test should never see: uncaught errors, console errors
    (a Content-Security-Policy violation is one), and dialogs (`alert`)."""

    errors: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def on_console(self, message: ConsoleMessage) -> None:
        # a refused request (404, 409) is logged by Chromium itself; the page shows those
        if message.type == "error" and not message.text.startswith("Failed to load resource"):
            self.errors.append(message.text)

    def watch(self, page: Page) -> None:
        page.on("console", self.on_console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)


KEPT_SCREENSHOTS = ("review-pending-after-reload.png", "delivery-report-markdown.png")
"""Screenshots kept in git (docs/evaluation.md links them); rewritten only with UPDATE_DOCS=1."""


def keep_screenshot(page: Page, name: str) -> None:
    """Screenshot the page as `<name>-run.png` in the artefacts (ignored by git); with
    `UPDATE_DOCS_SCREENSHOT=1`, also over the kept `name`, so that a plain test run
    leaves the working tree clean."""
    assert name in KEPT_SCREENSHOTS
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    run = ARTIFACTS / name.replace(".png", "-run.png")
    page.screenshot(path=run)
    if os.environ.get(UPDATE_DOCS) == "1":
        (ARTIFACTS / name).write_bytes(run.read_bytes())


def screenshot_name(node_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", node_name) + ".png"


def open_page(page: Page, url: str, fragment: str = "") -> Page:
    """Load the chat page and wait until it has shown what the server holds."""
    page.goto(f"{url}/{fragment}")
    page.locator("#layout[data-ready=true]").wait_for()
    return page


def send(page: Page, text: str) -> None:
    """Type `text` and press Enter; returns once the reply has finished."""
    answers = page.locator(".message.assistant")
    before = answers.count()
    page.fill("#message", text)
    page.press("#message", "Enter")
    answer = answers.nth(before)
    answer.wait_for()
    expect(answer).not_to_have_attribute("data-state", "streaming")


def last_answer(page: Page) -> Any:
    return page.locator(".message.assistant").last


def titles(page: Page) -> list[str]:
    return page.locator("#conversation-list .conversation-title").all_inner_texts()


def api_chat(request: APIRequestContext, url: str, message: str, **body: Any) -> str:
    """A turn through the API in the page's session (the context's cookie, or a new one:
    the request is a script's, not the page's), read to the end of the memory upkeep
    after it; the id of its conversation."""
    response = request.post(
        f"{url}/api/chat?followUpkeep=true",
        data={"message": message, **body},
        headers={SESSION_HEADER: NEW_SESSION},
    )
    assert response.status == 200, response.text()
    assert "event: done" in response.text()
    return response.headers["x-conversation-id"]


def stored_texts(request: APIRequestContext, url: str, conversation_id: str) -> list[str]:
    """The conversation's messages as the server holds them."""
    response = request.get(f"{url}/api/chat/thread", params={"conversationId": conversation_id})
    assert response.ok, response.text()
    return [m["text"] for m in response.json()["messages"]]


@contextmanager
def held_requests(page: Page, pattern: str | re.Pattern[str]) -> Iterator[list[Route]]:
    """Hold requests matching `pattern` in the browser (they reach the server only when a
    test continues them): a reply stays 'streaming' on the page for as long as needed."""
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route(pattern, hold)
    try:
        yield held
    finally:
        page.unroute(pattern)


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


# Test modules take Playwright from here, so that its absence skips them (see above).
__all__ = [
    "ARTIFACTS",
    "Browser",
    "BrowserContext",
    "Locator",
    "Page",
    "PageLog",
    "Route",
    "expect",
    "sync_playwright",
]
