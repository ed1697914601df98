"""The README's Python examples run, offline, and print what the README says they print;
the links of the README and the `docs/` pages resolve, and the settings and make targets
they name exist.

Every ```python block runs in order in one namespace (as in a notebook), from a fresh
data directory and database. A `print(...)` followed by comment lines is checked: the
printed lines must be the comment lines (without "# "), where a line "…" stands for
any number of lines. A block that talks to a running server (it names `SERVER_URL`) is
left out here: tests/integration/test_readme_server.py runs it, and the curl lines,
against a real `langgraph dev`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SECRET

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+)$", re.M)
ELLIPSIS = "…"
SERVER_URL = "http://127.0.0.1:2024"
"""`make dev`'s address: a block that names it needs the server."""
MAX_README_LINES = 250


def blocks(*, server: bool = False) -> list[str]:
    """The README's Python blocks that run in-process (or, with `server`, against one)."""
    return [block for block in BLOCK.findall(README.read_text()) if (SERVER_URL in block) == server]


def anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """The relative links of `page` whose file (or heading anchor) does not exist, and any
    link that leaves `root` (the repository)."""
    broken = []
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        missing = not file.is_relative_to(root) or not file.exists()
        if missing or (fragment and fragment not in anchors(file)):
            broken.append(target)
    return broken


def anchors(page: Path) -> set[str]:
    """The heading anchors of a Markdown page (none for another kind of file)."""
    if page.suffix != ".md":
        return set()
    return {anchor(heading) for heading in HEADING.findall(page.read_text())}


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
    assert len(blocks()) >= 1
    assert len(blocks(server=True)) >= 1


def test_the_readme_is_short() -> None:
    assert len(README.read_text().splitlines()) <= MAX_README_LINES


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n[a](missing.md) [b](#title) [c](#nowhere) [d](/etc/passwd)\n")
    assert broken_links(page, root=tmp_path) == ["missing.md", "#nowhere", "/etc/passwd"]


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


SETTING = re.compile(r"\b((?:AGENT|OPENAI)_[A-Z_]*[A-Z])\b")
MAKE_TARGET = re.compile(r"(?:^|`|&& )make ([a-z][a-z-]*)", re.M)


def test_the_settings_the_docs_name_are_read_by_the_settings() -> None:
    """A variable the README or a docs page names is one `Settings` reads (`AGENT_TEST_*`
    configure the tests)."""
    from agent.settings import Settings

    read = {field.validation_alias for field in Settings.model_fields.values()}
    for page in (README, *DOCS):
        for name in set(SETTING.findall(page.read_text())):
            assert name.startswith("AGENT_TEST_") or name in read, (page.name, name)


def test_the_make_targets_the_docs_name_exist() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (REPO / "Makefile").read_text(), re.M))
    for page in (README, *DOCS):
        named = set(MAKE_TARGET.findall(page.read_text()))
        assert named <= targets, (page.name, named - targets)
