"""Cross-site request forgery in Chromium: a page on another origin auto-submits a form
to the app. The victim's cookie is neither used nor replaced, and nothing is written."""

from __future__ import annotations

import html
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agent.api.sessions import COOKIE_NAME
from tests.browser.support import BrowserContext, open_page
from tests.integration.conftest import Server

pytestmark = pytest.mark.integration

ATTACK = """<!doctype html><html><body>
<form id="f" method="POST" action="{action}" enctype="text/plain">
<input name='{{"text": "I am the attacker", "pad": "' value='"}}'>
</form>
<script>document.getElementById("f").submit();</script>
</body></html>"""
TARGETS = ("/api/health", "/api/memories", "/api/chat")


class Attacker:
    """A server on another origin whose page posts a form to `target` on load."""

    def __init__(self, host: str, target: str) -> None:
        page = ATTACK.format(action=html.escape(target)).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Attacker:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def victim(context: BrowserContext, server: Server) -> str:
    """The victim's session: the page loaded once and one item added by the page itself
    (a same-origin fetch); yields the session cookie's value."""
    page = context.new_page()
    open_page(page, server.url)
    status = page.evaluate(
        """async () => (await fetch("/api/memories", {method: "POST",
            headers: {"Content-Type": "application/json"},
            body: JSON.stringify({text: "I like green tea"})})).status"""
    )
    assert status == 201
    page.close()
    return cookie_of(context)


def cookie_of(context: BrowserContext) -> str:
    (value,) = [c["value"] for c in context.cookies() if c["name"] == COOKIE_NAME]
    return value


# 127.0.0.2 is another site (no cookie is sent); another port of 127.0.0.1 is the same
# site, so Chromium sends the SameSite=Lax cookie along: both must be refused
@pytest.mark.parametrize("host", ["127.0.0.2", "127.0.0.1"])
@pytest.mark.parametrize("path", TARGETS)
def test_a_form_posted_from_another_origin_is_refused(
    context: BrowserContext, server: Server, victim: str, host: str, path: str
) -> None:
    with Attacker(host, f"{server.url}{path}") as attacker:
        page = context.new_page()  # not watched: Chromium logs the 403 as an error
        with page.expect_response(lambda r: r.url == f"{server.url}{path}") as posted:
            page.goto(attacker.url)
        response = posted.value
        assert response.request.method == "POST"
        assert response.status == 403
        assert response.json()["error"]["code"] in {"cross_site_request", "session_required"}
        assert "set-cookie" not in response.all_headers()
        page.close()
    assert cookie_of(context) == victim
    memories = context.request.get(f"{server.url}/api/memories").json()["memories"]
    assert [item["text"] for item in memories] == ["I like green tea"]
    conversations = context.request.get(f"{server.url}/api/conversations").json()
    assert conversations["conversations"] == []
