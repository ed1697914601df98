"""Fixtures of the chat page tests: one server and one browser for the whole package,
and per test a fresh browser context (no cookie: a session of its own) and page.

The server is the real HTTP app under uvicorn with the offline model, paced for
messages that contain "slowly" (tests.integration.http_app:create_paced_offline); the
tests of items that later statements change use `extracting_server`, with a scripted
extraction model.
Without a browser the tests are skipped, except under CI=true, where that fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.integration.conftest import Server, start_uvicorn, stop

if TYPE_CHECKING:
    from tests.browser.support import Browser, BrowserContext, Page, PageLog

# Playwright is imported inside the fixtures, through `tests.browser.support`: without
# it the test modules are skipped at import, and these fixtures never run.


def serve(factory: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A page test server from `factory` (tests.integration.http_app), stopped after."""
    started = start_uvicorn(factory, tmp_path_factory.mktemp("web"))
    try:
        yield started
    finally:
        stop(started.process)


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serve("create_paced_offline", tmp_path_factory)


@pytest.fixture(scope="package")
def extracting_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The same server whose long-term memory has a scripted extraction model
    (tests.integration.http_app:scripted_extraction): items a later statement changes."""
    yield from serve("create_paced_offline_extracting", tmp_path_factory)


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    from tests.browser.support import browser_unavailable, expect, launch, sync_playwright

    # an answer can take longer than Playwright's 5 s while the whole suite shares two
    # cores (a plan's rejection note missed it once in a full `make test`); a waited-for
    # state that never comes still fails, only later
    expect.set_options(timeout=15_000)
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
    from tests.browser.support import PageLog

    return PageLog()


@pytest.fixture
def page(context: BrowserContext, log: PageLog, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page of the test's context; its screenshot is kept, and it must have logged no
    error (a CSP violation, an uncaught exception) and opened no dialog."""
    from tests.browser.support import ARTIFACTS, screenshot_name

    opened = context.new_page()
    log.watch(opened)
    yield opened
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened.screenshot(path=ARTIFACTS / screenshot_name(request.node.name))
    assert log.errors == []
    assert log.dialogs == []
