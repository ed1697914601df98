"""Who a request is (agent/identity.py), and the graph's side of it (graphs/run_input.py):
keys, tokens, a trusted proxy's header, the sign-in cookie, the session they name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableLambda

from agent.api.sessions import read_cookie
from agent.identity import (
    COOKIE_SECONDS,
    Authenticator,
    SignedIn,
    Unauthenticated,
    session_of,
)
from agent.settings import Settings, SettingsError
from graphs.request import InvalidRequest, run_ids
from graphs.state import Context
from memory.schema import validate_id
from tests.identities import AUDIENCE, ISSUER, KEYS, Provider, key_entries

SECRET = "s" * 40


@pytest.fixture(scope="module")
def provider() -> Provider:
    return Provider()


@pytest.fixture
def jwks(provider: Provider, tmp_path: Path) -> Path:
    return provider.write_jwks(tmp_path / "jwks.json")


def authenticator(**env: str) -> Authenticator:
    found = Authenticator.from_settings(Settings.from_env(env), lambda: SECRET)
    assert found is not None
    return found


@pytest.fixture
def every_mode(jwks: Path) -> Authenticator:
    return authenticator(
        AGENT_API_KEYS=key_entries(),
        AGENT_JWT_ISSUER=ISSUER,
        AGENT_JWT_AUDIENCE=AUDIENCE,
        AGENT_JWKS=str(jwks),
        AGENT_PROXY_USER_HEADER="X-Forwarded-User",
        AGENT_TRUSTED_PROXIES="10.0.0.0/8, 192.168.1.7, fd00::/8",
    )


def test_no_mode_configured_means_anonymous_sessions() -> None:
    assert Authenticator.from_settings(Settings.from_env({}), lambda: SECRET) is None


def test_an_api_key_names_its_user_in_either_header(every_mode: Authenticator) -> None:
    by_header = every_mode.authenticate({"x-api-key": KEYS["alice"]}, "127.0.0.1")
    by_bearer = every_mode.authenticate({"authorization": f"Bearer {KEYS['bob']}"}, None)
    assert (by_header.session_id, by_header.via) == ("key:alice", "key")
    assert (by_bearer.session_id, by_bearer.via) == ("key:bob", "key")


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-api-key": "not-a-key"},
        {"x-api-key": ""},
        {"authorization": "Bearer not-a-key"},
        {"authorization": f"Basic {KEYS['alice']}"},  # only Bearer carries a key
        {"x-api-key": KEYS["alice"].upper()},
    ],
)
def test_missing_or_wrong_keys_are_refused(every_mode: Authenticator, headers: Any) -> None:
    with pytest.raises(Unauthenticated):
        every_mode.authenticate(headers, "127.0.0.1")


def test_a_valid_token_names_its_subject(every_mode: Authenticator, provider: Provider) -> None:
    signed = every_mode.authenticate({"authorization": f"Bearer {provider.token('carol')}"}, None)
    assert (signed.session_id, signed.via) == ("jwt:carol", "jwt")
    assert signed.expires is not None and signed.expires > 0


@pytest.mark.parametrize(
    "problem",
    [
        "expired",
        "not yet valid",
        "wrong audience",
        "wrong issuer",
        "wrong signature",
        "shared secret",
        "no expiry",
    ],
)
def test_bad_tokens_are_refused(
    every_mode: Authenticator, provider: Provider, problem: str
) -> None:
    token = provider.refused_tokens()[problem]
    with pytest.raises(Unauthenticated) as refused:
        every_mode.authenticate({"authorization": f"Bearer {token}"}, None)
    assert str(refused.value).startswith("the bearer token is not valid")


def test_a_token_is_a_key_when_no_issuer_is_configured(provider: Provider) -> None:
    keys_only = authenticator(AGENT_API_KEYS=key_entries())
    with pytest.raises(Unauthenticated, match="API key"):
        keys_only.authenticate({"authorization": f"Bearer {provider.token('carol')}"}, None)


@pytest.mark.parametrize(
    ("client", "session"),
    [
        ("10.1.2.3", "proxy:alice"),
        ("192.168.1.7", "proxy:alice"),
        ("::ffff:10.0.0.9", "proxy:alice"),  # an IPv4 peer seen through a dual-stack socket
        ("fd00::1", "proxy:alice"),
    ],
)
def test_the_proxy_header_is_taken_from_a_trusted_address(
    every_mode: Authenticator, client: str, session: str
) -> None:
    signed = every_mode.authenticate({"x-forwarded-user": " alice "}, client)
    assert (signed.session_id, signed.via) == (session, "proxy")


@pytest.mark.parametrize("client", ["127.0.0.1", "192.168.1.8", "11.0.0.1", "::1", None, "?"])
def test_the_proxy_header_from_any_other_address_is_refused(
    every_mode: Authenticator, client: str | None
) -> None:
    # not even a valid key beside it lets the forged header through
    headers = {"x-forwarded-user": "alice", "x-api-key": KEYS["bob"]}
    with pytest.raises(Unauthenticated, match="trusted proxy"):
        every_mode.authenticate(headers, client)


def test_a_proxy_that_names_nobody_is_refused(every_mode: Authenticator) -> None:
    with pytest.raises(Unauthenticated):
        every_mode.authenticate({"x-forwarded-user": "  "}, "10.0.0.1")


def test_a_trusted_proxy_may_pass_a_key_client_through(every_mode: Authenticator) -> None:
    signed = every_mode.authenticate({"x-api-key": KEYS["alice"]}, "10.0.0.1")
    assert signed.session_id == "key:alice"


@pytest.mark.parametrize(
    ("user", "session"),
    [
        ("alice", "key:alice"),
        ("auth0|42", "key:auth0_7c42"),
        ("a_b", "key:a_5fb"),
        ("a@b.example", "key:a_40b_2eexample"),
        ("Zoë", "key:Zo_c3_ab"),
    ],
)
def test_a_user_id_becomes_a_valid_distinct_session_id(user: str, session: str) -> None:
    assert session_of("key", user) == session
    assert validate_id(session, "session id") == session
    # a colon is a session id's alone: `session:conversation` still splits one way
    with pytest.raises(ValueError, match="conversation id"):
        validate_id(session, "conversation id")


def test_an_empty_or_too_long_user_id_is_refused() -> None:
    for user in ("", "é" * 30):
        with pytest.raises(Unauthenticated):
            session_of("jwt", user)


def test_the_sign_in_cookie_names_its_user_until_it_expires(every_mode: Authenticator) -> None:
    alice = every_mode.authenticate({"x-api-key": KEYS["alice"]}, None)
    value, max_age = every_mode.cookie_for(alice, now=1_000)
    assert max_age == COOKIE_SECONDS
    signed = every_mode.authenticate({}, None, cookie=value, now=1_000 + max_age - 1)
    assert (signed.session_id, signed.via) == ("key:alice", "cookie")
    with pytest.raises(Unauthenticated):
        every_mode.authenticate({}, None, cookie=value, now=1_000 + max_age)
    tampered = value.replace("key:alice", "key:bob")
    with pytest.raises(Unauthenticated):
        every_mode.authenticate({}, None, cookie=tampered, now=1_000)


def test_a_cookie_never_outlives_its_token(every_mode: Authenticator) -> None:
    _, max_age = every_mode.cookie_for(SignedIn("jwt:carol", "jwt", expires=1_060.0), now=1_000)
    assert max_age == 60


def test_a_cookie_stops_when_its_key_is_rotated_or_its_mode_withdrawn(jwks: Path) -> None:
    before = authenticator(
        AGENT_API_KEYS=key_entries(),
        AGENT_JWT_ISSUER=ISSUER,
        AGENT_JWT_AUDIENCE=AUDIENCE,
        AGENT_JWKS=str(jwks),
    )
    alice, _ = before.cookie_for(before.authenticate({"x-api-key": KEYS["alice"]}, None), 1_000)
    carol, _ = before.cookie_for(SignedIn("jwt:carol", "jwt", expires=5_000.0), now=1_000)
    rotated = {"alice": "alice-rotated-key-0123456789", "bob": KEYS["bob"]}
    after = authenticator(AGENT_API_KEYS=key_entries(rotated))
    for cookie in (alice, carol):
        assert before.authenticate({}, None, cookie=cookie, now=1_001).via == "cookie"
        with pytest.raises(Unauthenticated):
            after.authenticate({}, None, cookie=cookie, now=1_001)


def test_credentials_in_headers_win_over_the_cookie(every_mode: Authenticator) -> None:
    cookie, _ = every_mode.cookie_for(SignedIn("key:alice", "key"))
    assert every_mode.authenticate({"x-api-key": KEYS["bob"]}, None, cookie=cookie).session_id == (
        "key:bob"
    )
    with pytest.raises(Unauthenticated):
        every_mode.authenticate({"x-api-key": "wrong"}, None, cookie=cookie)


@pytest.mark.parametrize(
    "content", ["", "{}", '{"keys": []}', '{"keys": [{"kty": "RSA"}]}', "not json"]
)
def test_an_unusable_jwks_file_refuses_to_start(tmp_path: Path, content: str) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(content)
    with pytest.raises(SettingsError, match="AGENT_JWKS"):
        authenticator(AGENT_JWT_ISSUER=ISSUER, AGENT_JWT_AUDIENCE=AUDIENCE, AGENT_JWKS=str(path))
    with pytest.raises(SettingsError, match="AGENT_JWKS"):
        authenticator(
            AGENT_JWT_ISSUER=ISSUER,
            AGENT_JWT_AUDIENCE=AUDIENCE,
            AGENT_JWKS=str(tmp_path / "missing.json"),
        )


def ids_as(user: Any, state: dict[str, Any], context: Context | None = None) -> tuple[str, str]:
    """`run_ids` inside a run whose config carries `user` as LangGraph's server sets it."""

    def ids(_: None) -> tuple[str, str]:
        context_ = context or Context()
        return run_ids(state, context_.session_id, context_.conversation_id, "thread-1")

    return RunnableLambda(ids).invoke(None, {"configurable": {"langgraph_auth_user": user}})


def test_a_signed_in_run_is_the_users_session() -> None:
    alice = {"identity": "key:alice"}
    assert ids_as(alice, {"message": "hi"}) == ("key:alice", "thread-1")
    assert ids_as(alice, {"session_id": "key:alice"}) == ("key:alice", "thread-1")
    assert ids_as(alice, {}, Context(session_id="studio")) == ("key:alice", "thread-1")
    # without a signed-in user, the run's own session id holds, as before
    assert ids_as(None, {"session_id": "s1"}) == ("s1", "thread-1")


@pytest.mark.parametrize(
    ("state", "context"),
    [
        ({"session_id": "key:bob"}, None),
        ({}, Context(session_id="key:bob")),
        ({"session_id": "key:alice"}, Context(session_id="anything")),
    ],
)
def test_a_run_naming_another_session_is_refused(
    state: dict[str, Any], context: Context | None
) -> None:
    with pytest.raises(InvalidRequest, match="another session"):
        ids_as({"identity": "key:alice"}, state, context)


def test_a_cookie_with_any_character_is_refused_not_an_error(every_mode: Authenticator) -> None:
    for value in ("key:alice.99999999999.sïgnature", "é", "key:alice..", ""):
        with pytest.raises(Unauthenticated):
            every_mode.authenticate({}, None, cookie=value, now=1_000)
        assert read_cookie(SECRET, value) is None  # the anonymous session cookie alike
