"""Signing in from the page: a key or token traded for a cookie, and signing out.

A browser cannot add a header to the page's own requests. With an identity mode
configured, `POST /api/session` carrying an API key or a bearer token (the request is
authenticated like any other) answers with an HttpOnly, SameSite=Strict cookie signed
with the server secret that names the user, for `/api/…` only, for at most 12 hours and
never past the token's expiry, and only while the key it was made with stays listed; the
app and LangGraph's auth handler accept it there. A trusted proxy's user needs none (the
proxy names them on every request). `DELETE /api/session` removes it and signs the user
out in the database: every sign-in cookie of theirs made so far (a copied one, another
browser's) is refused by every worker from then on. With no mode configured, both are
404: sessions are anonymous.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response

from agent.identity import COOKIE_NAME, Authenticator, SignedIn

router = APIRouter(prefix="/api/session", tags=["session"])
COOKIE_PATH = "/api/"


def signed_in(request: Request) -> SignedIn:
    """The user the session middleware signed in (404 when sessions are anonymous)."""
    signed: SignedIn | None = getattr(request.state, "signed_in", None)
    if signed is None:
        raise HTTPException(404)
    return signed


@router.post("")
def sign_in(request: Request, response: Response) -> dict[str, str]:
    """`{"sessionId": "mode:user"}`, with the sign-in cookie (none behind the proxy)."""
    signed = signed_in(request)
    if signed.via != "proxy":
        authenticator: Authenticator = request.app.state.identity
        value, max_age = authenticator.cookie_for(signed)
        secure = request.app.state.agent.settings.secure_cookies or request.url.scheme == "https"
        response.set_cookie(
            COOKIE_NAME,
            value,
            max_age=max_age,
            path=COOKIE_PATH,
            secure=secure,
            httponly=True,
            samesite="strict",
        )
    return {"sessionId": signed.session_id}


@router.delete("", status_code=204)
def sign_out(request: Request) -> Response:
    """Remove the sign-in cookie and end every sign-in cookie of the user."""
    signed = signed_in(request)
    authenticator: Authenticator = request.app.state.identity
    if authenticator.sign_ins is not None:
        authenticator.sign_ins.sign_out(signed.session_id)
    response = Response(status_code=204)
    response.delete_cookie(COOKIE_NAME, path=COOKIE_PATH, httponly=True, samesite="strict")
    return response
