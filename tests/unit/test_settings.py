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
