"""`python -m agent dev` (what `make dev` runs): a plain error on a busy port, and a
quiet log while idle (hardening 17 and 21)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import (
    free_port,
    server_env,
    stop,
    wait_until_up,
    write_config,
)
from tests.integration.http_support import api_client

pytestmark = pytest.mark.integration

WATCH_TIMEOUT_S = 30.0


def wait_until_the_watcher_reloads(workdir: Path) -> None:
    """Write a module into the watched directory and wait until the server reloads for
    it: the watcher has then seen every earlier change too (the turn's own writes of the
    SQLite database), and logged those it would log."""
    (workdir / "watch_probe.py").write_text("")
    deadline = time.monotonic() + WATCH_TIMEOUT_S
    while "detected changes in 'watch_probe.py'" not in (workdir / "dev.log").read_text():
        assert time.monotonic() < deadline, "the watcher never reported the new module"
        time.sleep(0.1)


def workdir_with_config(tmp_path: Path) -> Path:
    """A working directory whose langgraph.json points at this repository."""
    write_config(tmp_path)
    return tmp_path


def dev(workdir: Path, port: int) -> subprocess.Popen[bytes]:
    log = (workdir / "dev.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "agent", "dev", "--port", str(port)],
        cwd=workdir,
        env=server_env(workdir),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_a_busy_port_is_a_plain_error(tmp_path: Path) -> None:
    workdir = workdir_with_config(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        process = dev(workdir, port)
        assert process.wait(timeout=60) == 1
    output = (workdir / "dev.log").read_text()
    assert f"port {port} on 127.0.0.1 is already in use" in output
    assert f"make dev PORT={port + 1}" in output


def test_the_dev_server_answers_and_its_log_stays_quiet_while_idle(tmp_path: Path) -> None:
    workdir = workdir_with_config(tmp_path)
    port = free_port()
    process = dev(workdir, port)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(url, process, workdir / "dev.log")
        with api_client(url, timeout=30) as client:
            turn = client.post("/api/chat", json={"message": "hi", "createConversation": True})
            assert turn.status_code == 200 and "event: done" in turn.text
        wait_until_the_watcher_reloads(workdir)
    finally:
        stop(process)
    log = (workdir / "dev.log").read_text()
    assert f"chat page: http://127.0.0.1:{port}/" in log
    assert (workdir / "agent.sqlite").exists()  # the turn wrote under the watched tree
    assert "change detected" not in log and "changes detected" not in log
