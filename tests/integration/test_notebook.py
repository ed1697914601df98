"""`examples/quickstart.ipynb` executes top to bottom on the offline model (nbclient)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbformat import NotebookNode

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "examples" / "quickstart.ipynb"
KERNEL = "python3"
PROBE = "import sys, agent\nprint(sys.executable)\nprint(agent.__file__)"
"""Appended to the executed copy: proves the kernel is this venv's interpreter and repo."""


def venv_kernel(root: Path) -> AsyncKernelManager:
    """A `python3` kernel that runs this test's interpreter, whatever kernelspecs exist."""
    spec_dir = root / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (agent venv)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)])
    # over IPC sockets in `root`: a kernel over TCP warns that its traffic is plain text
    return AsyncKernelManager(
        kernel_name=KERNEL, kernel_spec_manager=specs, transport="ipc", ip=str(root / "kernel")
    )


def text_of(cell: NotebookNode) -> str:
    return "".join(
        output.get("text", "") for output in cell.outputs if output.output_type == "stream"
    )


def tagged(nb: NotebookNode, tag: str) -> NotebookNode:
    (cell,) = [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]
    return cell


def test_the_saved_notebook_has_no_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code and all(not c.outputs and c.execution_count is None for c in code)


@pytest.fixture
def executed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> NotebookNode:
    for key in list(os.environ):
        if key.startswith(("OPENAI_", "AGENT_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("AGENT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_DATABASE_URL", f"sqlite:///{tmp_path / 'env.sqlite'}")
    monkeypatch.setenv("LANGSMITH_TRACING", "false")
    workdir = tmp_path / "work"
    workdir.mkdir()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE, metadata={"tags": ["probe"]}))
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name=KERNEL,
        km=venv_kernel(tmp_path / "jupyter"),
        resources={"metadata": {"path": str(workdir)}},
    )
    # raises CellExecutionError on the first failing cell; the kernel is shut down after
    # (not left to notice its parent's exit, which it would say on the run's terminal)
    client.execute(cleanup_kc=True)
    return nb


def test_the_notebook_runs_end_to_end_offline(executed: NotebookNode) -> None:
    errors = [
        output
        for cell in executed.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error" or output.get("name") == "stderr"
    ]
    assert errors == []

    executable, package = text_of(tagged(executed, "probe")).splitlines()
    assert Path(executable) == Path(sys.executable)
    assert Path(package).resolve().is_relative_to(REPO)

    assert "offline model: True" in text_of(tagged(executed, "setup"))
    chat = text_of(tagged(executed, "chat")).splitlines()
    assert chat[0] == "status: completed | route: chat | memory written: True"
    tool = text_of(tagged(executed, "tool")).splitlines()
    assert tool[0] == "route: tool" and "42" in tool[1]

    compaction = text_of(tagged(executed, "compaction")).splitlines()
    # the turn past eight messages is done with its compaction pending; it runs after
    assert compaction[-2].endswith("compaction pending")
    assert compaction[-1] == "upkeep: done | summary version: 1"
    assert all(line.endswith("compaction skipped") for line in compaction[:-2])

    hydration = text_of(tagged(executed, "hydration"))
    assert "summary preview: (none)" not in hydration
    assert "pinned decisions: []" in hydration  # offline, nothing judges what a decision is

    recall = text_of(tagged(executed, "recall"))
    # the folded decision is in the context: its line in the summary
    assert 'User: "We decided to always deploy on Tuesdays."' in recall

    isolation = text_of(tagged(executed, "isolation")).splitlines()
    assert isolation[0].startswith("second conversation: ['A separate topic: plan the team")
    assert "pinned decisions: []" in isolation and "mentions Tuesdays: False" in isolation
    assert "another session: conversation not found" in isolation

    registry = text_of(tagged(executed, "registry")).splitlines()
    assert registry[:2] == [
        "* A separate topic: plan the team offsite.",
        "  Hello! I'm preparing the release notes.",
    ]
    assert registry[2:] == ["limit: 10", "selected again: True"]

    stream = text_of(tagged(executed, "streaming")).splitlines()
    assert stream[0].startswith("[conversation]") and "[token] {'text': '144.'}" in stream
    assert stream[-1].startswith("[done] status=completed route=tool")
