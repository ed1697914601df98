"""`make dev` installs what the server needs, not the test tools, and says what it does."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _dry_run(target: str, venv: Path) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def test_make_dev_installs_the_server_alone_and_announces_it(tmp_path: Path) -> None:
    commands = _dry_run("dev", tmp_path / "venv")
    install = [line for line in commands.splitlines() if "pip install" in line and " -e " in line]
    assert len(install) == 1 and "'.[server]'" in install[0]
    assert "--quiet" not in install[0]  # pip's own lines are the progress
    assert 'echo "Installing' in commands
    assert "[dev]" not in commands


def test_make_test_installs_the_dev_tools(tmp_path: Path) -> None:
    assert "'.[dev]'" in _dry_run("unit", tmp_path / "venv")


def test_the_server_extra_holds_langgraph_dev_and_dev_includes_it() -> None:
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(entry.startswith("langgraph-cli[inmem]") for entry in extras["server"])
    assert "langgraph-memory-agent[postgres,server]" in extras["dev"]
