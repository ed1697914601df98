"""LangGraph's own checkpointer conformance suite (`langgraph-checkpoint-conformance`)
against the agent's savers, on both backends: the base capabilities and `prune`."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, Capability

from memory.storage import open_thread_store

CAPABILITIES = {capability.value for capability in BASE_CAPABILITIES} | {Capability.PRUNE.value}


def check_conformance(db_url: str, *, vectors: bool = False) -> None:
    drivers: set[str] = set()

    @checkpointer_test(name=f"agent saver ({db_url.split(':', 1)[0]}, vectors={vectors})")
    async def agent_saver() -> AsyncIterator[BaseCheckpointSaver]:
        # a fresh saver per capability, as the suite asks
        store = open_thread_store(db_url, vectors=vectors)
        drivers.add(type(getattr(store.checkpointer, "conn", None)).__module__)
        try:
            yield store.checkpointer
        finally:
            store.close()

    report = asyncio.run(validate(agent_saver, capabilities=CAPABILITIES))
    outcome = {name: report.results[name].passed for name in CAPABILITIES}
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert outcome == dict.fromkeys(CAPABILITIES, True), failures
    assert sum(report.results[name].tests_passed for name in CAPABILITIES) > len(CAPABILITIES)
    if db_url.startswith("sqlite"):
        assert drivers == {"sqlean.dbapi2" if vectors else "sqlite3"}


def test_the_savers_pass_langgraphs_conformance_suite(db_url: str) -> None:
    check_conformance(db_url)


def test_the_sqlite_saver_passes_it_on_the_vector_indexs_driver(tmp_path: Path) -> None:
    # with embeddings, the SQLite file is opened by sqlean.py (sqlite-vec loaded), whose
    # errors are not the standard library's: the saver must keep its contract there too
    check_conformance(f"sqlite:///{tmp_path / 'vectors.sqlite'}", vectors=True)


def test_prune_refuses_a_single_string_and_unknown_strategies(db_url: str) -> None:
    store = open_thread_store(db_url)
    try:
        with pytest.raises(TypeError, match="not a str"):
            store.checkpointer.prune("thread-1")
        with pytest.raises(ValueError, match="keep_oldest"):
            store.checkpointer.prune(["thread-1"], strategy="keep_oldest")
    finally:
        store.close()


def test_keep_latest_drops_a_finished_subgraph_call_with_its_root(db_url: str) -> None:
    """A subgraph call's namespace goes with the root checkpoint it started from; a call
    from the kept root, and a `checkpointer=True` subgraph's namespace, stay."""
    store = open_thread_store(db_url)
    saver = store.checkpointer

    def put(ns: str, parent: str | None, root: str | None) -> str:
        config: RunnableConfig = {"configurable": {"thread_id": "t", "checkpoint_ns": ns}}
        if parent is not None:
            config["configurable"]["checkpoint_id"] = parent
        parents = {"": root} if root is not None else {}
        metadata: Any = {"source": "loop", "step": 1, "parents": parents}
        stored = saver.put(config, empty_checkpoint(), metadata, {})
        return str(stored["configurable"]["checkpoint_id"])

    def heads() -> dict[str, int]:
        config: RunnableConfig = {"configurable": {"thread_id": "t"}}
        found = collections.Counter(
            str(item.config["configurable"]["checkpoint_ns"]) for item in saver.list(config)
        )
        return dict(found)

    try:
        first = put("", None, None)
        put("tasklist:1", put("tasklist:1", None, first), first)  # a call from `first`
        put("memo", None, first)  # a subgraph with its own checkpointer
        latest = put("", first, None)
        put("tasklist:2", None, latest)  # a call from the root kept
        saver.prune(["t"], strategy="keep_latest")
        assert heads() == {"": 1, "memo": 1, "tasklist:2": 1}
        kept = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        assert kept is not None and kept.config["configurable"]["checkpoint_id"] == latest
    finally:
        store.close()
