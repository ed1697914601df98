"""Settings refuse values the agent cannot use, naming the variable, before anything opens."""

from __future__ import annotations

import pytest

from agent.settings import DEFAULT_MODEL, Settings, SettingsError


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("AGENT_RETENTION_DAYS", "inf"),
        ("AGENT_RETENTION_DAYS", "nan"),
        ("AGENT_RETENTION_DAYS", "1e9"),
        ("AGENT_RETENTION_DAYS", "-1"),
        ("AGENT_MEMORY_TTL_DAYS", "inf"),
        ("AGENT_MEMORY_TTL_DAYS", "-inf"),
        ("AGENT_MEMORY_TTL_DAYS", "nan"),
        ("AGENT_MEMORY_TTL_DAYS", "1e12"),
        ("AGENT_MEMORY_TTL_DAYS", "1e300"),
        ("AGENT_MEMORY_TTL_DAYS", "1e400"),
        ("AGENT_REQUEST_TIMEOUT", "inf"),
        ("AGENT_REQUEST_TIMEOUT", "nan"),
        ("AGENT_MAX_RETRIES", "1000000000"),
        ("AGENT_NEW_SESSIONS_PER_MINUTE", "-1"),
    ],
)
def test_unusable_numbers_are_refused_naming_the_variable(
    variable: str, value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SettingsError) as given:
        Settings.from_env({variable: value})
    assert given.value.args[0].startswith(f"{variable}: ")
    # the process environment goes through the same checks
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as read:
        Settings.from_env()
    assert variable in read.value.args[0]


@pytest.mark.parametrize(
    ("variable", "field"),
    [
        ("AGENT_EMBEDDINGS_MODEL", "embeddings_model"),
        ("AGENT_COMPACTION_MODEL", "compaction_model"),
        ("OPENAI_BASE_URL", "openai_base_url"),
        ("AGENT_SESSION_SECRET", "session_secret"),
    ],
)
@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_a_blank_variable_is_unset(
    variable: str, field: str, blank: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert getattr(Settings.from_env({variable: blank}), field) is None
    monkeypatch.setenv(variable, blank)
    assert getattr(Settings.from_env(), field) is None
    assert Settings.from_env({"AGENT_MODEL": blank}).model == DEFAULT_MODEL


DIGEST = "ab" * 32


def test_identity_modes_are_read_typed() -> None:
    settings = Settings.from_env(
        {
            "AGENT_API_KEYS": f"alice:{DIGEST}, bob:{DIGEST.upper().replace('AB', 'CD')}\n",
            "AGENT_JWT_ISSUER": "https://idp.example",
            "AGENT_JWT_AUDIENCE": "agent",
            "AGENT_JWKS": "https://idp.example/.well-known/jwks.json",
            "AGENT_PROXY_USER_HEADER": "X-Forwarded-User",
            "AGENT_TRUSTED_PROXIES": "10.0.0.0/8 192.168.1.7,fd00::/8",
        }
    )
    assert [(key.user, key.digest) for key in settings.api_keys] == [
        ("alice", DIGEST),
        ("bob", "cd" * 32),
    ]
    assert settings.identity_modes == ("key", "jwt", "proxy")
    assert settings.proxy_user_header == "x-forwarded-user"
    assert [str(network) for network in settings.trusted_proxies] == [
        "10.0.0.0/8",
        "192.168.1.7/32",
        "fd00::/8",
    ]
    assert Settings.from_env({}).identity_modes == ()
    # a key's hash is never shown
    assert DIGEST not in repr(settings)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"AGENT_API_KEYS": "alice"}, "AGENT_API_KEYS"),
        ({"AGENT_API_KEYS": "alice:1234"}, "AGENT_API_KEYS"),
        ({"AGENT_API_KEYS": f":{DIGEST}"}, "AGENT_API_KEYS"),
        ({"AGENT_API_KEYS": f"al ice:{DIGEST}"}, "AGENT_API_KEYS"),
        ({"AGENT_API_KEYS": f"alice:{DIGEST},bob:{DIGEST}"}, "AGENT_API_KEYS"),
        ({"AGENT_JWT_ISSUER": "https://idp.example"}, "AGENT_JWKS"),
        ({"AGENT_JWKS": "jwks.json", "AGENT_JWT_ISSUER": "i"}, "AGENT_JWT_AUDIENCE"),
        (
            {"AGENT_JWKS": "http://idp.example/jwks", "AGENT_JWT_ISSUER": "i"},
            "AGENT_JWKS",
        ),
        ({"AGENT_JWKS": "ftp://idp.example/jwks"}, "AGENT_JWKS"),
        ({"AGENT_PROXY_USER_HEADER": "X-User"}, "AGENT_TRUSTED_PROXIES"),
        ({"AGENT_TRUSTED_PROXIES": "10.0.0.1"}, "AGENT_PROXY_USER_HEADER"),
        ({"AGENT_PROXY_USER_HEADER": "X User", "AGENT_TRUSTED_PROXIES": "::1"}, "HEADER"),
        ({"AGENT_PROXY_USER_HEADER": "X-User", "AGENT_TRUSTED_PROXIES": "a.b"}, "PROXIES"),
    ],
)
def test_an_unusable_identity_setting_is_refused_naming_it(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env(env)
    assert named in refused.value.args[0]


def test_a_raw_key_given_by_mistake_is_never_echoed() -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"AGENT_API_KEYS": f"alice:{DIGEST},bob:my-raw-secret-key"})
    assert "entry 2" in refused.value.args[0]
    assert "my-raw-secret-key" not in refused.value.args[0]


def test_a_jwks_over_http_is_taken_on_this_machine_only() -> None:
    for url in ("http://127.0.0.1:8080/jwks.json", "http://localhost/jwks"):
        env = {"AGENT_JWKS": url, "AGENT_JWT_ISSUER": "i", "AGENT_JWT_AUDIENCE": "a"}
        assert Settings.from_env(env).jwks == url
