"""Run a worker module in its own process until it stalls, then SIGKILL it: the crash
tests' (and the recovery benchmark's) one way to die at a chosen step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

REPO = Path(__file__).resolve().parents[2]


def stall(marker: Path) -> NoReturn:
    """Say where the worker stopped (`marker`), then wait for the kill."""
    marker.write_text("stalled")
    while True:  # until SIGKILL
        time.sleep(1)


def kill_when_stalled(
    module: str,
    database_url: str,
    root: Path,
    stall_at: str,
    timeout: float,
    *,
    ready: Callable[[Path], bool] | None = None,
    before_kill: Callable[[subprocess.Popen[bytes], Path], None] | None = None,
) -> Path:
    """Run `python -m module DATABASE_URL DATA_DIR WORKDIR STALL_AT` (data under `root`),
    wait until it writes `WORKDIR/stalled` (and `ready(workdir)` holds), call
    `before_kill`, SIGKILL it; returns the worker's WORKDIR.

    Raises:
        RuntimeError: the worker ended, or did not stall within `timeout` seconds.
    """
    workdir = root / "worker"
    workdir.mkdir()
    command = [sys.executable, "-m", module, database_url, str(root / "data"), str(workdir)]
    process = subprocess.Popen(
        [*command, stall_at],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + timeout
        while not ((workdir / "stalled").exists() and (ready is None or ready(workdir))):
            if process.poll() is not None:
                error = process.stderr.read() if process.stderr else b""
                raise RuntimeError(f"the worker ended before it stalled: {error!r}")
            if time.monotonic() > deadline:
                raise RuntimeError("the worker never reached its stall point")
            time.sleep(0.05)
        if before_kill is not None:
            before_kill(process, workdir)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
    return workdir
