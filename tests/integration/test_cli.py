"""`python -m agent` as a real process: piped input, the offline model, a temporary database."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent.cli.upkeep import UPKEEP_LATER

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PROMPT = "> "
COMPACTION = re.compile(
    r"^\[memory: compaction succeeded — summary v(\d+) \d+ chars, (\d+) pins?\]$"
)


def clean_env(workdir: Path) -> dict[str, str]:
    """No model key (the offline model answers); storage inside `workdir`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    env.update(
        AGENT_DATABASE_URL=f"sqlite:///{workdir / 'a.sqlite'}",
        AGENT_DATA_DIR=str(workdir / "data"),
        LANGSMITH_TRACING="false",
    )
    return env


def run_agent(
    workdir: Path, *args: str, lines: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent", *args],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=REPO,
        env=clean_env(workdir),
        timeout=120,
        check=False,
    )


def transcript(stdout: str) -> list[tuple[str, list[str]]]:
    """The output split per input line: [(line typed, lines printed after it)], banner first."""
    blocks: list[tuple[str, list[str]]] = [("", [])]
    for line in stdout.splitlines():
        if line.startswith(PROMPT):
            blocks.append((line.removeprefix(PROMPT), []))
        else:
            blocks[-1][1].append(line)
    return blocks


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stdout + result.stderr
    assert all(line.startswith("error: ") for line in result.stderr.splitlines()), result.stderr


def listed(block: list[str]) -> list[str]:
    return [line for line in block if re.match(r"^[ *] \d+\. ", line)]


def test_chat_conversations_switching_and_memory(tmp_path: Path) -> None:
    lines = (
        "hello",
        "what is 6*7?",
        "/list",
        "/memory",
        "/new",
        "another",
        "/list",
        "/switch 2",
        "/memory",
        "/quit",
    )
    result = run_agent(tmp_path, "chat", lines=lines)
    assert result.returncode == 0, result.stderr
    assert_clean(result)
    assert result.stderr == ""
    blocks = transcript(result.stdout)
    assert [typed for typed, _ in blocks[1:]] == list(lines)
    # long-term lines (whatever the profile makes of these words) are not this test's
    # subject; they come when the memory upkeep after a turn ends
    out = {
        n: [line for line in printed if not line.startswith("[long-term memory:")]
        for n, (_, printed) in enumerate(blocks[1:])
    }
    assert len(out) == len(lines)

    # an auto turn that could ask for a tool says its route once the answer is in
    assert "[route: chat]" in out[0] and out[0][-1] == "[memory: written]"
    assert out[1][0] == "[route: tool]" and "[tool: calculator]" in out[1]
    assert any("42" in line for line in out[1]) and out[1][-1] == "[memory: written]"

    assert len(listed(out[2])) == 1 and listed(out[2])[0].startswith("* 1. hello")
    first_memory = [line for line in out[3] if line.startswith("  user: ")]
    assert first_memory == ["  user: hello", "  user: what is 6*7?"]

    assert "[route: chat]" in out[5] and out[5][-1] == "[memory: written]"
    two = listed(out[6])
    assert len(two) == 2 and out[6][0] == "conversations (2 of 10):"
    assert two[0].startswith("* 1. another") and two[1].startswith("  2. hello")

    assert out[7] == ["switched to 2. hello"]
    after_switch = [line for line in out[8] if line.startswith("  user: ")]
    assert after_switch == first_memory


def split_at_view(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the lines before the `/memory` view, the view)."""
    start = next(i for i, line in enumerate(lines) if line.startswith("memory of conversation"))
    return lines[:start], lines[start:]


def test_compaction_is_shown_and_the_chat_resumes_later(tmp_path: Path) -> None:
    turns = ("hello", "We decided to always deploy on Tuesdays.", "one", "two", "three")
    result = run_agent(tmp_path, "chat", "--session", "team", lines=(*turns, "/memory"))
    assert result.returncode == 0, result.stderr
    assert_clean(result)
    compactions = [m for m in map(COMPACTION.match, result.stdout.splitlines()) if m]
    assert len(compactions) == 1 and compactions[0].group(1) == "1"
    assert compactions[0].group(2) == "0"  # offline, nothing judges what a decision is
    # the last turn's compaction line prints when its upkeep ends, before the prompt comes
    # back; an upkeep slower than the chat waits says so, and its line comes before the
    # next command's own output
    last_turn = transcript(result.stdout)[-2][1]
    upkeep, memory = split_at_view(transcript(result.stdout)[-1][1])
    if last_turn[-1] == UPKEEP_LATER:
        assert any(COMPACTION.match(line) for line in upkeep)
    else:
        assert any(COMPACTION.match(line) for line in last_turn) and upkeep == []
    assert "pinned decisions: none" in memory
    assert memory[1].startswith("summary (version 1): ")
    assert 'User: "We decided to always deploy on Tuesdays."' in memory[1]

    # a new process continues the session's selected conversation from the database
    again = run_agent(tmp_path, "chat", "--session", "team", lines=("/list",))
    assert again.returncode == 0 and again.stderr == ""
    banner = transcript(again.stdout)[0][1]
    assert banner[-1] == "continuing: hello"
    assert len(listed(transcript(again.stdout)[1][1])) == 1
    other = run_agent(tmp_path, "chat", "--session", "someone-else", lines=("/list",))
    assert transcript(other.stdout)[0][1][-1].startswith("new conversation")
    assert transcript(other.stdout)[1][1][0] == "no conversations yet"


def test_errors_are_single_clean_lines(tmp_path: Path) -> None:
    result = run_agent(
        tmp_path, "chat", lines=("/switch 3", "/bogus", "/new extra", "/tasklist", "/review")
    )
    assert result.returncode == 0
    assert_clean(result)
    assert result.stderr.splitlines() == [
        "error: no conversation 3: /list shows 0",
        "error: unknown command /bogus; type /help for the commands",
        "error: /new takes no arguments",
        "error: /tasklist needs a request after the prefix",
        "error: there is no pending review in this conversation",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--conversation", "0123456789abcdef"), "error: conversation not found"),
        (("--conversation", "not an id!"), "error: conversation id must be"),
        (("--session", "bad session"), "error: session id must be"),
    ],
)
def test_bad_arguments_exit_with_one_error_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    result = run_agent(tmp_path, "chat", *args)
    assert result.returncode == 1
    assert_clean(result)
    assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith(message)


def test_end_of_input_exits_cleanly(tmp_path: Path) -> None:
    result = run_agent(tmp_path, "chat", lines=("hello",))  # no /quit: stdin simply ends
    assert result.returncode == 0 and result.stderr == ""
    assert "[memory: written]" in result.stdout


@pytest.mark.parametrize("args", [("--help",), ()])
def test_help_names_the_chat_command(tmp_path: Path, args: tuple[str, ...]) -> None:
    result = run_agent(tmp_path, *args)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^\s+chat\s+interactive terminal chat", result.stdout, re.MULTILINE)


def test_chat_help_lists_its_options(tmp_path: Path) -> None:
    result = run_agent(tmp_path, "chat", "--help")
    assert result.returncode == 0
    assert "--session NAME" in result.stdout and "--conversation ID" in result.stdout
