"""Several HTTP workers on one PostgreSQL database: no lost update, no stale lock.

Skipped without a reachable PostgreSQL server (a failure under `CI=true`).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from agent.api.sessions import COOKIE_NAME
from memory import ThreadIds, ThreadState
from memory.conversations import ConversationMemory
from memory.storage import open_thread_store
from tests.conftest import clean_postgres
from tests.gates import new_gate
from tests.integration.conftest import Server, start_uvicorn, stop
from tests.integration.http_app import OUTAGE_SECONDS, OUTAGE_TRIGGER
from tests.integration.http_support import after_first_token, api_client
from tests.storage_support import iter_thread_ids

pytestmark = pytest.mark.integration

SECRET = "t" * 40
TURNS = 10


@pytest.fixture
def pg_url(postgres_server: str | None) -> str:
    if postgres_server is None:
        pytest.skip("PostgreSQL is not reachable")
    clean_postgres(postgres_server)
    return postgres_server


def two_workers(url: str, workdir: Path) -> Iterator[list[Server]]:
    servers = [
        start_uvicorn("create_for_workers", workdir, AGENT_DATABASE_URL=url) for _ in range(2)
    ]
    try:
        yield servers
    finally:
        for server in servers:
            stop(server.process)


@pytest.fixture(scope="module")
def workers(
    postgres_server: str | None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Server]]:
    """Two workers, shared by the tests that leave them running (each test's browsers are
    sessions of their own)."""
    if postgres_server is None:
        pytest.skip("PostgreSQL is not reachable")
    yield from two_workers(postgres_server, tmp_path_factory.mktemp("workers"))


@pytest.fixture
def own_workers(pg_url: str, tmp_path: Path) -> Iterator[list[Server]]:
    """Two workers of the test's own (it kills one)."""
    yield from two_workers(pg_url, tmp_path)


class Session:
    """One browser whose requests go to any worker: the session cookie travels along."""

    def __init__(self, servers: list[Server]) -> None:
        self.clients = [api_client(server.url, timeout=60) for server in servers]
        self.cookie: str | None = None
        self.lock = threading.Lock()

    def request(self, n: int, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Cookie": f"{COOKIE_NAME}={self.cookie}"} if self.cookie else {}
        response = self.clients[n % len(self.clients)].request(
            method, path, headers=headers, **kwargs
        )
        with self.lock:
            self.cookie = response.cookies.get(COOKIE_NAME) or self.cookie
        return response

    def chat(self, n: int, message: str, **body: Any) -> httpx.Response:
        """A turn on worker `n`, read to the end of the memory upkeep after it."""
        return self.request(
            n,
            "POST",
            "/api/chat",
            params={"followUpkeep": "true"},
            json={"message": message, **body},
        )

    def listed(self, n: int) -> list[str]:
        return [
            c["id"] for c in self.request(n, "GET", "/api/conversations").json()["conversations"]
        ]

    def texts(self, n: int, cid: str) -> list[str]:
        response = self.request(n, "GET", "/api/chat/thread", params={"conversationId": cid})
        return [m["text"] for m in response.json()["messages"]]

    @property
    def session_id(self) -> str:
        assert self.cookie is not None
        return self.cookie.partition(".")[0]

    def close(self) -> None:
        for client in self.clients:
            client.close()


def done_result(response: httpx.Response) -> dict[str, Any]:
    """The `done` event's result (the memory upkeep's events may follow it)."""
    for block in response.text.strip().split("\n\n"):
        lines = [line for line in block.splitlines() if not line.startswith(":")]
        if len(lines) == 2 and lines[0] == "event: done":
            result: dict[str, Any] = json.loads(lines[1].split(": ", 1)[1])["result"]
            return result
    raise AssertionError(response.text)


def run_conversation(session: Session, name: str, accepted: dict[str, list[str]]) -> str:
    """TURNS turns of one conversation, alternating workers; returns its id."""
    first = f"{name}-turn-0"
    response = session.chat(0, first, createConversation=True)
    assert response.status_code == 200, response.text
    cid = response.headers["X-Conversation-Id"]
    accepted[cid] = [first]
    for k in range(1, TURNS):
        text = f"{name}-turn-{k}"
        response = session.chat(k, text, conversationId=cid)
        assert response.status_code == 200, response.text
        assert done_result(response)["memoryWritten"] is True
        accepted[cid].append(text)
    return cid


def user_texts(state: ThreadState) -> list[str]:
    folded = [
        json.loads(line.removeprefix("User: "))
        for line in state.summary.splitlines()
        if line.startswith("User: ")
    ]
    return folded + [m.text for m in state.messages if m.role == "user"]


def test_two_workers_keep_every_turn_exactly_once(workers: list[Server], pg_url: str) -> None:
    alice, bob = Session(workers), Session(workers)
    for browser in (alice, bob):  # take the session cookie before requests run in parallel
        assert browser.request(0, "GET", "/api/conversations").status_code == 200
    accepted: dict[str, list[str]] = {}
    oldest = [run_conversation(alice, f"a{n}", accepted) for n in range(2)]
    jobs = [(alice, f"a{n}") for n in range(2, 12)] + [(bob, f"b{n}") for n in range(8)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        newest = list(pool.map(lambda job: run_conversation(job[0], job[1], accepted), jobs))

    listed_alice, listed_bob = alice.listed(0), bob.listed(1)
    assert sorted(listed_alice) == sorted(newest[:10])
    assert sorted(listed_bob) == sorted(newest[10:])

    store = open_thread_store(pg_url)
    memory = ConversationMemory(store, ThreadIds(SECRET))
    try:
        for session, listed in ((alice, listed_alice), (bob, listed_bob)):
            for cid in listed:
                state = memory.read_memory(session.session_id, cid)
                assert sorted(user_texts(state)) == sorted(accepted[cid])
                roles = [m.role for m in state.messages]
                assert roles == ["user", "assistant"] * (len(roles) // 2)
        threads = set(iter_thread_ids(store))
        for cid in oldest:
            gone = alice.request(1, "GET", "/api/chat/thread", params={"conversationId": cid})
            assert gone.status_code == 404
            assert memory.memory_thread(alice.session_id, cid) not in threads
            assert memory.run_thread(alice.session_id, cid) not in threads
    finally:
        store.close()
        alice.close()
        bob.close()


def test_overlapping_turns_are_refused_not_interleaved(workers: list[Server], pg_url: str) -> None:
    session = Session(workers)
    cid = run_conversation(session, "overlap", {})
    gate = new_gate()
    held = f"a held turn on worker zero gate-{gate}"
    with session.clients[0].stream(
        "POST",
        "/api/chat",
        json={"message": held, "conversationId": cid},
        headers={"Cookie": f"{COOKIE_NAME}={session.cookie}"},
    ) as response:
        rest = after_first_token(response)  # the held turn runs until its gate opens
        refused = session.chat(1, "overlapping on worker one", conversationId=cid)
        workers[0].open_gate(gate)
        assert response.status_code == 200 and "event: done" in list(rest)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "conversation_busy"
    texts = session.texts(0, cid)
    assert "overlapping on worker one" not in texts
    assert texts[-2:] == [held, f"answer to: {held}"]
    session.close()


def test_two_workers_do_not_duplicate_an_item_said_concurrently(workers: list[Server]) -> None:
    """The same statement reaches both workers at once, in turns of two conversations and
    through the API: the session's advisory lock lets one write it, the other refresh it."""
    session = Session(workers)
    try:
        assert session.request(0, "GET", "/api/memories").status_code == 200  # the cookie
        conversations = [
            session.chat(n, "hello", createConversation=True).headers["X-Conversation-Id"]
            for n in range(2)
        ]
        statement = "I am allergic to peanuts"

        def say(n: int, by_turn: bool, start: threading.Barrier) -> httpx.Response:
            start.wait()
            if by_turn:
                return session.chat(n, statement, conversationId=conversations[n])
            return session.request(n, "POST", "/api/memories", json={"text": statement})

        for _ in range(3):
            start = threading.Barrier(4)
            with ThreadPoolExecutor(max_workers=4) as pool:
                futures = [
                    pool.submit(say, n, by_turn, start)
                    for n in range(2)
                    for by_turn in (True, False)
                ]
            assert all(f.result().status_code in (200, 201) for f in futures)
        items = session.request(1, "GET", "/api/memories").json()["memories"]
        assert [item["text"] for item in items] == [statement]
    finally:
        session.close()


def test_a_killed_worker_leaves_no_partial_turn_and_no_stale_lock(
    own_workers: list[Server], pg_url: str
) -> None:
    session = Session(own_workers)
    cid = run_conversation(session, "killed", {})
    before = session.texts(1, cid)
    killed = f"words then a kill gate-{new_gate()}"  # its gate stays shut: the turn waits
    with session.clients[0].stream(
        "POST",
        "/api/chat",
        json={"message": killed, "conversationId": cid},
        headers={"Cookie": f"{COOKIE_NAME}={session.cookie}"},
    ) as response:
        for line in response.iter_lines():
            if line == "event: token":
                os.killpg(own_workers[0].process.pid, signal.SIGKILL)
                break
    own_workers[0].process.wait(timeout=10)
    deadline = time.monotonic() + 10
    while True:  # the server notices the dead worker's connection within moments
        after = session.chat(1, "after the kill", conversationId=cid)
        if after.status_code != 409 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert after.status_code == 200, after.text
    texts = session.texts(1, cid)
    assert killed not in texts
    assert texts[-2:] == ["after the kill", "answer to: after the kill"]
    assert texts[:-2] == before[len(before) - len(texts) + 2 :]
    session.close()


def test_a_database_outage_mid_turn_degrades_that_turn_only(pg_url: str, tmp_path: Path) -> None:
    server = start_uvicorn("create_with_outage", tmp_path, AGENT_DATABASE_URL=pg_url)
    name = pg_url.rpartition("/")[2]
    admin = pg_url.rpartition("/")[0] + "/postgres"
    session = Session([server])
    try:
        first = session.chat(0, "hello before the outage", createConversation=True)
        cid = first.headers["X-Conversation-Id"]
        during = session.chat(0, f"please {OUTAGE_TRIGGER} now", conversationId=cid)
        assert during.status_code == 200, during.text
        result = done_result(during)
        assert result["text"] == f"answer to: please {OUTAGE_TRIGGER} now"
        assert (result["degraded"], result["memoryWritten"]) == (True, False)
        for word in ("psycopg", "OperationalError", "connection", "Traceback"):
            assert word not in during.text
        time.sleep(OUTAGE_SECONDS)
        after = session.chat(0, "after the outage", conversationId=cid)
        assert after.status_code == 200, after.text
        assert done_result(after)["memoryWritten"] is True
        texts = session.texts(0, cid)
        assert texts == [
            "hello before the outage",
            "answer to: hello before the outage",
            "after the outage",
            "answer to: after the outage",
        ]
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        session.close()
        stop(server.process)
