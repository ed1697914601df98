"""Shared fixtures: a temporary SQLite thread store and a `ConversationMemory` over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memory import ConversationMemory, ThreadIds, ThreadStore, open_thread_store
from tests.fakes import StepClock

SECRET = "s" * 40


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agent.sqlite'}"


@pytest.fixture
def store(db_url: str) -> Iterator[ThreadStore]:
    threads = open_thread_store(db_url)
    yield threads
    threads.close()


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def memory(store: ThreadStore, clock: StepClock) -> ConversationMemory:
    return ConversationMemory(store, ThreadIds(SECRET), clock=clock)
