"""PostgreSQL round trips of one turn: what a turn reads (memory, registry, run state)
and writes, counted at the driver, through the async API the HTTP app uses.

Every storage call is one query, or one pipelined batch: one round trip. They are
grouped by what asked for them: the reads that start a turn (the run state, the
memory and registry), the reads of writers (a write reads the registry again under
the session's lock: another conversation may have changed it), and the writes.
Target: at most 3 round trips to read a turn's memory, registry and run
state.

Run: `make bench` or `python -m bench.roundtrips [--turns N]`. Needs PostgreSQL
(`AGENT_TEST_POSTGRES_URL`, default the local server).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent import ChatAgent
from agent.settings import Settings
from bench.scripted import ScriptedChatModel
from bench.workers_bench import database
from memory.archive.postgres import PostgresArchive
from memory.conversations import ConversationMemory
from memory.storage.postgres.checkpointer import PostgresCheckpointer
from memory.storage.postgres.documents import PostgresDocuments
from memory.storage.postgres.items import PooledPostgresStore

SECRET = "bench-roundtrips-" + "r" * 32
READS = ("get_tuple", "get_documents")
WRITES = ("put", "put_documents", "prune")
OWNERS: dict[str, type] = {
    "get_tuple": PostgresCheckpointer,
    "put": PostgresCheckpointer,
    "prune": PostgresCheckpointer,
    "get_documents": PostgresDocuments,
    "put_documents": PostgresDocuments,
}


@contextmanager
def counting(counts: collections.Counter[str]) -> Iterator[None]:
    """Count calls of the checkpointer's and the document store's methods while the
    block runs, and the memory reads that start a turn (`ConversationMemory.memory_for_turn`, one
    `get_documents`)."""
    patched: list[tuple[type, str, Callable[..., Any]]] = []
    for owner, name in [
        *((OWNERS[name], name) for name in (*READS, *WRITES)),
        (ConversationMemory, "memory_for_turn"),
        (PooledPostgresStore, "batch"),
        (PostgresArchive, "search"),
    ]:
        original = getattr(owner, name)
        patched.append((owner, name, original))

        def counted(
            self: Any, *args: Any, _name: str = name, _call: Any = original, **kwargs: Any
        ) -> Any:
            counts[_name] += 1
            return _call(self, *args, **kwargs)

        setattr(owner, name, counted)
    try:
        yield
    finally:
        for owner, name, original in patched:
            setattr(owner, name, original)


async def one_turn(agent: ChatAgent, conversation: str | None, turn: int) -> str:
    """One turn through `astream` (the HTTP path); returns the conversation id."""
    async for event in agent.astream(
        f"Turn {turn}: refine the plan.",
        session_id="bench",
        conversation_id=conversation,
        create_conversation=conversation is None,
    ):
        if event["event"] == "conversation":
            conversation = event["conversationId"]
    assert conversation is not None
    return conversation


def measure(turns: int) -> dict[str, Any]:
    """Per-turn storage calls of `turns` turns in one conversation (after a first one)."""
    model = ScriptedChatModel()
    counts: collections.Counter[str] = collections.Counter()
    with database() as url, tempfile.TemporaryDirectory() as tmp:
        agent = ChatAgent(
            database_url=url,
            model=model,
            compaction_model=model,
            secret=SECRET,
            settings=Settings(data_dir=Path(tmp)),
        )
        try:
            conversation = asyncio.run(one_turn(agent, None, 0))
            with counting(counts):
                for turn in range(1, turns + 1):
                    asyncio.run(one_turn(agent, conversation, turn))
        finally:
            agent.close()
    per_turn = {
        name: round(counts[name] / turns, 2)
        for name in (*READS, *WRITES, "memory_for_turn", "batch", "search")
    }
    start_reads = counts["get_tuple"] + counts["memory_for_turn"]
    return {
        "turns": turns,
        "turn_start_reads": round(start_reads / turns, 2),
        "writer_reads": round((counts["get_documents"] - counts["memory_for_turn"]) / turns, 2),
        "writes": round(sum(counts[name] for name in WRITES) / turns, 2),
        # recall of the user's long-term items: one store query a turn, beside the three
        "long_term_reads": round(counts["batch"] / turns, 2),
        # recall of earlier conversations: one archive query a turn (its lines are
        # written inside the documents' write transaction, no round trip of their own)
        "archive_reads": round(counts["search"] / turns, 2),
        "by_call": per_turn,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    figures = measure(parser.parse_args().turns)
    print(json.dumps(figures, indent=2))
    verdict = "met " if figures["turn_start_reads"] <= 3 else "MISSED"
    print(f"{verdict}  at most 3 round trips to read a turn's memory, registry and run state")


if __name__ == "__main__":
    main()
