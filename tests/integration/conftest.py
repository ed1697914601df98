"""Fixtures that start real servers on 127.0.0.1 and stop them by PID."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from memory import ThreadIds
from memory.conversations import ConversationMemory
from memory.storage import open_thread_store
from tests.gates import GATE_DIR_VARIABLE, open_gate
from tests.integration.http_support import api_client
from tests.openai_stub import OpenAIStub

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(workdir: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no model key (offline model), storage inside `workdir`."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("OPENAI_", "AGENT_", "LANGSMITH_", "LANGCHAIN_"))
    }
    env.update(
        {
            "AGENT_DATABASE_URL": f"sqlite:///{workdir / 'agent.sqlite'}",
            "AGENT_DATA_DIR": str(workdir / "data"),
            "LANGSMITH_TRACING": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
            "LANGGRAPH_NO_VERSION_CHECK": "true",
            "PYTHONPATH": str(REPO),
            # every test client comes from 127.0.0.1: the bound has its own test
            "AGENT_NEW_SESSIONS_PER_MINUTE": "0",
            GATE_DIR_VARIABLE: str(workdir / "gates"),
            **extra,
        }
    )
    return env


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    workdir: Path
    log: Path

    def open_gate(self, name: str) -> None:
        """Let the answer that waits at gate `name` go on (tests/gates.py)."""
        open_gate(self.workdir / "gates", name)


def wait_until_up(
    url: str,
    process: subprocess.Popen[bytes],
    log: Path,
    timeout: float = 90,
    health: str = "/ok",
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}{health}", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"server did not come up:\n{log.read_text()[-4000:]}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@pytest.fixture(scope="session")
def langgraph_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`langgraph dev` serving this repo's langgraph.json from a clean working directory
    (one for the test run, or each pytest-xdist worker: its tests use threads, sessions
    and conversations of their own)."""
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    server = start_langgraph_dev(workdir)
    try:
        yield server
    finally:
        stop(server.process)


def write_config(workdir: Path) -> Path:
    """This repo's langgraph.json in `workdir`, its paths pointing at the repo (`langgraph
    dev` resolves them against its working directory) and without `.env`."""
    config = json.loads((REPO / "langgraph.json").read_text())
    config["dependencies"] = [str(REPO)]
    config["graphs"] = {
        name: str(REPO / spec.removeprefix("./")) for name, spec in config["graphs"].items()
    }
    config["auth"]["path"] = str(REPO / config["auth"]["path"].removeprefix("./"))
    config["http"]["app"] = str(REPO / config["http"]["app"].removeprefix("./"))
    config.pop("env", None)
    path = workdir / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def start_langgraph_dev(workdir: Path, **env: str) -> Server:
    """`langgraph dev` on a free port of 127.0.0.1 in `workdir`, with `env` added to
    `server_env`; up when it returns."""
    config = write_config(workdir)
    port = free_port()
    log = workdir / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                str(BIN / "langgraph"),
                "dev",
                "--no-browser",
                "--no-reload",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--config",
                str(config),
            ],
            cwd=workdir,
            env=server_env(workdir, **env),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, log)
    except BaseException:
        stop(process)
        raise
    return Server(url, process, workdir, log)


def launch_uvicorn(
    target: list[str], workdir: Path, *, port: int, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start `uvicorn <target…>` on 127.0.0.1:`port`; returns the process and its log."""
    log = workdir / f"uvicorn-{port}.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(BIN / "uvicorn"), *target, "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return process, log


def start_uvicorn(
    factory: str,
    workdir: Path,
    *,
    port: int | None = None,
    args: tuple[str, ...] = (),
    **env: str,
) -> Server:
    """`uvicorn --factory tests.integration.http_app:<factory>` on 127.0.0.1 (or, with a
    `factory` of the form `module:attr` outside the tests, that app without --factory)."""
    port = port or free_port()
    target = (
        ["--factory", f"tests.integration.http_app:{factory}"] if ":" not in factory else [factory]
    )
    process, log = launch_uvicorn(
        [*target, *args],
        workdir,
        port=port,
        env=server_env(workdir, **{"AGENT_SESSION_SECRET": "t" * 40, **env}),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, log, health="/api/health")
    except BaseException:
        stop(process)
        raise
    return Server(url, process, workdir, log)


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The HTTP app under a real uvicorn process (paced model, offline), one for the test
    run or each pytest-xdist worker (its tests use sessions of their own)."""
    server = start_uvicorn("create", tmp_path_factory.mktemp("http"))
    try:
        yield server
    finally:
        stop(server.process)


@pytest.fixture
def client(http_server: Server) -> Iterator[httpx.Client]:
    """An HTTP client of `http_server` (one cookie jar: one session, started by its first
    request)."""
    with api_client(http_server.url, timeout=30) as session:
        yield session


@pytest.fixture
def alice(http_server: Server) -> Iterator[httpx.Client]:
    """One user's client (a session of its own), beside `bob`'s: isolation tests."""
    with api_client(http_server.url, timeout=30) as session:
        yield session


@pytest.fixture
def bob(http_server: Server) -> Iterator[httpx.Client]:
    """Another user's client: a second session on the same server."""
    with api_client(http_server.url, timeout=30) as session:
        yield session


@pytest.fixture
def stub() -> Iterator[OpenAIStub]:
    """The local OpenAI-compatible endpoint (scripted replies, recorded requests)."""
    with OpenAIStub() as running:
        yield running


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[ConversationMemory]:
    """Chat memory on a SQLite file of this test (integration tests drive real clients,
    not storage backends: this replaces tests/conftest.py's per-backend `memory`)."""
    threads = open_thread_store(f"sqlite:///{tmp_path}/a.sqlite")
    yield ConversationMemory(threads, ThreadIds("x" * 32))
    threads.close()


async def memory_of(server: Server, conversation_id: str, session_id: str | None = None) -> Any:
    """A conversation's hydration DTO, as the `memory` view graph shows it (a stateless
    run: no thread keeps a copy)."""
    from langgraph_sdk import get_client

    payload: dict[str, Any] = {"conversation_id": conversation_id}
    if session_id is not None:
        payload["session_id"] = session_id
    client = get_client(url=server.url)
    view: Any = await client.runs.wait(None, "memory", input=payload, raise_error=False)
    # a conversation that stored nothing (its review was rejected) is not the session's
    return view.get("conversation") or {"messages": []}
