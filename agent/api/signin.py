"""Signing in from the page (a browser cannot add a header to the page's requests): with
an identity mode, `POST /api/session` with a key or token (authenticated like any
request) answers with an HttpOnly, SameSite=Strict cookie naming the user, signed, for
`/api/…`, at most 12 hours, never past the token's expiry, only while its key stays
listed. `DELETE /api/session` signs the user out in the database: every worker refuses
their cookies made so far (copied ones too). With no mode, both are 404.
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
