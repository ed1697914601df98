"""Agent benchmark: our agent beside two `create_agent` peers, 200 turns, zero-latency model.

Three agents answer the same user messages in one conversation, each on its own
SQLite file, with the same scripted model (`bench.scripted`). Ours and the
summarization peer play turn by turn (one turn of each, the order rotating), so that
noise weighs on both alike; the full-history peer plays after them:
- `ours`: `ChatAgent.send`, the users' path: memory, registry and run threads in one
  SQLite file, each run thread pruned to one checkpoint after every turn. A turn is
  timed to its `done`; the memory upkeep after it (extraction, compaction) is waited
  for before the next agent plays, untimed, so that it never lands on another turn's
  clock, and is reported apart (`upkeep ms`);
- `summarization`: `create_agent` + `SummarizationMiddleware(trigger=("messages", 10),
  keep=("messages", 4))` on a `SqliteSaver`;
- `full_history`: `create_agent` on a `SqliteSaver`, every message kept.

Reports per-turn wall time (median of the first and last 20 turns, their ratio, p95),
database bytes after a WAL checkpoint, checkpoint rows, compaction/summary model calls
and the characters of context the model read at the last turn.

Run: `make bench` or `python -m bench.agent_bench [--turns N] [--cue]` (`--cue`: every
message says something lasting about the user, so our every turn's extraction keeps it).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, SummarizationMiddleware
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.sqlite import SqliteSaver

from agent import ChatAgent
from agent.settings import NO_EMBEDDINGS, Settings
from bench.figures import Figures, Run, database_figures, summarise, table
from bench.scripted import ScriptedChatModel
from memory.archive.embedding import QUERY_CHARS, local_embeddings
from memory.text import clamp

SECRET = "bench-secret-" + "x" * 32
SESSION = "bench"
PEER_THREAD = "bench-c1"

# Fixed width (zero-padded numbers): a context that grows can then only be the agent's doing.
USER_MESSAGE = (
    "Turn {turn:04d}: please refine section {section} of the plan, keeping the budget, "
    "the schedule and the risks consistent with what we agreed in the earlier turns."
)
CUE_MESSAGE = (
    "Turn {turn:04d}: I live in Porto, and I prefer short answers that put the budget, "
    "the schedule and the risks of section {section} first."
)
"""Says something durable about the user: our every turn's extraction keeps it."""

# The memory store runs SQLite with synchronous=NORMAL; every connection opened here
# does the same, so that the agents differ in what they store, not in fsyncs.
SYNCHRONOUS = "PRAGMA synchronous = NORMAL"


def user_message(turn: int, cue: bool = False) -> str:
    """The user's message of `turn` (1-based), the same for every agent (~150 chars);
    with `cue`, one that says something about the user."""
    return (CUE_MESSAGE if cue else USER_MESSAGE).format(turn=turn, section=turn % 7 + 1)


class Contender:
    """One agent of the benchmark, played one turn at a time."""

    name: str
    model: ScriptedChatModel
    db: Path
    run: Run
    cue: bool = False

    def turn(self, number: int) -> None:
        """Answer the user message of turn `number` (timed by the caller)."""
        raise NotImplementedError

    def after_turn(self) -> None:
        """Untimed work the turn left (our memory upkeep)."""

    def close(self) -> None:
        """Release the agent's database."""

    def figures(self) -> Figures:
        """The figures of the turns played (call after `close`)."""
        return summarise(self.name, self.run, self.model.log, database_figures(self.db))


class Ours(Contender):
    """Our agent through `ChatAgent.send`, the path users take: the turn request checked
    once, the busy lock, the graph (memory read, model, memory write, compaction every
    third turn or so), the run thread kept to one checkpoint."""

    def __init__(self, directory: Path, cue: bool = False) -> None:
        self.name, self.model, self.run, self.cue = "ours", ScriptedChatModel(), Run(), cue
        self.db = directory / "ours.sqlite"
        self.agent = ChatAgent(
            database_url=f"sqlite:///{self.db}",
            model=self.model,
            compaction_model=self.model,
            secret=SECRET,
            # (embeddings off, as DESIGN §24 measures the ratio: `judge_ms` is their cost)
            settings=Settings(data_dir=directory, embeddings_model=NO_EMBEDDINGS),
        )
        self.conversation: str | None = None

    def turn(self, number: int) -> None:
        result = self.agent.send(
            user_message(number, self.cue),
            session_id=SESSION,
            conversation_id=self.conversation,
            create_conversation=self.conversation is None,
        )
        self.conversation = result.conversation_id
        if result.status != "completed" or result.degraded:
            raise RuntimeError(f"turn {number} did not complete: {result.status}")

    def after_turn(self) -> None:
        started = time.perf_counter()
        if not self.agent.wait_for_upkeep(60):
            raise RuntimeError("memory upkeep did not finish")
        self.run.upkeep_seconds.append(time.perf_counter() - started)

    def close(self) -> None:
        self.agent.close()


class Peer(Contender):
    """A `create_agent` peer on its own `SqliteSaver` file, one thread, invoked per turn."""

    def __init__(
        self,
        name: str,
        directory: Path,
        middleware: Callable[[ScriptedChatModel], Sequence[AgentMiddleware[Any, Any, Any]]],
        cue: bool = False,
    ) -> None:
        self.name, self.model, self.run, self.cue = name, ScriptedChatModel(), Run(), cue
        self.db = directory / f"{name}.sqlite"
        # check_same_thread=False: the saver writes from LangGraph's background thread.
        self.conn = sqlite3.connect(self.db, check_same_thread=False)
        self.conn.execute(SYNCHRONOUS)
        self.graph = create_agent(
            model=self.model,
            tools=[],
            middleware=middleware(self.model),
            checkpointer=SqliteSaver(self.conn),
        )
        self.config: RunnableConfig = {"configurable": {"thread_id": PEER_THREAD}}

    def turn(self, number: int) -> None:
        message = HumanMessage(content=user_message(number, self.cue))
        self.graph.invoke({"messages": [message]}, self.config)

    def close(self) -> None:
        self.conn.close()


def summarization(model: ScriptedChatModel) -> Sequence[AgentMiddleware[Any, Any, Any]]:
    """The peer's `SummarizationMiddleware`: summarise past 10 messages, keep 4."""
    return [SummarizationMiddleware(model=model, trigger=("messages", 10), keep=("messages", 4))]


def full_history(model: ScriptedChatModel) -> Sequence[AgentMiddleware[Any, Any, Any]]:
    """No middleware: the model reads every message."""
    return []


def play(contenders: Sequence[Contender], turns: int) -> list[Figures]:
    """Play `turns` turns of `contenders`, interleaved turn by turn (the order rotating),
    so that whatever else the machine does weighs on all of them alike."""
    try:
        for number in range(1, turns + 1):
            shift = number % len(contenders)
            for contender in [*contenders[shift:], *contenders[:shift]]:
                started = time.perf_counter()
                contender.turn(number)
                contender.run.turn_seconds.append(time.perf_counter() - started)
                contender.after_turn()
                contender.run.context_chars.append(contender.model.log.last_chat_input_chars)
    finally:
        for contender in contenders:
            contender.close()
    return [contender.figures() for contender in contenders]


def run_all(turns: int, directory: Path, cue: bool = False) -> list[Figures]:
    """Ours and the summarization peer interleaved, then the full-history peer alone: its
    heap grows to megabytes, and its garbage collections would land on the others' turns."""
    compared = play(
        [Ours(directory, cue), Peer("summarization", directory, summarization, cue)], turns
    )
    return [*compared, *play([Peer("full_history", directory, full_history, cue)], turns)]


def empty_bytes(directory: Path) -> int:
    """The file size of our database with its schema and nothing stored (the memory,
    registry, run and long-term tables and indexes; the empty archive's pages left out,
    since `archive_bytes` counts them): the fixed part of `database_bytes`, not the
    conversation's."""
    db = directory / "empty.sqlite"
    ChatAgent(
        database_url=f"sqlite:///{db}", secret=SECRET, settings=Settings(data_dir=directory)
    ).close()
    empty = database_figures(db)
    return int(empty["database_bytes"]) - int(empty["archive_bytes"] or 0)


def targets(figures: Sequence[Figures], schema_bytes: int) -> dict[str, bool]:
    """The targets, for our agent against the summarization peer."""
    by_agent = {f.agent: f for f in figures}
    ours, peer = by_agent["ours"], by_agent["summarization"]
    # the archive is the session's history (kept until retention, searchable): it grows
    # with the turns by design, so the bound is on memory, registry and run threads
    conversation = ours.database_bytes - schema_bytes - (ours.archive_bytes or 0)
    late = ours.late_median_ms / peer.late_median_ms
    return {
        "median turn <= summarization agent's": ours.median_ms <= peer.median_ms,
        f"last-20 median <= summarization agent's (ratio {late:.2f})": late <= 1.0,
        "flat: last-20 median <= 1.2x first-20 median": ours.flatness <= 1.2,
        f"one conversation's storage ({conversation:,} bytes: the file less its empty "
        f"schema, {schema_bytes:,}, and the archive, {ours.archive_bytes or 0:,}) <= 64 KiB": (
            conversation <= 64 * 1024
        ),
        "compaction calls <= 1 per 3 turns": ours.compaction_calls * 3 <= ours.turns,
        "context bounded: largest context of the second half <= of the first half": (
            ours.late_max_context_chars <= ours.early_max_context_chars
        ),
    }


def judge_ms(turns: int, cue: bool) -> float:
    """Median ms of the local model's embedding of a turn's message, the relevance
    judge's cost on the reply path by default (`memory.archive.relevance`)."""
    model = local_embeddings()
    model.embed_query("warm up")
    times = []
    for number in range(1, min(turns, 20) + 1):
        started = time.perf_counter()
        model.embed_query(clamp(user_message(number, cue), QUERY_CHARS))
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument(
        "--cue", action="store_true", help="every message says something about the user"
    )
    args = parser.parse_args()
    if args.turns < 2:
        parser.error("--turns must be at least 2")
    with tempfile.TemporaryDirectory() as tmp:
        figures = run_all(args.turns, Path(tmp), args.cue)
        schema = empty_bytes(Path(tmp))
    messages = "a cue in every message" if args.cue else "no cue"
    print(f"{args.turns} turns, zero-latency scripted model, SQLite, {messages}")
    print(table(figures))
    print(json.dumps([asdict(f) for f in figures], indent=2))
    judged = judge_ms(args.turns, args.cue)
    print(f"judge_ms: {judged:.1f} (the relevance judge's embedding a turn, off above)")
    for name, met in targets(figures, schema).items():
        print(f"{'met ' if met else 'MISSED'}  {name}")


if __name__ == "__main__":
    main()
