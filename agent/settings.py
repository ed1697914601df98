"""Settings from the environment (and a `.env` file), parsed once, typed and checked.

Explicit arguments always win: `Settings(model="x")` takes `model` as given and the
rest from the environment; `Settings.from_env(mapping)` reads only `mapping`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple, cast
from urllib.parse import urlsplit

from pydantic import (
    AliasGenerator,
    BeforeValidator,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from memory.limits import (
    DEFAULT_CONTEXT_BUDGET_TOKENS,
    DEFAULT_RECALL_DISTANCE,
    DEFAULT_RECALL_TOKENS,
    EXTRACTION_BATCH_TURNS,
    MAX_OWED_IN_ONE_CALL,
    MIN_CONTEXT_BUDGET_TOKENS,
    MIN_SECRET_CHARS,
)
from memory.storage import DEFAULT_DATABASE_URL

StructuredOutputMethod = Literal["auto", "json_schema", "function_calling", "json_mode"]
LongTermMode = Literal["auto", "explicit", "model", "off", "rules"]
RunHistory = Literal["latest", "all"]
DEFAULT_MODEL = "gpt-4o-mini"
LOCAL_MODEL = "local"
"""`AGENT_MODEL=local`: the packaged GGUF (or `AGENT_LOCAL_MODEL_PATH`), served on 127.0.0.1."""
NO_EMBEDDINGS = "none"
"""`AGENT_EMBEDDINGS_MODEL=none`: no embeddings at all (unset: the local model only judges
whether a message recalls, and ranking is lexical)."""
LOCAL_WITH_BASE_URL = (
    "AGENT_MODEL=local runs a model on this machine, and OPENAI_BASE_URL names another "
    "endpoint: unset one of them"
)
MAX_DAYS = 36_500.0
"""The longest retention or TTL (a century): further would overflow the date arithmetic."""
MAX_REQUEST_TIMEOUT_S = 3_600.0
REQUEST_TIMEOUT_S = 60.0
LOCAL_REQUEST_TIMEOUT_S = 300.0
"""A model on this machine's CPU may take minutes for one compaction or extraction."""
LOCAL_CONTEXT_BUDGET_TOKENS = 6_000
"""Fits an 8,192-token window with the answer's tokens and the prompts' own."""
ANSWER_TOKENS = 1_024
RETRY_BACKOFF_S = 8.0
"""The longest the OpenAI client waits before a retry."""
SHORT_SECRET = (
    "AGENT_SESSION_SECRET must be at least {limit} characters long (got {length}); "
    "leave it unset in development to use a generated one"
)


BAD_API_KEY = (
    "entry {number} is not USER:SHA256 (a user id of letters, digits, '_', '.', '@' or '-', "
    "a colon, then the 64 hex digits of the key's SHA-256, never the key itself)"
)
SHARED_KEY = "one key hash is given to two users ({first} and {second})"
JWT_TOGETHER = "AGENT_JWT_ISSUER, AGENT_JWT_AUDIENCE and AGENT_JWKS go together: {missing} missing"
PROXY_TOGETHER = "AGENT_PROXY_USER_HEADER and AGENT_TRUSTED_PROXIES go together: {missing} missing"
PLAIN_JWKS_URL = "must be an https URL (http only on this machine) or a file path"
BAD_HEADER = "must be a header name (letters, digits and '-')"
_USER_ID = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]{1,64}")
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
IdentityMode = Literal["key", "jwt", "proxy"]
ProxyNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class ApiKey(NamedTuple):
    """One entry of `AGENT_API_KEYS`: a user id and the SHA-256 (hex) of their key."""

    user: str
    digest: str


def _api_keys(value: object) -> object:
    """`user:sha256hex,…` (commas or whitespace between entries) as `ApiKey`s."""
    if not isinstance(value, str):
        return value
    keys: list[ApiKey] = []
    owners: dict[str, str] = {}
    for number, entry in enumerate(value.replace(",", " ").split(), start=1):
        user, _, digest = entry.rpartition(":")
        digest = digest.lower()
        if not _USER_ID.fullmatch(user) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise ValueError(BAD_API_KEY.format(number=number))  # never echo: it may be a key
        if owners.setdefault(digest, user) != user:
            raise ValueError(SHARED_KEY.format(first=owners[digest], second=user))
        keys.append(ApiKey(user, digest))
    return tuple(keys)


def _networks(value: object) -> object:
    """Comma- or space-separated addresses and CIDR blocks as networks."""
    if not isinstance(value, str):
        return value
    items = value.replace(",", " ").split()
    return tuple(ipaddress.ip_network(item, strict=False) for item in items)


class SettingsError(ValueError):
    """An environment variable holds a value the agent cannot use (names the variable)."""


class Settings(BaseSettings):
    """Everything the agent reads from its environment: each field from `AGENT_<FIELD>`
    (or the alias it names), with the default and bounds the docs' configuration table lists."""

    model_config = SettingsConfigDict(
        alias_generator=AliasGenerator(validation_alias=lambda field: f"AGENT_{field.upper()}"),
        frozen=True,
        extra="ignore",
        env_ignore_empty=True,
        env_file=".env",
        env_file_encoding="utf-8",
        validate_by_name=True,
        validate_by_alias=True,
    )

    database_url: str = DEFAULT_DATABASE_URL
    data_dir: Path = Path(".agent-data")
    session_secret: SecretStr | None = Field(None, repr=False)
    openai_api_key: SecretStr | None = Field(None, validation_alias="OPENAI_API_KEY", repr=False)
    openai_base_url: str | None = Field(None, validation_alias="OPENAI_BASE_URL")
    model: str = DEFAULT_MODEL
    compaction_model: str | None = None
    structured_output_method: StructuredOutputMethod = "auto"
    local_model_path: Path | None = None
    local_context: int = Field(8192, ge=4096, le=131_072)
    request_timeout: float = Field(
        REQUEST_TIMEOUT_S, gt=0, le=MAX_REQUEST_TIMEOUT_S, allow_inf_nan=False
    )
    max_retries: int = Field(2, ge=0, le=100)
    answer_tokens: int = Field(ANSWER_TOKENS, gt=0, le=100_000)
    secure_cookies: bool = False
    new_sessions_per_minute: int = Field(60, ge=0, le=1_000_000)
    long_term_memory: LongTermMode = "auto"
    embeddings_model: str | None = None
    embeddings_dims: int = Field(1536, gt=0, le=16_000)
    embeddings_max_distance: float = Field(DEFAULT_RECALL_DISTANCE, gt=0, le=2, allow_inf_nan=False)
    memory_ttl_days: float = Field(365.0, ge=0, le=MAX_DAYS, allow_inf_nan=False)
    retention_days: float = Field(30.0, ge=0, le=MAX_DAYS, allow_inf_nan=False)
    recall_tokens: int = Field(DEFAULT_RECALL_TOKENS, ge=0, le=100_000)
    run_history: RunHistory = "latest"
    extraction_batch_turns: int = Field(EXTRACTION_BATCH_TURNS, ge=1, le=MAX_OWED_IN_ONE_CALL)
    extraction_idle_seconds: float = Field(30.0, gt=0, le=86_400, allow_inf_nan=False)
    context_budget_tokens: int = Field(DEFAULT_CONTEXT_BUDGET_TOKENS, ge=MIN_CONTEXT_BUDGET_TOKENS)

    api_keys: Annotated[tuple[ApiKey, ...], NoDecode, BeforeValidator(_api_keys)] = Field(
        (), repr=False
    )
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    jwks: str | None = None
    proxy_user_header: str | None = None
    trusted_proxies: Annotated[tuple[ProxyNetwork, ...], NoDecode, BeforeValidator(_networks)] = ()

    @field_validator("jwks")
    @classmethod
    def _jwks_source(cls, jwks: str | None) -> str | None:
        parts = urlsplit(jwks or "")
        local_http = parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS
        if parts.scheme not in ("", "https") and not local_http:
            raise ValueError(PLAIN_JWKS_URL)
        return jwks

    @field_validator("embeddings_model")
    @classmethod
    def _no_embeddings(cls, name: str | None) -> str | None:
        # "" stands for `none`: no model ranks (falsy like unset), and none judges either
        return "" if name is not None and name.strip().lower() == NO_EMBEDDINGS else name

    @field_validator("proxy_user_header")
    @classmethod
    def _header_name(cls, name: str | None) -> str | None:
        if name is not None and not _HEADER_NAME.fullmatch(name):
            raise ValueError(BAD_HEADER)
        return None if name is None else name.lower()

    @model_validator(mode="after")
    def _modes_complete(self) -> Settings:
        jwt = {
            "AGENT_JWT_ISSUER": self.jwt_issuer,
            "AGENT_JWT_AUDIENCE": self.jwt_audience,
            "AGENT_JWKS": self.jwks,
        }
        proxy = {
            "AGENT_PROXY_USER_HEADER": self.proxy_user_header,
            "AGENT_TRUSTED_PROXIES": self.trusted_proxies or None,
        }
        if self.local and self.openai_base_url:
            raise ValueError(LOCAL_WITH_BASE_URL)
        for names, message in ((jwt, JWT_TOGETHER), (proxy, PROXY_TOGETHER)):
            missing = [name for name, value in names.items() if value is None]
            if 0 < len(missing) < len(names):
                raise ValueError(message.format(missing=", ".join(missing)))
        return self

    @model_validator(mode="before")
    @classmethod
    def _blank_is_unset(cls, given: Any) -> Any:
        # `env_ignore_empty` drops "" only: "   " is as unset (`from_env` drops it too)
        if not isinstance(given, dict):
            return given
        given = {k: v for k, v in given.items() if not (isinstance(v, str) and not v.strip())}
        base_url = given.get("OPENAI_BASE_URL", given.get("openai_base_url"))
        if isinstance(base_url, str) and is_local_endpoint(base_url):
            for name, alias, value in LOCAL_DEFAULTS:
                if name not in given and alias not in given:
                    given[name] = value
        return given

    @field_validator("session_secret")
    @classmethod
    def _long_enough(cls, secret: SecretStr | None) -> SecretStr | None:
        if secret is not None and len(secret.get_secret_value()) < MIN_SECRET_CHARS:
            length = len(secret.get_secret_value())
            raise ValueError(SHORT_SECRET.format(limit=MIN_SECRET_CHARS, length=length))
        return secret

    @property
    def local(self) -> bool:
        """True with `AGENT_MODEL=local`: the agent serves a GGUF model itself."""
        return self.model == LOCAL_MODEL

    @property
    def judges_relevance(self) -> bool:
        """False with `AGENT_EMBEDDINGS_MODEL=none`: nothing is embedded, not even the message the
        relevance judge reads; recall decides by score alone."""
        return self.embeddings_model != ""

    @property
    def offline(self) -> bool:
        """True when neither an API key nor a base URL is set and no local model is asked
        for: the deterministic offline model serves."""
        return self.openai_api_key is None and self.openai_base_url is None and not self.local

    @property
    def call_timeout(self) -> float:
        """The longest one chat model call may take: its requests, retries included."""
        retries = self.max_retries
        return self.request_timeout * (retries + 1) + RETRY_BACKOFF_S * retries

    @property
    def secret(self) -> str | None:
        """The configured session secret, or None to use the generated development one."""
        return None if self.session_secret is None else self.session_secret.get_secret_value()

    @property
    def identity_modes(self) -> tuple[IdentityMode, ...]:
        """The ways a user may sign in; empty: anonymous sessions (cookies, chosen ids)."""
        given = {"key": self.api_keys, "jwt": self.jwks, "proxy": self.proxy_user_header}
        return tuple(cast(IdentityMode, mode) for mode, value in given.items() if value)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Read the settings from `env` (default: the process environment and `.env`);
        `SettingsError` for a value that cannot be used, naming the variable."""
        try:
            if env is None:
                return cls()
            return cls.model_validate(dict(env))
        except ValidationError as exc:
            raise SettingsError(describe(exc)) from None


LOCAL_DEFAULTS = (
    ("request_timeout", "AGENT_REQUEST_TIMEOUT", LOCAL_REQUEST_TIMEOUT_S),
    ("context_budget_tokens", "AGENT_CONTEXT_BUDGET_TOKENS", LOCAL_CONTEXT_BUDGET_TOKENS),
)
"""The defaults that differ for an endpoint on this machine (field, variable, value)."""


def is_local_endpoint(url: str) -> bool:
    """Whether `url` names a server on this machine (a loopback host)."""
    host = urlsplit(url).hostname or ""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def describe(error: ValidationError) -> str:
    """One line per problem, naming the environment variable (never echoing a secret)."""
    problems = []
    for item in error.errors():
        message = item["msg"].removeprefix("Value error, ")
        if not item["loc"]:  # a rule across variables names them itself
            problems.append(message)
            continue
        field = str(item["loc"][0])
        info = Settings.model_fields.get(field)
        alias = info.validation_alias if info is not None else None
        name = alias if isinstance(alias, str) else field
        problems.append(f"{name}: {message}")
    return "; ".join(problems)
