"""The README's examples that need a server run against a real `langgraph dev`: the SDK
block prints what the README says, and every curl line answers 2xx.

The README names `make dev`'s address; the tests put the fixture's address in its place.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import Server
from tests.unit.test_readme_examples import (
    README,
    SERVER_URL,
    blocks,
    expected_outputs,
    matches,
)

pytestmark = pytest.mark.integration

BASH_BLOCK = re.compile(r"^```bash\n(.*?)^```", re.M | re.S)
STRICT_CURL = 'curl() { command curl --fail-with-body --max-time 60 "$@"; }\n'
"""Every curl of the block fails the script on a status of 400 or more."""


def curl_block() -> str:
    """The README's bash block of curl lines (the HTTP tour)."""
    found = [block for block in BASH_BLOCK.findall(README.read_text()) if "curl " in block]
    assert len(found) == 1
    return found[0]


def test_the_readme_sdk_example_prints_what_the_readme_says(langgraph_dev: Server) -> None:
    printed: list[list[str]] = []

    def record(*values: Any, **_: Any) -> None:
        printed.append(" ".join(map(str, values)).splitlines())

    wanted: list[list[str]] = []
    for block in blocks(server=True):
        wanted += expected_outputs(block)
        source = block.replace(SERVER_URL, langgraph_dev.url)
        exec(compile(source, str(README), "exec"), {"print": record})
    assert wanted and len(printed) == len(wanted)
    for got, said in zip(printed, wanted, strict=True):
        if said:
            assert matches(got, said), f"printed {got!r}, the README says {said!r}"


def test_the_readme_curl_lines_succeed(langgraph_dev: Server, tmp_path: Path) -> None:
    script = STRICT_CURL + curl_block().replace(SERVER_URL, langgraph_dev.url)
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "event: done" in done.stdout
    assert '"memories"' in done.stdout and '"results"' in done.stdout
    assert (tmp_path / "export.json").stat().st_size > 0
