"""Settings from the environment, parsed once and typed."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from memory.storage import DEFAULT_DATABASE_URL

StructuredOutputMethod = Literal["json_schema", "function_calling", "json_mode"]
STRUCTURED_OUTPUT_METHODS: tuple[StructuredOutputMethod, ...] = (
    "json_schema",
    "function_calling",
    "json_mode",
)
DEFAULT_MODEL = "gpt-4o-mini"


class SettingsError(ValueError):
    """An environment variable holds a value the agent cannot use."""


def _blank_to_none(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def _positive_float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = _blank_to_none(env.get(name))
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds, got {raw!r}") from None
    if value <= 0:
        raise SettingsError(f"{name} must be positive, got {raw!r}")
    return value


def _non_negative_int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = _blank_to_none(env.get(name))
    if raw is None:
        return default
    if not raw.isdigit():
        raise SettingsError(f"{name} must be a non-negative integer, got {raw!r}")
    return int(raw)


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Everything the agent reads from its environment.

    Attributes:
        database_url: `AGENT_DATABASE_URL`, where memory, registry and run threads live.
        data_dir: `AGENT_DATA_DIR`, for the generated development secret.
        session_secret: `AGENT_SESSION_SECRET` (at least 32 characters), or None.
        openai_api_key: `OPENAI_API_KEY`; without it the offline model serves.
        openai_base_url: `OPENAI_BASE_URL`, any OpenAI-compatible endpoint.
        model: `AGENT_MODEL`.
        compaction_model: `AGENT_COMPACTION_MODEL` (defaults to `model`).
        structured_output_method: `AGENT_STRUCTURED_OUTPUT_METHOD`.
        request_timeout: `AGENT_REQUEST_TIMEOUT` seconds per model request.
        max_retries: `AGENT_MAX_RETRIES` per model request.
    """

    database_url: str = DEFAULT_DATABASE_URL
    data_dir: Path = field(default_factory=lambda: Path(".agent-data"))
    session_secret: str | None = field(default=None, repr=False)
    openai_api_key: str | None = field(default=None, repr=False)
    openai_base_url: str | None = None
    model: str = DEFAULT_MODEL
    compaction_model: str | None = None
    structured_output_method: StructuredOutputMethod = "json_schema"
    request_timeout: float = 60.0
    max_retries: int = 2

    @property
    def offline(self) -> bool:
        """True when no API key is set: the deterministic offline model serves."""
        return self.openai_api_key is None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from `env` (default: the process environment).

        Raises:
            SettingsError: for a value that cannot be used, naming the variable.
        """
        env = os.environ if env is None else env
        method = _blank_to_none(env.get("AGENT_STRUCTURED_OUTPUT_METHOD")) or "json_schema"
        if method not in STRUCTURED_OUTPUT_METHODS:
            raise SettingsError(
                "AGENT_STRUCTURED_OUTPUT_METHOD must be one of "
                f"{', '.join(STRUCTURED_OUTPUT_METHODS)}; got {method!r}"
            )
        return cls(
            database_url=_blank_to_none(env.get("AGENT_DATABASE_URL")) or DEFAULT_DATABASE_URL,
            data_dir=Path(_blank_to_none(env.get("AGENT_DATA_DIR")) or ".agent-data"),
            session_secret=_blank_to_none(env.get("AGENT_SESSION_SECRET")),
            openai_api_key=_blank_to_none(env.get("OPENAI_API_KEY")),
            openai_base_url=_blank_to_none(env.get("OPENAI_BASE_URL")),
            model=_blank_to_none(env.get("AGENT_MODEL")) or DEFAULT_MODEL,
            compaction_model=_blank_to_none(env.get("AGENT_COMPACTION_MODEL")),
            structured_output_method=method,
            request_timeout=_positive_float(env, "AGENT_REQUEST_TIMEOUT", 60.0),
            max_retries=_non_negative_int(env, "AGENT_MAX_RETRIES", 2),
        )
