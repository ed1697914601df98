"""The import graph keeps its layers: read from the source with `ast`, nothing imported.

`memory/` has three layers: its pure parts (schema, limits, ids, write rules,
compaction, context, hydration, registry, long-term rules, the archive's
lines, terms and recall), storage (`memory/storage/` and the archive's backends) and
the services that read and write through storage. A layer never imports one above it,
so importing a pure module never loads storage; and no module of `memory/` is in an
import circle. `memory/` imports nothing of `graphs/` or `agent/`, `graphs/` nothing
of `agent/`, and the nodes of a turn import each other only in the graph's order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STORAGE_PREFIXES = (
    "memory.storage",
    "memory.archive.sqlite",
    "memory.archive.sqlite_vectors",
    "memory.archive.postgres",
    "memory.archive.postgres_vectors",
)
"""Modules that open or talk to a database."""
SERVICES = frozenset(
    {
        "memory.conversations",
        "memory.turn_write",
        "memory.session_documents",
        "memory.longterm.store",
        "memory.archive.archive",
        "memory.retention",
        "memory.redaction",
        "memory.transfer",
    }
)
"""Modules that read and write through storage; every other module of `memory/` is pure."""

TURN_NODES = (
    "graphs.request",
    "graphs.turn",
    "graphs.upkeep",
    "graphs.agent",
)
"""The memory nodes' modules in the order a turn runs them: a module may import an
earlier one, never a later one."""


def module_files(package: str) -> dict[str, Path]:
    """Every module of `package` by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imported_names(name: str, path: Path) -> Iterator[str]:
    """The dotted names `path` imports, at any depth (a function's lazy import and a
    `TYPE_CHECKING` import count: the layer is what the code depends on)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(*packages: str) -> dict[str, set[str]]:
    """Each module of `packages` and the modules of `packages` it imports directly."""
    files = {name: path for package in packages for name, path in module_files(package).items()}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        targets = {target for target in imported_names(name, path) if target in files}
        graph[name] = targets - {name}
    return graph


def parents(name: str) -> list[str]:
    """The packages Python imports before `name` (`a`, `a.b` for `a.b.c`)."""
    parts = name.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def loaded_by(graph: dict[str, set[str]], name: str) -> set[str]:
    """Every module that importing `name` loads: its imports, their imports, and each
    one's parent packages (whose `__init__` runs first)."""
    seen: set[str] = set()
    pending = [name]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        pending.extend(graph.get(current, set()))
        pending.extend(parent for parent in parents(current) if parent in graph)
    return seen - {name}


def is_storage(name: str) -> bool:
    return any(name == prefix or name.startswith(prefix + ".") for prefix in STORAGE_PREFIXES)


def layer(name: str) -> int:
    """0 pure, 1 storage, 2 service."""
    return 2 if name in SERVICES else 1 if is_storage(name) else 0


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


MEMORY = import_graph("memory")


def test_the_layers_are_what_this_test_names() -> None:
    # a renamed service or storage module must be renamed here too, or its layer is lost
    assert MEMORY.keys() >= SERVICES
    assert MEMORY.keys() >= set(STORAGE_PREFIXES)


def test_memory_has_no_import_circle() -> None:
    assert cycles(MEMORY) == []


@pytest.mark.parametrize("module", sorted(name for name in MEMORY if layer(name) == 0))
def test_a_pure_memory_module_never_loads_storage(module: str) -> None:
    above = sorted(name for name in loaded_by(MEMORY, module) if layer(name) > 0)
    assert above == [], f"{module} loads {above}"


@pytest.mark.parametrize("module", sorted(name for name in MEMORY if layer(name) == 1))
def test_storage_never_imports_a_service(module: str) -> None:
    above = sorted(name for name in loaded_by(MEMORY, module) if layer(name) > 1)
    assert above == [], f"{module} loads {above}"


def test_a_layer_imports_no_layer_above_it() -> None:
    whole = import_graph("memory", "graphs", "agent")
    top = {"memory": 0, "graphs": 1, "agent": 2}
    upward = sorted(
        (source, target)
        for source, targets in whole.items()
        for target in targets
        if top[target.split(".")[0]] > top[source.split(".")[0]]
    )
    assert upward == []


def test_the_memory_nodes_import_each_other_in_the_graphs_order() -> None:
    graph = import_graph("graphs")
    later = {
        (module, target)
        for position, module in enumerate(TURN_NODES)
        for target in graph[module]
        if target in TURN_NODES[position + 1 :]
    }
    assert later == set()
