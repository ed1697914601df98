"""Signed-in users under a real `langgraph dev` (agent/auth.py): two users with API keys
and two with tokens of a test identity provider, through the SDK and the mounted HTTP API.

Nothing gets in without valid credentials; one user never lists, reads, streams,
resumes, copies, updates or deletes another's threads, runs or crons, nor reads their
store items, their long-term items, their archive or their conversations; a run naming
another user's session is refused. Every graph of langgraph.json is covered.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from langgraph_sdk import get_client
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.schema import Command

from agent.identity import COOKIE_NAME
from tests.identities import AUDIENCE, ISSUER, KEYS, Provider, key_entries
from tests.integration.conftest import REPO, Server, start_langgraph_dev, stop

pytestmark = pytest.mark.integration

GRAPHS = sorted(json.loads((REPO / "langgraph.json").read_text())["graphs"])
FACT = "Remember that I'm vegetarian and I live in Lisbon."
TASKS = "/tasklist Set up CI. Add linting."


@dataclass(frozen=True)
class User:
    """A signed-in user: an API key sent as `x-api-key`, or a bearer (a key or a token)."""

    session: str
    key: str | None = None
    bearer: str | None = None

    def sdk(self, server: Server) -> LangGraphClient:
        headers = {"authorization": f"Bearer {self.bearer}"} if self.bearer else None
        return get_client(url=server.url, api_key=self.key, headers=headers)

    def http(self, server: Server) -> httpx.Client:
        headers = {"x-api-key": self.key} if self.key else {}
        if self.bearer:
            headers["authorization"] = f"Bearer {self.bearer}"
        return httpx.Client(base_url=server.url, headers=headers, timeout=60)


@pytest.fixture(scope="module")
def provider() -> Provider:
    return Provider()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, provider: Provider) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("identity-dev")
    running = start_langgraph_dev(
        workdir,
        AGENT_SESSION_SECRET="t" * 40,
        AGENT_API_KEYS=key_entries(),
        AGENT_JWT_ISSUER=ISSUER,
        AGENT_JWT_AUDIENCE=AUDIENCE,
        AGENT_JWKS=str(provider.write_jwks(workdir / "jwks.json")),
    )
    try:
        yield running
    finally:
        stop(running.process)


@pytest.fixture(scope="module")
def users(provider: Provider) -> dict[str, User]:
    return {
        "alice": User("key:alice", key=KEYS["alice"]),
        "bob": User("key:bob", bearer=KEYS["bob"]),
        "carol": User("jwt:carol", bearer=provider.token("carol")),
        "dave": User("jwt:dave", bearer=provider.token("dave")),
    }


PAIRS = [("alice", "bob"), ("carol", "dave")]


def owner_of(thread: Any) -> Any:
    return (thread["metadata"] or {}).get("owner")


async def refused(call: Callable[[], Awaitable[Any]]) -> bool:
    """Whether the server refuses the call as if the thing did not exist, or forbids it (a
    listing may answer with nothing instead)."""
    try:
        answer = await call()
    except httpx.HTTPStatusError as exc:
        return exc.response.status_code in (403, 404, 409)  # 409: the server's "no such
        # thread to copy"
    return answer in ([], None)


@pytest.mark.parametrize(
    "problem",
    [
        "none",
        "bad key",
        "studio scheme",
        "expired",
        "not yet valid",
        "wrong audience",
        "wrong issuer",
        "wrong signature",
        "shared secret",
    ],
)
def test_requests_without_valid_credentials_get_401(
    server: Server, provider: Provider, problem: str
) -> None:
    plain = {
        "none": {},
        "bad key": {"x-api-key": "not-a-key"},
        # with `disable_studio_auth`, Studio's own scheme is no way in
        "studio scheme": {"x-auth-scheme": "langsmith"},
    }
    token = {"authorization": f"Bearer {provider.refused_tokens().get(problem)}"}
    headers = plain.get(problem, token)
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        for method, path in [
            ("POST", "/threads/search"),
            ("POST", "/threads"),
            ("POST", "/store/items/search"),
            ("GET", "/assistants/search"),
            ("GET", "/api/conversations"),
            ("POST", "/api/chat"),
        ]:
            response = client.request(method, path, json={})
            assert response.status_code == 401, (method, path, response.text)
            if path.startswith("/api/"):  # the app's own error shape
                assert response.json()["error"]["code"] == "unauthenticated"
        # the page's static files and the health checks hold nothing of a user
        for path in ("/", "/web/app.js", "/api/health", "/ok"):
            assert client.get(path).status_code == 200, path


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize(("owner_name", "other_name"), PAIRS)
def test_a_users_threads_runs_crons_and_store_are_theirs_alone(
    server: Server, users: dict[str, User], graph: str, owner_name: str, other_name: str
) -> None:
    owner, other = users[owner_name], users[other_name]

    async def go() -> None:
        mine, theirs = owner.sdk(server), other.sdk(server)
        # a client's own `owner` cannot hand a thread to someone else
        thread = await mine.threads.create(metadata={"owner": other.session})
        assert owner_of(thread) == owner.session
        tid = thread["thread_id"]
        run = await mine.runs.create(tid, graph, input={"message": FACT})
        await mine.runs.join(tid, run["run_id"])
        created = await mine.crons.create_for_thread(
            tid, graph, schedule="0 0 1 1 *", input={"message": "yearly"}
        )
        cron_id = str(dict(created)["cron_id"])
        await mine.store.put_item(("notes",), "plan", {"text": "owner's note"})

        assert tid in [t["thread_id"] for t in await mine.threads.search(limit=100)]
        assert [r["run_id"] for r in await mine.runs.list(tid)] == [run["run_id"]]
        item = await mine.store.get_item(("notes",), "plan")
        assert item is not None and item["value"] == {"text": "owner's note"}

        theirs_before = [t["thread_id"] for t in await theirs.threads.search(limit=100)]
        assert tid not in theirs_before
        assert cron_id not in [c["cron_id"] for c in await theirs.crons.search()]
        attempts: dict[str, Callable[[], Awaitable[Any]]] = {
            "get": lambda: theirs.threads.get(tid),
            "get_state": lambda: theirs.threads.get_state(tid),
            "get_history": lambda: theirs.threads.get_history(tid),
            "list runs": lambda: theirs.runs.list(tid),
            "get run": lambda: theirs.runs.get(tid, run["run_id"]),
            "join run": lambda: theirs.runs.join(tid, run["run_id"]),
            "fork by update_state": lambda: theirs.threads.update_state(tid, {"message": "x"}),
            "copy": lambda: theirs.threads.copy(tid),
            "run on it": lambda: theirs.runs.create(tid, graph, input={"message": "mine now"}),
            "take it": lambda: theirs.threads.update(tid, metadata={"owner": other.session}),
            "delete cron": lambda: theirs.crons.delete(cron_id),
            "delete": lambda: theirs.threads.delete(tid),
        }
        for name, attempt in attempts.items():
            assert await refused(attempt), name
        # a stream opens before the server looks: it carries the refusal and nothing else
        parts = [part async for part in theirs.runs.join_stream(tid, run["run_id"])]
        assert [(p.event, "404" in p.data["message"]) for p in parts] == [("error", True)]
        assert await theirs.store.get_item(("notes",), "plan") is None
        assert (await theirs.store.search_items(("notes",)))["items"] == []
        # nothing was copied or created for the other user; the owner's things are all
        # still there, unchanged
        assert [t["thread_id"] for t in await theirs.threads.search(limit=100)] == theirs_before
        assert owner_of(await mine.threads.get(tid)) == owner.session
        assert [c["cron_id"] for c in await mine.crons.search()] == [cron_id]
        await mine.crons.delete(cron_id)

    asyncio.run(go())


@pytest.mark.parametrize(("owner_name", "other_name"), PAIRS)
def test_the_agents_own_memory_is_the_signed_in_users(
    server: Server, users: dict[str, User], owner_name: str, other_name: str
) -> None:
    """A turn run through the SDK lands in the user's session: the HTTP API shows it to
    them (same user, same session) and to nobody else."""
    owner, other = users[owner_name], users[other_name]

    async def turn() -> str:
        client = owner.sdk(server)
        thread = await client.threads.create()
        run = await client.runs.create(thread["thread_id"], "agent", input={"message": FACT})
        await client.runs.join(thread["thread_id"], run["run_id"])
        return str(thread["thread_id"])

    conversation = asyncio.run(turn())
    with owner.http(server) as mine, other.http(server) as theirs:
        view = mine.get("/api/chat/thread", params={"conversationId": conversation})
        assert view.status_code == 200, view.text
        assert view.json()["messages"][0]["text"] == FACT
        listed = mine.get("/api/conversations").json()["conversations"]
        assert conversation in [c["id"] for c in listed]
        items = mine.get("/api/memories").json()["memories"]
        assert "vegetarian" in " ".join(m["text"] for m in items)
        assert mine.get("/api/search", params={"q": "Lisbon"}).json()["results"]

        gone = theirs.get("/api/chat/thread", params={"conversationId": conversation})
        assert gone.status_code == 404
        assert conversation not in [
            c["id"] for c in theirs.get("/api/conversations").json()["conversations"]
        ]
        assert "vegetarian" not in theirs.get("/api/memories").text
        assert theirs.get("/api/search", params={"q": "Lisbon"}).json()["results"] == []


def test_a_paused_task_list_is_resumed_by_its_owner_only(
    server: Server, users: dict[str, User]
) -> None:
    async def go() -> tuple[bool, bool, str]:
        alice, bob = users["alice"].sdk(server), users["bob"].sdk(server)
        thread = await alice.threads.create()
        tid = thread["thread_id"]
        paused = await alice.runs.wait(tid, "agent", input={"message": TASKS}, raise_error=False)
        assert isinstance(paused, dict) and paused.get("__interrupt__"), paused
        decision: Command = {"resume": {"action": "approve"}}
        bob_resumed = await refused(lambda: bob.runs.create(tid, "agent", command=decision))
        still_waiting = bool((await alice.threads.get_state(tid))["next"])
        run = await alice.runs.create(tid, "agent", command=decision)
        await alice.runs.join(tid, run["run_id"])
        return bob_resumed, still_waiting, (await alice.runs.get(tid, run["run_id"]))["status"]

    bob_refused, still_waiting, status = asyncio.run(go())
    assert bob_refused and still_waiting
    assert status == "success"


@pytest.mark.parametrize(
    ("given", "context"),
    [
        ({"message": "hello"}, {"session_id": "key:bob"}),
        ({"message": "hello"}, {"session_id": "key:bob", "conversation_id": "bobs"}),
    ],
)
def test_a_run_naming_another_users_session_is_refused(
    server: Server, users: dict[str, User], given: dict[str, Any], context: Any
) -> None:
    async def go() -> tuple[str, str]:
        alice = users["alice"].sdk(server)
        thread = await alice.threads.create()
        tid = thread["thread_id"]
        run = await alice.runs.create(tid, "agent", input=given, context=context)
        await alice.runs.join(tid, run["run_id"])
        return str(tid), (await alice.runs.get(tid, run["run_id"]))["status"]

    conversation, status = asyncio.run(go())
    assert status == "error"
    with users["bob"].http(server) as bob, users["alice"].http(server) as alice:
        for client in (alice, bob):  # nothing was written, in either session
            listed = client.get("/api/conversations").json()["conversations"]
            assert conversation not in [c["id"] for c in listed]


def test_the_page_signs_in_once_and_keeps_a_cookie_for_the_api_only(
    server: Server, users: dict[str, User]
) -> None:
    with users["carol"].http(server) as carol:
        signed = carol.post("/api/session")
        assert signed.status_code == 200 and signed.json() == {"sessionId": "jwt:carol"}
        cookie = signed.cookies[COOKIE_NAME]
        assert "HttpOnly" in signed.headers["set-cookie"]
        assert "Path=/api/" in signed.headers["set-cookie"]
    with httpx.Client(base_url=server.url, cookies={COOKIE_NAME: cookie}, timeout=30) as page:
        assert page.get("/api/conversations").status_code == 200
        # LangGraph's own API never takes the page's cookie
        assert page.post("/threads/search", json={}).status_code == 401
        assert page.delete("/api/session").status_code == 204
        # signed out in the database: the same cookie, sent again, names nobody
        page.cookies.set(COOKIE_NAME, cookie)
        assert page.get("/api/conversations").status_code == 401


def test_a_users_own_assistants_are_theirs_alone(server: Server, users: dict[str, User]) -> None:
    """Everyone reads the graphs' own assistants; an assistant a user makes (a forged
    `created_by` included) is read, searched and changed by them alone."""

    async def go() -> None:
        alice, bob = users["alice"].sdk(server), users["bob"].sdk(server)
        made = [
            await alice.assistants.create(
                "agent", context={"mode": "private"}, metadata=metadata, name=f"alice {n}"
            )
            for n, metadata in enumerate([{"note": "mine"}, {"created_by": "system"}])
        ]
        ids = {assistant["assistant_id"] for assistant in made}
        assert ids <= {a["assistant_id"] for a in await alice.assistants.search(limit=100)}
        for assistant_id in ids:
            assert (await alice.assistants.get(assistant_id))["name"].startswith("alice")
        seen = await bob.assistants.search(limit=100)
        assert not ids & {a["assistant_id"] for a in seen}
        assert {a["graph_id"] for a in seen} == set(GRAPHS)  # the graphs' own, shared
        shared = seen[0]["assistant_id"]
        assert (await bob.assistants.get(shared))["assistant_id"] == shared
        assert await refused(lambda: bob.assistants.update(shared, metadata={"x": 1}))
        for assistant_id in ids:
            attempts: list[Callable[[], Awaitable[Any]]] = [
                functools.partial(bob.assistants.get, assistant_id),
                functools.partial(bob.assistants.get_schemas, assistant_id),
                functools.partial(bob.assistants.delete, assistant_id),
            ]
            for attempt in attempts:
                assert await refused(attempt)

    asyncio.run(go())
