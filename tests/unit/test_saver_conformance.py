"""LangGraph's own checkpointer conformance suite (`langgraph-checkpoint-conformance`)
against the agent's savers, on both backends: the base capabilities and `prune`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import BASE_CAPABILITIES, Capability

from memory import open_thread_store

CAPABILITIES = {capability.value for capability in BASE_CAPABILITIES} | {Capability.PRUNE.value}


def test_the_savers_pass_langgraphs_conformance_suite(db_url: str) -> None:
    @checkpointer_test(name=f"agent saver ({db_url.split(':', 1)[0]})")
    async def agent_saver() -> AsyncIterator[BaseCheckpointSaver]:
        store = open_thread_store(db_url)  # a fresh saver per capability, as the suite asks
        try:
            yield store.checkpointer
        finally:
            store.close()

    report = asyncio.run(validate(agent_saver, capabilities=CAPABILITIES))
    outcome = {name: report.results[name].passed for name in CAPABILITIES}
    failures = {name: result.failures for name, result in report.results.items() if result.failures}
    assert outcome == dict.fromkeys(CAPABILITIES, True), failures
    assert sum(report.results[name].tests_passed for name in CAPABILITIES) > len(CAPABILITIES)


def test_prune_refuses_a_single_string_and_unknown_strategies(db_url: str) -> None:
    store = open_thread_store(db_url)
    try:
        with pytest.raises(TypeError, match="not a str"):
            store.checkpointer.prune("thread-1")
        with pytest.raises(ValueError, match="keep_oldest"):
            store.checkpointer.prune(["thread-1"], strategy="keep_oldest")
    finally:
        store.close()
