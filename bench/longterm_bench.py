"""Long-term memory benchmark: what it costs per turn, and how rarely it calls a model.

1. Per-turn cost: two sessions of one `ChatAgent` (SQLite, the zero-latency scripted
   model of `bench.scripted`), one with no long-term items and one with 100 (the
   session limit), play the 200 turns of `bench.agent_bench` turn by turn, so that
   noise weighs on both alike. Every turn recalls (one store query, ranking, the
   block in the context); the difference is what 100 items cost.
2. Extraction calls: the same turns with `long_term_memory="model"`, counting the
   extraction calls of the batched upkeep (a batch of four owed turns, a compaction
   folding one, another conversation's turn, and the flush at the end); the share on a
   mixed set of everyday messages (`EVERYDAY`), each in a new conversation (so each
   pays the one before); and a replay of RealMem's dev personas (their user lines,
   each session a conversation of the persona's user) when the data is at hand.

Run: `make bench` or `python -m bench.longterm_bench [--turns N] [--sessions N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from agent import ChatAgent
from agent.settings import Settings
from bench.agent_bench import SECRET, user_message
from bench.scripted import ScriptedChatModel
from memory.analysis import says_something
from memory.limits import MAX_MEMORY_ITEMS

EVERYDAY = (
    "What is the capital of Australia?",
    "Can you summarise this article for me?",
    "I prefer metric units, please.",
    "How do I reverse a list in Python?",
    "Thanks, that helps.",
    "Translate 'good morning' into Spanish.",
    "Please keep your answers short.",
    "What's a good name for a cat?",
    "Explain the difference between TCP and UDP.",
    "I'm vegetarian, so no meat in recipes.",
    "Write a haiku about autumn.",
    "Why is the sky blue?",
    "Call me Sam from now on.",
    "What time zone is Tokyo in?",
    "Draft an email declining the meeting.",
    "I work as a nurse on night shifts.",
    "Give me three ideas for a birthday party.",
    "How many ounces are in a pound?",
    "Never use emojis in your answers.",
    "What does HTTP 418 mean?",
)
"""Twenty everyday messages; six state something lasting about the user."""


def _agent(directory: Path, name: str, mode: str) -> tuple[ChatAgent, ScriptedChatModel]:
    model = ScriptedChatModel()
    agent = ChatAgent(
        database_url=f"sqlite:///{directory / name}.sqlite",
        model=model,
        compaction_model=model,
        secret=SECRET,
        settings=Settings(data_dir=directory),
        long_term_memory=mode,  # type: ignore[arg-type]
    )
    return agent, model


def per_turn_cost(turns: int, directory: Path) -> dict[str, Any]:
    """Median and p95 per-turn milliseconds with 0 and with 100 long-term items."""
    agent, _ = _agent(directory, "cost", "explicit")
    with agent:
        for n in range(MAX_MEMORY_ITEMS):
            agent.remember(f"I like hobby number {n} on weekends", session_id="full")
        sessions = {"empty": "empty", "full": "full"}
        conversations: dict[str, str | None] = dict.fromkeys(sessions)
        seconds: dict[str, list[float]] = {name: [] for name in sessions}
        for turn in range(1, turns + 1):
            order = list(sessions) if turn % 2 else list(reversed(sessions))
            for name in order:
                started = time.perf_counter()
                result = agent.send(
                    user_message(turn),
                    session_id=sessions[name],
                    conversation_id=conversations[name],
                    create_conversation=conversations[name] is None,
                )
                seconds[name].append(time.perf_counter() - started)
                agent.wait_for_upkeep()  # the upkeep after done: off the turn's clock
                conversations[name] = result.conversation_id
        items = len(agent.memories(session_id="full")["memories"])

    def figures(values: list[float]) -> dict[str, float]:
        return {
            "median_ms": round(statistics.median(values) * 1000, 3),
            "p95_ms": round(statistics.quantiles(values, n=20)[-1] * 1000, 3),
        }

    empty, full = figures(seconds["empty"]), figures(seconds["full"])
    return {
        "turns": turns,
        "items_in_full_session": items,
        "no_items": empty,
        "hundred_items": full,
        "added_ms_per_turn": round(full["median_ms"] - empty["median_ms"], 3),
    }


def extraction_share(turns: int, directory: Path) -> dict[str, Any]:
    """Turns on which model extraction called the model, out of the benchmark's turns
    and of `EVERYDAY`."""
    agent, model = _agent(directory, "share", "model")
    with agent:
        conversation: str | None = None
        for turn in range(1, turns + 1):
            result = agent.send(
                user_message(turn),
                session_id="bench",
                conversation_id=conversation,
                create_conversation=conversation is None,
            )
            conversation = result.conversation_id
        agent.wait_for_upkeep()  # extraction runs after each turn's done
        bench_calls = model.log.extraction_calls
        for text in EVERYDAY:
            agent.send(text, session_id="everyday", create_conversation=True)
        agent.wait_for_upkeep()
        everyday_calls = model.log.extraction_calls - bench_calls
    return {
        "benchmark_turns": turns,
        "benchmark_extraction_calls": bench_calls,
        "benchmark_share": round(bench_calls / turns, 3),
        "everyday_messages": len(EVERYDAY),
        "everyday_extraction_calls": everyday_calls,
        "everyday_with_cue": sum(says_something(text) for text in EVERYDAY),
        "everyday_share": round(everyday_calls / len(EVERYDAY), 3),
    }


def realmem_share(directory: Path, sessions: int) -> dict[str, Any] | None:
    """Extraction calls per user turn replaying the first `sessions` sessions of each
    RealMem dev persona (None without the data)."""
    from evals.realmem import DATA_DIR, DATA_ENV
    from evals.realmem_data import load_persona, persona_files

    data = Path(os.environ.get(DATA_ENV) or DATA_DIR)
    files = persona_files(data) if data.is_dir() else []
    if not files:
        return None
    agent, model = _agent(directory, "realmem", "model")
    turns = 0
    with agent:
        for file in files:
            persona = load_persona(file)
            for session in persona.sessions[:sessions]:
                conversation: str | None = None
                for line in session.lines:
                    if line.speaker != "User":
                        continue
                    result = agent.send(
                        line.text[:16_000],
                        session_id=persona.name.replace(" ", "_").lower(),
                        conversation_id=conversation,
                        create_conversation=conversation is None,
                    )
                    conversation, turns = result.conversation_id, turns + 1
        agent.wait_for_upkeep()
        calls = model.log.extraction_calls
    return {
        "personas": len(files),
        "sessions_each": sessions,
        "user_turns": turns,
        "extraction_calls": calls,
        "share": round(calls / turns, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=40, help="RealMem sessions per persona")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        cost = per_turn_cost(args.turns, Path(directory))
        share = extraction_share(args.turns, Path(directory))
        realmem = realmem_share(Path(directory), args.sessions)
    print("long-term memory: per-turn cost (SQLite, zero-latency model, interleaved)")
    empty = cost["no_items"]
    print(f"  0 items:   median {empty['median_ms']} ms, p95 {empty['p95_ms']} ms")
    print(
        f"  100 items: median {cost['hundred_items']['median_ms']} ms, "
        f"p95 {cost['hundred_items']['p95_ms']} ms  (+{cost['added_ms_per_turn']} ms)"
    )
    print("long-term memory: extraction calls (AGENT_LONG_TERM_MEMORY=model)")
    print(
        f"  benchmark turns: {share['benchmark_extraction_calls']} of {share['benchmark_turns']}"
        f" ({share['benchmark_share']:.0%})"
    )
    print(
        f"  everyday messages: {share['everyday_extraction_calls']} of "
        f"{share['everyday_messages']} ({share['everyday_share']:.0%})"
    )
    if realmem is not None:
        print(
            f"  RealMem dev replay: {realmem['extraction_calls']} of {realmem['user_turns']}"
            f" user turns ({realmem['share']:.0%})"
        )
    print(json.dumps({"cost": cost, "extraction": share, "realmem": realmem}))


if __name__ == "__main__":
    main()
