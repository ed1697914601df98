"""What importing the app, the CLI and the graph loads: the app and the CLI start with
none of the model, graph or storage stacks (the app imports the agent when it starts,
the CLI when a command opens one); the graph of an offline agent loads no OpenAI client.

Each import runs in a fresh interpreter (`sys.modules` there is what the import loaded).
How long it takes is measured in `bench/startup_bench.py`, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

STACKS = (
    "agent.service",
    "agent.runtime",
    "langchain_core.language_models",
    "langchain_openai",
    "langgraph.graph",
    "memory.storage.threads",
    "openai",
    "psycopg",
    "sqlite_vec",
)
"""Modules that only opening an agent needs (a prefix names its submodules too)."""


def loaded(module: str) -> set[str]:
    """The modules importing `module` loads, in a fresh offline interpreter."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OPENAI_")}
    code = f"import json, sys, {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    return set(json.loads(done.stdout))


def stacks_in(modules: set[str], stacks: tuple[str, ...]) -> set[str]:
    return {s for s in stacks if any(m == s or m.startswith(s + ".") for m in modules)}


@pytest.mark.parametrize("module", ["agent.server", "agent.cli.main"])
def test_the_app_and_the_cli_import_no_model_graph_or_storage(module: str) -> None:
    assert stacks_in(loaded(module), STACKS) == set()


def test_an_offline_graph_imports_no_openai_client() -> None:
    modules = loaded("agent.graph")
    assert "langgraph.graph" in modules  # the graph itself is built at import
    assert stacks_in(modules, ("langchain_openai", "openai")) == set()
