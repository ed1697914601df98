"""Latency benchmark: time-to-done with a model that takes time, this agent beside
`create_agent` + `SummarizationMiddleware`.

The model (`LatencyModel`, the scripted model of `bench.scripted` with sleeps) takes
0.3 s per chat call and 1.0 s per structured call (compaction, long-term extraction)
or summary. Each agent plays 30 turns of one conversation, half of them saying
something about the user (a cue: this agent's extraction model runs on them), on its
own SQLite file:
- `ours`: `ChatAgent.astream`, long-term extraction by the model; each turn is sent
  the moment the previous turn's `done` arrives (its stream still open for the memory
  upkeep after it), and counts as accepted unless refused as busy;
- `summarization`: `create_agent` + `SummarizationMiddleware(trigger=("messages", 10),
  keep=("messages", 4))` on a `SqliteSaver`, which summarises before its model call;
  it has no busy conversation to refuse a follow-up (n/a).

Reports p50 and p95 of time-to-done (from sending to `done`, or to the end of the
peer's call), the share of follow-ups accepted, and how long our upkeep took to
drain after the last turn.

Run: `make bench` or `python -m bench.latency_bench [--turns N] [--chat S] [--structured S]`.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from pydantic import BaseModel

from agent import ChatAgent, ConversationBusy
from agent.client_events import ClientEvent
from agent.offline.local import ModelCall
from agent.settings import Settings
from bench.agent_bench import SECRET, SESSION, SYNCHRONOUS, summarization, user_message
from bench.figures import fixed_width
from bench.scripted import SUMMARIZATION_SOURCE, ScriptedChatModel

CHAT_SECONDS = 0.3
STRUCTURED_SECONDS = 1.0
CUE_MESSAGE = (
    "Turn {turn:04d}: I live in Porto, and I prefer short answers that refine section "
    "{section} of the plan, with the budget and the risks kept consistent."
)
"""Says something durable about the user: our extraction model runs."""


def latency_message(turn: int) -> str:
    """Turn `turn`'s message: every other one says something about the user."""
    if turn % 2:
        return CUE_MESSAGE.format(turn=turn, section=turn % 7 + 1)
    return user_message(turn)


class LatencyModel(ScriptedChatModel):
    """`ScriptedChatModel` with a remote model's latency: `chat_seconds` per chat call,
    `structured_seconds` per summary or structured call."""

    chat_seconds: float = CHAT_SECONDS
    structured_seconds: float = STRUCTURED_SECONDS

    def delay(self, call: ModelCall) -> float:
        summary = call.metadata.get("lc_source") == SUMMARIZATION_SOURCE
        return self.structured_seconds if summary else self.chat_seconds

    def with_structured_output(
        self, schema: dict[str, Any] | type, *, include_raw: bool = False, **kwargs: Any
    ) -> Runnable[LanguageModelInput, dict[str, Any] | BaseModel]:
        inner = super().with_structured_output(schema, include_raw=include_raw, **kwargs)
        pause = self.structured_seconds

        def answer(prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
            time.sleep(pause)
            return inner.invoke(prompt)

        async def aanswer(prompt: LanguageModelInput) -> dict[str, Any] | BaseModel:
            await asyncio.sleep(pause)
            return await inner.ainvoke(prompt)

        return RunnableLambda(answer, afunc=aanswer, name="latency_structured")


@dataclass(frozen=True)
class Latency:
    """One agent's figures."""

    agent: str
    turns: int
    p50_ms: float
    p95_ms: float
    followups: str
    """Follow-ups accepted, as `accepted/sent`, or n/a."""
    drain_ms: float | None
    """How long upkeep went on after the last turn's `done` (ours only)."""
    structured_calls: int
    extraction_calls: int


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


async def _drain(events: AsyncGenerator[ClientEvent, None]) -> None:
    async for _ in events:
        pass


async def play_ours(directory: Path, turns: int, model: LatencyModel) -> Latency:
    """Each turn sent the moment the previous turn's `done` arrives."""
    agent = ChatAgent(
        database_url=f"sqlite:///{directory / 'ours.sqlite'}",
        model=model,
        compaction_model=model,
        secret=SECRET,
        settings=Settings(data_dir=directory, long_term_memory="model"),
    )
    seconds: list[float] = []
    accepted = refused = 0
    tails: list[asyncio.Task[None]] = []
    conversation: str | None = None
    try:
        for number in range(1, turns + 1):
            started = time.perf_counter()
            events = agent.astream(
                latency_message(number),
                session_id=SESSION,
                conversation_id=conversation,
                create_conversation=conversation is None,
            )
            try:
                async for event in events:
                    if event["event"] == "conversation":
                        conversation = event["conversationId"]
                    elif event["event"] == "done":
                        break
                    elif event["event"] == "error":
                        raise RuntimeError(f"turn {number} failed: {event}")
            except ConversationBusy:
                refused += 1
                await asyncio.gather(*tails)  # wait until the conversation is free, then retry
                continue
            seconds.append(time.perf_counter() - started)
            accepted += number > 1
            tails.append(asyncio.create_task(_drain(events)))  # the upkeep's events
        last_done = time.perf_counter()
        await asyncio.gather(*tails)
        await asyncio.to_thread(agent.wait_for_upkeep)
        drain = time.perf_counter() - last_done
    finally:
        await asyncio.to_thread(agent.close)
    log = model.log
    return Latency(
        "ours",
        len(seconds),
        _ms(statistics.median(seconds)),
        _ms(_p95(seconds)),
        f"{accepted}/{accepted + refused}",
        _ms(drain),
        log.structured_calls,
        log.extraction_calls,
    )


async def play_peer(directory: Path, turns: int, model: LatencyModel) -> Latency:
    """The peer's turns, one after the other: each is done when its call returns."""
    seconds: list[float] = []
    async with AsyncSqliteSaver.from_conn_string(str(directory / "peer.sqlite")) as saver:
        await saver.conn.execute(SYNCHRONOUS)
        graph = create_agent(
            model=model, tools=[], middleware=summarization(model), checkpointer=saver
        )
        config: RunnableConfig = {"configurable": {"thread_id": "latency"}}
        for number in range(1, turns + 1):
            started = time.perf_counter()
            message = HumanMessage(content=latency_message(number))
            await graph.ainvoke({"messages": [message]}, config)
            seconds.append(time.perf_counter() - started)
    log = model.log
    return Latency(
        "summarization",
        len(seconds),
        _ms(statistics.median(seconds)),
        _ms(_p95(seconds)),
        "n/a",
        None,
        log.summary_calls,
        log.extraction_calls,
    )


def table(figures: list[Latency]) -> str:
    rows = [["agent", "turns", "p50 ms", "p95 ms", "follow-ups accepted", "upkeep drain ms"]]
    for f in figures:
        drain = "n/a" if f.drain_ms is None else f"{f.drain_ms:,}"
        rows.append([f.agent, str(f.turns), f"{f.p50_ms:,}", f"{f.p95_ms:,}", f.followups, drain])
    return fixed_width(rows)


def targets(ours: Latency, peer: Latency, chat_seconds: float) -> dict[str, bool]:
    accepted, sent = (int(part) for part in ours.followups.split("/"))
    return {
        f"median time-to-done <= 1.2x one chat call ({_ms(1.2 * chat_seconds)} ms)": (
            ours.p50_ms <= _ms(1.2 * chat_seconds)
        ),
        "p95 time-to-done <= half the summarization agent's": ours.p95_ms <= peer.p95_ms / 2,
        "every follow-up sent at done accepted": accepted == sent,
    }


async def run(turns: int, chat: float, structured: float) -> tuple[Latency, Latency]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        ours = await play_ours(
            directory, turns, LatencyModel(chat_seconds=chat, structured_seconds=structured)
        )
        peer = await play_peer(
            directory, turns, LatencyModel(chat_seconds=chat, structured_seconds=structured)
        )
    return ours, peer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--chat", type=float, default=CHAT_SECONDS, help="seconds per chat call")
    parser.add_argument(
        "--structured", type=float, default=STRUCTURED_SECONDS, help="seconds per summary"
    )
    args = parser.parse_args()
    if args.turns < 2:
        parser.error("--turns must be at least 2")
    ours, peer = asyncio.run(run(args.turns, args.chat, args.structured))
    print(
        f"{args.turns} turns (half with a cue), model latency {args.chat} s chat, "
        f"{args.structured} s structured/summary, SQLite"
    )
    print(table([ours, peer]))
    print(
        f"model calls besides chat: ours {ours.structured_calls} compactions and "
        f"{ours.extraction_calls} extractions; summarization {peer.structured_calls} summaries"
    )
    for name, met in targets(ours, peer, args.chat).items():
        print(f"{'met ' if met else 'MISSED'}  {name}")


if __name__ == "__main__":
    main()
