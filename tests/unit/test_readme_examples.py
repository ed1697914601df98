"""The README's Python examples run, offline, and print what the README says they print.

Every ```python block runs in order in one namespace (as in a notebook), from a fresh
data directory and database. A `print(...)` followed by comment lines is checked: the
printed lines must be the comment lines (without "# "), where a line "…" stands for
any number of lines. A block that needs a running server (`await`) is left out.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SECRET

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
ELLIPSIS = "…"


def blocks() -> list[str]:
    return [block for block in BLOCK.findall(README.read_text()) if "await " not in block]


def expected_outputs(block: str) -> list[list[str]]:
    """For each `print(` line, the comment lines that follow it (none: not checked)."""
    lines = block.splitlines()
    found: list[list[str]] = []
    for index, line in enumerate(lines):
        if not line.lstrip().startswith("print("):
            continue
        said = []
        for after in lines[index + 1 :]:
            if not after.startswith("# "):
                break
            said.append(after[2:])
        found.append(said)
    return found


def matches(printed: list[str], wanted: list[str]) -> bool:
    """Whether `printed` is `wanted`, a "…" line matching any lines."""
    pattern = "\n".join(".*" if line == ELLIPSIS else re.escape(line) for line in wanted).replace(
        "\n.*\n", "(?:\n.*)*\n?"
    )
    return re.fullmatch(pattern.replace(".*", "(?:.|\n)*"), "\n".join(printed)) is not None


def test_the_readme_has_python_examples() -> None:
    assert len(blocks()) >= 3


def test_the_readme_python_examples_print_what_the_readme_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_DATABASE_URL"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AGENT_SESSION_SECRET", SECRET)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    printed: list[list[str]] = []

    def record(*values: Any, **_: Any) -> None:
        printed.append(" ".join(map(str, values)).splitlines())

    namespace: dict[str, Any] = {"print": record}
    wanted: list[list[str]] = []
    try:
        for block in blocks():
            wanted += expected_outputs(block)
            exec(compile(block, str(README), "exec"), namespace)
    finally:
        for value in list(namespace.values()):
            close = getattr(value, "close", None)
            if type(value).__name__ == "ChatAgent" and callable(close):
                close()
    assert len(printed) == len(wanted)
    for got, said in zip(printed, wanted, strict=True):
        if said:
            assert matches(got, said), f"printed {got!r}, the README says {said!r}"
