"""Shared fixtures: storage backends (SQLite always, PostgreSQL when reachable), memory
and agents.

Tests that take `db_url` (or `store`, `memory`, `open_agent`) run once per backend,
unless their module is marked `sqlite_only`: graph logic, whose storage is covered by
the storage tests. PostgreSQL comes from `AGENT_TEST_POSTGRES_URL` (default: the
local server with trust auth); each test run creates its own database and drops it
afterwards. Without a server the PostgreSQL cases are skipped with a reason, except
under `CI=true`, where that is a failure.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import ChatAgent
from agent.settings import Settings
from memory import ThreadIds
from memory.conversations import ConversationMemory
from memory.storage import ThreadStore, open_thread_store
from tests.fakes import StepClock

SECRET = "s" * 40
POSTGRES_ADMIN_URL = os.environ.get(
    "AGENT_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
BACKENDS = ("sqlite", "postgres")
PG_TABLES = (
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "memory_documents",
    "store",
    "archive_lines",
    "archive_vectors",
    "archive_counts",
    "archive_terms",
    "archive_versions",
    "archive_vector_model",
)


def _with_database(url: str, name: str) -> str:
    head, _, _ = url.rpartition("/")
    return f"{head}/{name}"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str | None]:
    """A fresh PostgreSQL database for this test run, or None when no server answers."""
    try:
        import psycopg
    except ImportError:  # the postgres extra is not installed
        psycopg = None  # type: ignore[assignment]
    name = f"agent_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    try:
        if psycopg is None:
            raise OSError("psycopg is not installed")
        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
    except Exception as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but PostgreSQL is unreachable at {POSTGRES_ADMIN_URL}: {exc}")
        yield None
        return
    yield _with_database(POSTGRES_ADMIN_URL, name)
    with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def clean_postgres(url: str) -> None:
    """Empty the checkpoint and store tables between tests (they exist after the first
    store opens)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        present = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            )
        }
        tables = [table for table in PG_TABLES if table in present]
        if tables:
            conn.execute(f"TRUNCATE {', '.join(tables)}")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group the tests for pytest-xdist's `--dist loadgroup` (the Makefile's `-n`): one
    worker runs a whole test module, so that a module's server starts once, and one
    worker the whole chat-page package (one server, one browser)."""
    for item in items:
        path = item.nodeid.partition("::")[0].removeprefix("tests/").removesuffix(".py")
        group = "browser" if path.startswith("browser/") else path
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each test that needs a database once per backend (SQLite only when marked)."""
    if "db_url" in metafunc.fixturenames:
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("db_url", ("sqlite",) if sqlite_only else BACKENDS, indirect=True)


@pytest.fixture
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'agent.sqlite'}"
    url = request.getfixturevalue("postgres_server")
    if url is None:
        pytest.skip(f"PostgreSQL is not reachable at {POSTGRES_ADMIN_URL}")
    clean_postgres(url)
    return str(url)


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


@pytest.fixture
def open_agent(tmp_path: Path, db_url: str) -> Iterator[Callable[..., ChatAgent]]:
    """Opens `ChatAgent`s on this test's database (`open_agent(model, **options)`) and
    closes them all afterwards."""
    opened: list[ChatAgent] = []

    def open_one(model: Any, **options: Any) -> ChatAgent:
        options.setdefault("settings", Settings(data_dir=tmp_path / "data"))
        agent = ChatAgent(database_url=db_url, model=model, secret=SECRET, **options)
        opened.append(agent)
        return agent

    yield open_one
    for agent in opened:
        agent.close()
