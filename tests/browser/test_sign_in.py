"""The page on a server that asks who you are (API keys configured): a sign-in form, a
refused key, then the user's own conversations after a sign-in that lasts a reload."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.browser.support import Page, expect, open_page, send
from tests.identities import KEYS, key_entries
from tests.integration.conftest import Server, start_uvicorn, stop

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    started = start_uvicorn(
        "create_paced_offline", tmp_path_factory.mktemp("web-keys"), AGENT_API_KEYS=key_entries()
    )
    try:
        yield started
    finally:
        stop(started.process)


def sign_in(page: Page, secret: str) -> None:
    page.fill("#sign-in-secret", secret)
    page.click("#sign-in button[type=submit]")


def test_the_page_asks_for_a_key_and_then_shows_the_users_own(page: Page, keyed: Server) -> None:
    page.goto(keyed.url)
    expect(page.locator("#sign-in")).to_be_visible()
    expect(page.locator("#layout")).to_be_hidden()

    sign_in(page, "not-a-key")
    expect(page.locator("#sign-in-error")).to_have_text("That key or token was not accepted.")
    expect(page.locator("#sign-in-secret")).to_have_value("")

    sign_in(page, KEYS["alice"])
    page.locator("#layout[data-ready=true]").wait_for()
    send(page, "a message from alice")
    expect(page.locator("#conversation-list .conversation-title")).to_have_text(
        "a message from alice"
    )
    # the cookie outlives a reload; the key is kept nowhere in the page
    open_page(page, keyed.url)
    expect(page.locator("#conversation-list .conversation-title")).to_have_text(
        "a message from alice"
    )
    assert KEYS["alice"] not in page.content()
    cookies = {c["name"]: c for c in page.context.cookies()}
    assert cookies["agent_identity"]["httpOnly"] and KEYS["alice"] not in str(cookies)
