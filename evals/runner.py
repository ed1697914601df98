"""Play scenarios against systems and measure what each model was sent (seed 004 §6).

Per system and scenario:
- hit rate: `expect` facts in the context of their probe turn;
- wrong injection rate: `forbid` facts in it (revoked, superseded, deleted, secret,
  irrelevant, another session's); `foreign` ones found are also counted as leakage;
- compression fidelity: key facts of a conversation still in its context at each later
  turn, once they are older than the recent window (the last 8 messages);
- context tokens per turn (`count_tokens_approximately`), and model calls per turn;
- deletion propagation: turns after a `forget` until the fact is gone from that
  session's contexts (0: the very next turn), or never.
The context checked is everything the model was sent for the turn's first chat
request, except the turn's own new message.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from evals.scenario import Fact, Forget, Probe, Say, Scenario
from evals.systems import System, build

RECENT_TURNS = 4
"""A key fact counts for fidelity once it is older than this many turns (8 messages)."""


@dataclass
class Pending:
    """A forget step whose fact is still being looked for in the session's contexts."""

    session: str
    fact: Fact
    turns: int = 0


@dataclass(frozen=True)
class Answer:
    """A probe's answer, for the judge (real models only)."""

    probe: str
    answer: str
    expect: tuple[Fact, ...]
    forbid: tuple[Fact, ...]


@dataclass
class Outcome:
    """What one system did on one scenario."""

    system: str
    scenario: str
    turns: int = 0
    expected: int = 0
    hits: int = 0
    forbidden: int = 0
    wrong: int = 0
    leaks: int = 0
    fidelity_checks: int = 0
    fidelity_kept: int = 0
    tokens: list[int] = field(default_factory=list)
    calls: int = 0
    deletions: list[int | None] = field(default_factory=list)
    """Turns until each forgotten fact was gone (None: never, within the scenario)."""
    misses: list[str] = field(default_factory=list)
    """Probe failures, for the report: what was missing or wrongly present, and where."""
    seconds: float = 0.0
    answers: list[Answer] = field(default_factory=list)

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.expected if self.expected else None

    @property
    def wrong_rate(self) -> float | None:
        return self.wrong / self.forbidden if self.forbidden else None

    @property
    def fidelity(self) -> float | None:
        return self.fidelity_kept / self.fidelity_checks if self.fidelity_checks else None

    @property
    def tokens_per_turn(self) -> float:
        return statistics.fmean(self.tokens) if self.tokens else 0.0

    @property
    def calls_per_turn(self) -> float:
        return self.calls / self.turns if self.turns else 0.0


def context_text(context: Sequence[BaseMessage]) -> str:
    """The text of a context without its last message (the turn's own new input)."""
    return "\n".join(message.text for message in context[:-1])


def play(scenario: Scenario, system: System) -> Outcome:
    """Play `scenario` against `system`, measuring every turn."""
    outcome = Outcome(system.name, scenario.name)
    started = time.perf_counter()
    said: dict[tuple[str, str], list[tuple[Fact, int]]] = {}
    turn_of: dict[tuple[str, str], int] = {}
    pending: list[Pending] = []
    for step in scenario.expanded():
        if isinstance(step, Forget):
            system.forget(step.session, step.forget)
            pending.append(Pending(step.session, step.fact))
            continue
        where = (step.session, step.conversation)
        text = step.say if isinstance(step, Say) else step.probe
        before = len(system.log.chats), system.log.calls
        answer = system.turn(step.session, step.conversation, text)
        chats = system.log.chats[before[0] :]
        outcome.turns += 1
        outcome.calls += system.log.calls - before[1]
        context = chats[0] if chats else []
        outcome.tokens.append(count_tokens_approximately(context))
        seen = context_text(context)
        turn_of[where] = turn_of.get(where, 0) + 1
        for fact, at in said.get(where, []):
            if turn_of[where] - at > RECENT_TURNS:
                outcome.fidelity_checks += 1
                outcome.fidelity_kept += fact.found_in(seen)
        for deletion in [p for p in pending if p.session == step.session]:
            if deletion.fact.found_in(seen):
                deletion.turns += 1
            else:
                outcome.deletions.append(deletion.turns)
                pending.remove(deletion)
        if isinstance(step, Say):
            said.setdefault(where, []).extend((fact, turn_of[where]) for fact in step.key_facts)
        else:
            check_probe(step, seen, outcome)
            outcome.answers.append(
                Answer(step.probe, answer, tuple(step.expect), tuple(step.forbid))
            )
    outcome.deletions.extend(None for _ in pending)
    outcome.seconds = time.perf_counter() - started
    return outcome


def check_probe(step: Probe, seen: str, outcome: Outcome) -> None:
    """Count a probe's expected and forbidden facts in what the model was sent."""
    for fact in step.expect:
        outcome.expected += 1
        if fact.found_in(seen):
            outcome.hits += 1
        else:
            outcome.misses.append(f"missing {fact.any[0]!r} at {step.probe!r}")
    for fact in step.forbid:
        outcome.forbidden += 1
        if fact.found_in(seen):
            outcome.wrong += 1
            outcome.leaks += fact.why == "foreign"
            outcome.misses.append(f"{fact.why or 'forbidden'} {fact.any[0]!r} at {step.probe!r}")


def evaluate(
    scenarios: Sequence[Scenario],
    systems: Sequence[str],
    model: Callable[[], BaseChatModel],
    workdir: Path,
    *,
    progress: bool = True,
) -> list[Outcome]:
    """Every scenario against every system, each on fresh storage and a fresh model."""
    outcomes = []
    total = len(scenarios) * len(systems)
    for n, (scenario, name) in enumerate(
        ((scenario, name) for scenario in scenarios for name in systems), start=1
    ):
        if progress:
            print(
                f"[{n}/{total}] {name:<14} {scenario.name} ({scenario.turns} turns)",
                file=sys.stderr,
                flush=True,
            )
        system = build(name, model(), workdir)
        try:
            outcomes.append(play(scenario, system))
        finally:
            system.close()
    return outcomes
