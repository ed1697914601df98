"""The page itself: text shown as text, a 360-pixel screen, the files and headers it is
served with, and a wheel that carries it."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

from agent.web import MEDIA_TYPES
from tests.browser.support import (
    ARTIFACTS,
    Browser,
    Page,
    PageLog,
    expect,
    last_answer,
    open_page,
    send,
)
from tests.integration.conftest import REPO, Server

pytestmark = pytest.mark.integration

XSS = "<img src=x onerror=alert(1)>"


def test_markup_in_messages_is_shown_as_text(page: Page, log: PageLog, server: Server) -> None:
    open_page(page, server.url)
    send(page, XSS)
    expect(page.locator(".message.user .text")).to_have_text(XSS)
    send(page, "and again")  # the offline answer quotes the previous message
    expect(last_answer(page).locator(".text")).to_contain_text(XSS)
    expect(page.locator("#chat-title")).to_have_text(XSS)
    expect(page.locator("#conversation-list .conversation-title")).to_have_text(XSS)

    page.reload()
    page.locator("#layout[data-ready=true]").wait_for()
    expect(page.locator(".message.user .text")).to_have_text([XSS, "and again"])
    assert page.locator("#layout img").count() == 0
    assert log.dialogs == []


def test_a_sentence_after_a_list_in_an_answer_is_a_paragraph(page: Page, server: Server) -> None:
    """The offline answer lists the long-term items, then goes on: the sentence after the
    list is a paragraph of its own, not the end of the last item."""
    open_page(page, server.url)
    added = page.request.post(f"{server.url}/api/memories", data={"text": "I live in Porto"})
    assert added.status == 201, added.text()
    send(page, "Where should I go for a walk?")
    text = last_answer(page).locator(".text")
    expect(text.locator("ul > li")).to_have_text(["[fact] I live in Porto"])
    expect(text.locator("ul + p")).to_have_text("I see no earlier messages in this conversation.")


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


def _imports(source: str) -> list[str]:
    return re.findall(r'^import .* from "\./([\w./-]+)";$', source, flags=re.MULTILINE)


def _vendored_checksums() -> dict[str, str]:
    """The vendored modules and their sha256, as agent/web/vendor/README.md lists them."""
    table = (REPO / "agent" / "web" / "vendor" / "README.md").read_text()
    return dict(re.findall(r"^\| `([\w.-]+\.js)` \|.*\| `([0-9a-f]{64})` \|$", table, re.M))


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
            if name.startswith("vendor/"):  # a library as published, checked by checksum
                digest = hashlib.sha256(module.content).hexdigest()
                assert digest == _vendored_checksums()[name.removeprefix("vendor/")], name
                continue
            assert not re.search(r"https?://", module.text), name
            assert "innerHTML" not in module.text and "insertAdjacentHTML" not in module.text
            pending.extend(set(_imports(module.text)) - seen)
        assert {"app.js", "api.js", "sse.js", "review.js", "memory.js", "markdown.js"} <= seen
        assert {f"vendor/{name}" for name in _vendored_checksums()} <= seen
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
    } | {path.name for path in (REPO / "agent" / "web" / "vendor").iterdir()}
    assert "index.html" in page_files and "app.js" in page_files
    assert page_files <= packaged
