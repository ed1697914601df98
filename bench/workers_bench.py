"""Workers benchmark: the HTTP app under 1, 2 and 4 uvicorn workers on one PostgreSQL.

Each setting serves the same load: `--clients` concurrent sessions, each running
turns in its own conversation, requests spread over the workers; a zero-latency
scripted model, so the figures are the agent's own overhead. Reports turns per
second and p50/p95 turn latency, then the live database size of one conversation
after 200 turns (rows of its memory, run and registry threads).

Run: `make bench` (skipped without PostgreSQL) or
`python -m bench.workers_bench [--turns-per-client N] [--clients N]`.
Needs `AGENT_TEST_POSTGRES_URL` or a local server (postgresql://postgres@127.0.0.1/postgres).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg

from agent.api.sessions import COOKIE_NAME, NEW_SESSION, SESSION_HEADER
from memory import ThreadIds

ADMIN_URL = os.environ.get(
    "AGENT_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
SECRET = "bench-workers-" + "w" * 32
REPO = Path(__file__).resolve().parents[1]
MESSAGE = (
    "Turn {turn:04d}: please refine section {section} of the plan, keeping the budget consistent."
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def database() -> Iterator[str]:
    """A fresh database for one benchmark run, dropped afterwards."""
    name = f"agent_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{ADMIN_URL.rpartition('/')[0]}/{name}"
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def workers(count: int, url: str, workdir: Path) -> Iterator[list[str]]:
    """`count` uvicorn processes of the app, each on its own port."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_"))}
    env.update(AGENT_DATABASE_URL=url, AGENT_SESSION_SECRET=SECRET, PYTHONPATH=str(REPO))
    env["AGENT_DATA_DIR"] = str(workdir)
    env["AGENT_NEW_SESSIONS_PER_MINUTE"] = "0"  # every client comes from 127.0.0.1
    processes, urls = [], []
    for _ in range(count):
        port = free_port()
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "uvicorn",
                    "--factory",
                    "bench.http_app:create",
                    "--port",
                    str(port),
                    "--log-level",
                    "warning",
                ],
                cwd=REPO,
                env=env,
                start_new_session=True,
            )
        )
        urls.append(f"http://127.0.0.1:{port}")
    try:
        for target in urls:
            deadline = time.monotonic() + 60
            while True:
                try:
                    if httpx.get(f"{target}/api/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"worker at {target} did not start")
                time.sleep(0.2)
        yield urls
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=15)


def run_client(urls: list[str], turns: int, offset: int) -> tuple[list[float], str, str]:
    """One session: `turns` turns of one conversation, alternating workers."""
    # not a browser: the header starts the session on the first turn
    clients = [
        httpx.Client(base_url=u, timeout=60, headers={SESSION_HEADER: NEW_SESSION}) for u in urls
    ]
    cookie: str | None = None
    conversation: str | None = None
    latencies: list[float] = []
    try:
        for turn in range(turns):
            client = clients[(turn + offset) % len(clients)]
            body: dict[str, Any] = {"message": MESSAGE.format(turn=turn, section=turn % 7 + 1)}
            body |= (
                {"conversationId": conversation} if conversation else {"createConversation": True}
            )
            headers = {"Cookie": f"{COOKIE_NAME}={cookie}"} if cookie else {}
            started = time.perf_counter()
            response = client.post("/api/chat", json=body, headers=headers)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200 or "event: done" not in response.text:
                raise RuntimeError(f"turn failed: {response.status_code} {response.text[:200]}")
            cookie = response.cookies.get(COOKIE_NAME) or cookie
            conversation = conversation or response.headers["X-Conversation-Id"]
    finally:
        for client in clients:
            client.close()
    assert cookie is not None and conversation is not None
    return latencies, cookie.partition(".")[0], conversation


def measure(count: int, clients: int, turns: int) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory() as tmp,
        database() as url,
        workers(count, url, Path(tmp)) as urls,
    ):
        started = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            results = list(pool.map(lambda n: run_client(urls, turns, n), range(clients)))
        elapsed = time.perf_counter() - started
    latencies = sorted(x for lat, _, _ in results for x in lat)
    return {
        "workers": count,
        "clients": clients,
        "turns": len(latencies),
        "turns_per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p95_ms": round(statistics.quantiles(latencies, n=20)[-1] * 1000, 1),
    }


def conversation_size(turns: int = 200) -> dict[str, Any]:
    """Live bytes of one conversation's threads after `turns` turns (one worker)."""
    with (
        tempfile.TemporaryDirectory() as tmp,
        database() as url,
        workers(1, url, Path(tmp)) as urls,
    ):
        _, session, conversation = run_client(urls, turns, 0)
        ids = ThreadIds(SECRET)
        threads = [
            ids.memory_thread(session, conversation),
            ids.run_thread(session, conversation),
            ids.registry_thread(session),
        ]
        with psycopg.connect(url) as conn:
            sizes = {
                table: conn.execute(
                    f"SELECT COALESCE(SUM(pg_column_size(t.*)), 0), COUNT(*) FROM {table} t "
                    "WHERE thread_id = ANY(%s)",
                    (threads,),
                ).fetchone()
                for table in (
                    "checkpoints",
                    "checkpoint_blobs",
                    "checkpoint_writes",
                    "memory_documents",
                )
            }
    return {
        "turns": turns,
        "live_bytes": sum(int(size) for size, _ in sizes.values()),  # type: ignore[misc]
        "rows": {table: int(rows) for table, (_, rows) in sizes.items()},  # type: ignore[misc]
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--turns-per-client", type=int, default=25)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()
    try:
        psycopg.connect(ADMIN_URL, connect_timeout=3).close()
    except psycopg.OperationalError:
        print(f"skipped: PostgreSQL is not reachable at {ADMIN_URL}")
        return
    rows = [measure(n, args.clients, args.turns_per_client) for n in args.workers]
    for row in rows:
        print(
            f"{row['workers']} worker(s): {row['turns_per_second']:>7} turns/s   "
            f"p50 {row['p50_ms']:>7} ms   p95 {row['p95_ms']:>7} ms   ({row['turns']} turns)"
        )
    size = conversation_size()
    print(
        f"one conversation after {size['turns']} turns: "
        f"{size['live_bytes']:,} live bytes, rows {size['rows']}"
    )
    print(json.dumps({"workers": rows, "conversation": size}, indent=2))


if __name__ == "__main__":
    main()
