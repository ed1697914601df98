"""The chat page: static files in this package, served by the HTTP app at `/` and `/web/…`.

No build step and nothing from a network: `index.html` loads plain ES modules and one
style sheet from `/web/` (and two vendored modules, a Markdown renderer and an HTML
sanitiser, from `/web/vendor/`), and talks only to the app's `/api/…` routes. A strict
Content-Security-Policy holds the page to that (no inline script or style, no other
origin), so text that reaches the page can never run as code.

Under `langgraph dev` the app's routes come before LangGraph's, so `/` here shadows
LangGraph's root health route (its `/ok` stays); `/web/` is a prefix LangGraph does not
use, and the page's assets are served by name from a fixed table, never by a path.
"""

from pathlib import Path

from fastapi import APIRouter, HTTPException
from fastapi.responses import FileResponse

WEB_DIR = Path(__file__).resolve().parent
ASSET_PREFIX = "/web/"
INDEX = "index.html"

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
"""What the page is made of; other files in the package (its Python) are never served."""

CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    # revalidate each load (the ETag makes that cheap): an upgraded server's page and
    # its modules never mix with stale copies
    "Cache-Control": "no-cache",
}

ASSETS = {
    path.relative_to(WEB_DIR).as_posix(): path
    for path in sorted([*WEB_DIR.iterdir(), *(WEB_DIR / "vendor").glob("*.js")])
    if path.suffix in MEDIA_TYPES and path.name != INDEX
}
"""The page's assets by path under `/web/` (the vendored Markdown renderer and sanitiser
under `vendor/`, which `vendor/README.md` names), read once at import."""

router = APIRouter(include_in_schema=False)


def _file(path: Path) -> FileResponse:
    return FileResponse(path, media_type=MEDIA_TYPES[path.suffix], headers=SECURITY_HEADERS)


@router.api_route("/", methods=["GET", "HEAD"])
def page() -> FileResponse:
    """The chat page."""
    return _file(WEB_DIR / INDEX)


@router.api_route("/web/{name:path}", methods=["GET", "HEAD"])
def asset(name: str) -> FileResponse:
    """One of the page's modules, its style sheet, its icon or a vendored module."""
    path = ASSETS.get(name)
    if path is None:
        raise HTTPException(status_code=404)
    return _file(path)
