"""Compression fidelity of the offline compactor: planted facts still in the model's context.

Each scenario plants ten facts (a database, a budget, a launch date, a competitor, a
rate limit, a role, a preference and three decisions), then talks on with filler.
Every turn takes the real memory path: the offline model answers from
`memory.context.context_parts`, `ConversationMemory.write_turn` stores the turn and
`ConversationMemory.compact` compacts with the offline model. After 10, 40 and 100
filler turns it counts the facts found in the model's context (summary, pins and
recent messages) and in the summary and pins alone (with content-free filler, at
least 9 of 10 after 100 filler turns; the summary at most 2,500 characters).

Run: `python -m bench.fidelity_bench [--json]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from agent.offline import OfflineChatModel
from graphs.upkeep import structured_compactor
from memory import ThreadIds, ThreadState
from memory.context import context_parts
from memory.conversations import ConversationMemory
from memory.storage import open_thread_store
from memory.turns import chat_turn

SECRET = "fidelity-bench-" + "x" * 32
SESSION = "fidelity"
CHECKPOINTS = (10, 40, 100)


@dataclass(frozen=True)
class Fact:
    """A fact planted by one user message.

    Attributes:
        name: what kind of fact it is ("budget").
        said: the user's message that states it (sometimes wrapped in small talk).
        probe: strings that all appear (case-insensitively) where the fact is kept.
    """

    name: str
    said: str
    probe: tuple[str, ...]

    def found_in(self, text: str) -> bool:
        folded = text.casefold()
        return all(part.casefold() in folded for part in self.probe)


@dataclass(frozen=True)
class Scenario:
    """Ten planted facts, then filler: `filler(i)` is the i-th filler message."""

    name: str
    facts: tuple[Fact, ...]
    filler: Callable[[int], str]


@dataclass(frozen=True)
class Checkpoint:
    """What memory holds after `filler_turns` filler turns.

    Attributes:
        in_context: names of the facts found in the model's context.
        in_summary_or_pins: names of the facts found in the summary or the pins.
    """

    filler_turns: int
    in_context: tuple[str, ...]
    in_summary_or_pins: tuple[str, ...]
    summary_chars: int
    summary_version: int
    pins: int


ENGLISH_FACTS = (
    Fact(
        "database",
        "Hi! For context, all our orders live in a PostgreSQL database called orders_prod.",
        ("orders_prod",),
    ),
    Fact("budget", "Our budget for the first year is $48,500.", ("$48,500",)),
    Fact("launch date", "The public launch is planned for March 14, 2027.", ("March 14",)),
    Fact("competitor", "Thanks. Our main competitor is Brightwave Analytics.", ("Brightwave",)),
    Fact("rate limit", "The partner API allows at most 600 requests per minute.", ("600 req",)),
    Fact("role", "I'm the head of data engineering here.", ("head of data engineering",)),
    Fact("preference", "I prefer answers as short bullet lists.", ("bullet list",)),
    Fact("decision 1", "We decided to use Kafka for the event pipeline.", ("Kafka",)),
    Fact("decision 2", "Good point. We agreed to deploy only on Tuesdays.", ("Tuesday",)),
    Fact("decision 3", "We decided to keep invoices for seven years.", ("seven years",)),
)

ENGLISH_FILLER = (
    "Thanks, that helps.",
    "Can you say a bit more about that?",
    "OK, got it.",
    "Interesting, go on.",
    "That makes sense.",
    "Great, thank you!",
    "Could you elaborate?",
    "Hmm, let me think about that.",
    "Sure.",
    "What else?",
    "Nice, please continue.",
    "I see.",
)

CHINESE_FACTS = (
    Fact(
        "database",
        "先说背景：我们所有订单都存在一个叫 orders_prod 的 PostgreSQL 数据库里。",
        ("orders_prod",),
    ),
    Fact("budget", "第一年的预算是48.5万元。", ("48.5万",)),
    Fact("launch date", "正式上线日期定在3月15日。", ("3月15日",)),
    Fact("competitor", "谢谢。我们的主要竞争对手是星云数据。", ("星云数据",)),
    Fact("rate limit", "合作方接口限流是每分钟最多600次请求。", ("600次",)),
    Fact("role", "我是公司的数据工程负责人。", ("数据工程负责人",)),
    Fact("preference", "我更喜欢用简短的要点列表回答。", ("要点列表",)),
    Fact("decision 1", "我们决定用 Kafka 做事件管道。", ("Kafka",)),
    Fact("decision 2", "好的。我们约定只在周二发布。", ("周二",)),
    Fact("decision 3", "我们决定发票保存七年。", ("七年",)),
)

CHINESE_FILLER = (
    "谢谢，这很有帮助。",
    "可以再详细说说吗？",
    "好的，明白了。",
    "嗯，继续。",
    "有道理。",
    "太好了，谢谢！",
    "还有呢？",
    "能展开讲讲吗？",
    "收到。",
    "不错，接着说。",
)

_ADJECTIVES = ("quiet", "bright", "narrow", "dusty", "tidy", "noisy", "chilly", "sunny")
_NOUNS = ("hallway", "kitchen", "stairwell", "balcony", "library", "garage", "lobby", "attic")
_STATES = ("repainted", "rearranged", "cleaned", "redecorated", "reopened", "aired")


def cycling(messages: Sequence[str]) -> Callable[[int], str]:
    """Filler that repeats `messages` in order."""
    return lambda i: messages[i % len(messages)]


def contentful_filler(i: int) -> str:
    """Filler that is not content-free: every turn states a new fact.

    Even turns state a salient fact (an identifier, numbers, a name); odd turns a
    plain one that is new but carries no number, name or identifier.
    """
    if i % 2 == 0:
        return (
            f"Ticket OPS-{1000 + i} moved worker node-{i} to rack R{i % 9 + 1} "
            f"with {16 + i} GB of memory."
        )
    j = i // 2
    adjective = _ADJECTIVES[j % len(_ADJECTIVES)]
    noun = _NOUNS[(j // len(_ADJECTIVES)) % len(_NOUNS)]
    state = _STATES[j % len(_STATES)]
    return f"The {adjective} {noun} downstairs got {state} this week."


SCENARIOS = (
    Scenario("english", ENGLISH_FACTS, cycling(ENGLISH_FILLER)),
    Scenario("chinese", CHINESE_FACTS, cycling(CHINESE_FILLER)),
    Scenario("english, every filler turn a new fact", ENGLISH_FACTS, contentful_filler),
)


class Conversation:
    """One conversation on the real memory path, the offline model answering and compacting."""

    def __init__(self, memory: ConversationMemory, conversation_id: str) -> None:
        self.memory = memory
        self.conversation_id = conversation_id
        self.model = OfflineChatModel()
        self.compactor = structured_compactor(self.model)
        memory.accept_draft(SESSION, conversation_id)

    def say(self, text: str) -> ThreadState:
        """One turn: answer from the context, store the turn, compact past eight messages."""
        state = self.memory.read_memory(SESSION, self.conversation_id)
        answer = self.model.invoke(context_parts(state, text).messages())
        self.memory.write_turn(SESSION, self.conversation_id, chat_turn(text, answer.text))
        self.memory.compact(SESSION, self.conversation_id, self.compactor)
        return self.memory.read_memory(SESSION, self.conversation_id)


def context_text(state: ThreadState) -> str:
    """Everything the model would read from memory for its next turn."""
    return "\n".join(message.text for message in context_parts(state, None).messages())


def checkpoint(facts: Sequence[Fact], state: ThreadState, filler_turns: int) -> Checkpoint:
    context = context_text(state)
    kept = "\n".join([state.summary, *state.pinned_decisions])
    return Checkpoint(
        filler_turns=filler_turns,
        in_context=tuple(fact.name for fact in facts if fact.found_in(context)),
        in_summary_or_pins=tuple(fact.name for fact in facts if fact.found_in(kept)),
        summary_chars=len(state.summary),
        summary_version=state.summary_version,
        pins=len(state.pinned_decisions),
    )


def run(
    scenario: Scenario, database_url: str, checkpoints: Sequence[int] = CHECKPOINTS
) -> list[Checkpoint]:
    """Plant the scenario's facts, then filler; a `Checkpoint` after each of `checkpoints`
    filler turns."""
    store = open_thread_store(database_url)
    try:
        conversation = Conversation(ConversationMemory(store, ThreadIds(SECRET)), "c1")
        for fact in scenario.facts:
            conversation.say(fact.said)
        results: list[Checkpoint] = []
        for i in range(max(checkpoints)):
            state = conversation.say(scenario.filler(i))
            if i + 1 in checkpoints:
                results.append(checkpoint(scenario.facts, state, i + 1))
        return results
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    report: dict[str, list[Checkpoint]] = {}
    with tempfile.TemporaryDirectory() as directory:
        for n, scenario in enumerate(SCENARIOS):
            url = f"sqlite:///{Path(directory) / f'fidelity-{n}.sqlite'}"
            report[scenario.name] = run(scenario, url)
    if args.json:
        data = {name: [asdict(point) for point in points] for name, points in report.items()}
        print(json.dumps(data, ensure_ascii=False, indent=1))
        return
    print(f"{'scenario':40} {'filler':>6} {'context':>8} {'summary+pins':>13} {'chars':>6}")
    for name, points in report.items():
        for point in points:
            print(
                f"{name:40} {point.filler_turns:>6} {len(point.in_context):>5}/10 "
                f"{len(point.in_summary_or_pins):>10}/10 {point.summary_chars:>6}"
            )


if __name__ == "__main__":
    main()
