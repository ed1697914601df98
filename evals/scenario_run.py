"""Play scenarios against systems and measure what each model was sent.

Per system and scenario:
- context recall (the offline name of a hit rate: the fact is in what the model was
  sent, a substring match, not whether an answer used it): `expect` facts in the
  context of their probe turn, split into facts said earlier in the same conversation
  and facts said in another conversation of the session;
- wrong injection: `forbid` facts in it (revoked, superseded, deleted, secret,
  irrelevant, another session's); `foreign` ones found are also counted as leakage;
- compression fidelity: key facts of a conversation still in its context at each later
  turn, once they are older than the recent window (the last 8 messages), until a turn
  revokes them (`revokes`), a forget deletes them or a probe forbids them;
- tokens: the context of each turn's chat request, and every call spent on memory
  (compaction, extraction, summaries: input and output) and in total, counted with
  `evals.tokens` (a CJK character is about one token);
- deletion propagation: turns after a `forget` until the fact is gone from that
  session's contexts (0: the very next turn), or never;
- the store: at the end, no current long-term item of a session may still hold one of
  its revoked, superseded, deleted or secret facts (history may);
- the write gate: what it refused, by reason, and whether a hostile extractor's
  operations stored anything (`evals.oracle`).
The context checked is everything the model was sent for the turn's first chat
request, except the turn's own new message.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from evals.contract import Metric, System
from evals.oracle import GateOutcome
from evals.runner import Tokens, Turns, report_progress
from evals.scenario import Fact, Forget, Probe, Say, Scenario
from evals.systems import build

RECENT_TURNS = 4
"""A key fact counts for fidelity once it is older than this many turns (8 messages)."""
STORE_WHYS = frozenset({"revoked", "superseded", "deleted", "secret"})
"""Forbidden facts that no long-term item may hold once the scenario is over."""


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
    split: str = "dev"
    turns: int = 0
    expected_same: int = 0
    hits_same: int = 0
    expected_cross: int = 0
    hits_cross: int = 0
    forbidden: int = 0
    wrong: int = 0
    leaks: int = 0
    fidelity_checks: int = 0
    fidelity_kept: int = 0
    tokens: Tokens = field(default_factory=Tokens)
    deletions: list[int | None] = field(default_factory=list)
    """Turns until each forgotten fact was gone (None: never, within the scenario)."""
    store_checks: int = 0
    store_left: int = 0
    """Revoked, superseded, deleted or secret facts still held by a current item."""
    store_left_why: Counter[str] = field(default_factory=Counter)
    store_checks_why: Counter[str] = field(default_factory=Counter)
    wrong_why: Counter[str] = field(default_factory=Counter)
    """Forbidden facts found in a context, by why they were forbidden."""
    gate: GateOutcome | None = None
    """What the write gate refused (systems with one)."""
    by_construction: frozenset[Metric] = frozenset()
    misses: list[str] = field(default_factory=list)
    """Probe failures, for the report: what was missing or wrongly present, and where."""
    seconds: float = 0.0
    answers: list[Answer] = field(default_factory=list)

    @property
    def expected(self) -> int:
        return self.expected_same + self.expected_cross

    @property
    def hits(self) -> int:
        return self.hits_same + self.hits_cross

    @property
    def recall(self) -> float | None:
        return self.hits / self.expected if self.expected else None

    @property
    def wrong_rate(self) -> float | None:
        return self.wrong / self.forbidden if self.forbidden else None

    @property
    def fidelity(self) -> float | None:
        return self.fidelity_kept / self.fidelity_checks if self.fidelity_checks else None


def play(scenario: Scenario, system: System, split: str = "dev") -> Outcome:
    """Play `scenario` against `system`, measuring every turn."""
    outcome = Outcome(system.name, scenario.name, split, by_construction=system.by_construction)
    turns = Turns(system, outcome.tokens)
    started = time.perf_counter()
    said: dict[tuple[str, str], list[tuple[Fact, int]]] = {}
    typed: dict[tuple[str, str], list[str]] = {}
    turn_of: dict[tuple[str, str], int] = {}
    pending: list[Pending] = []
    banned: dict[str, list[Fact]] = {}
    for step in scenario.expanded():
        if isinstance(step, Forget):
            system.forget(step.session, step.forget)
            pending.append(Pending(step.session, step.fact))
            banned.setdefault(step.session, []).append(step.fact)
            _retire(said, step.session, [step.fact])
            continue
        where = (step.session, step.conversation)
        text = step.say if isinstance(step, Say) else step.probe
        if isinstance(step, Say):
            _retire(said, step.session, step.revokes)
        else:
            revoked = [f for f in step.forbid if f.why in {"revoked", "superseded", "deleted"}]
            _retire(said, step.session, revoked)
        answer, seen = turns.play(step.session, step.conversation, text)
        outcome.turns += 1
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
            check_probe(step, seen, typed.get(where, []), outcome)
            outcome.answers.append(
                Answer(step.probe, answer, tuple(step.expect), tuple(step.forbid))
            )
            banned.setdefault(step.session, []).extend(
                f for f in step.forbid if f.why in STORE_WHYS
            )
        typed.setdefault(where, []).append(text)
    outcome.deletions.extend(None for _ in pending)
    check_store(system, banned, outcome)
    outcome.gate = system.gate({step.session for step in scenario.steps})
    turns.settle()
    outcome.seconds = time.perf_counter() - started
    return outcome


def _retire(
    said: dict[tuple[str, str], list[tuple[Fact, int]]], session: str, gone: Sequence[Fact]
) -> None:
    """Key facts of `session` that `gone` revokes stop counting for fidelity."""
    if not gone:
        return
    for where, facts in said.items():
        if where[0] == session:
            facts[:] = [(f, at) for f, at in facts if not any(f.overlaps(g) for g in gone)]


def check_probe(step: Probe, seen: str, typed_here: Sequence[str], outcome: Outcome) -> None:
    """Count a probe's expected and forbidden facts in what the model was sent."""
    for fact in step.expect:
        same = any(fact.found_in(text) for text in typed_here)
        found = fact.found_in(seen)
        if same:
            outcome.expected_same += 1
            outcome.hits_same += found
        else:
            outcome.expected_cross += 1
            outcome.hits_cross += found
        if not found:
            where = "same" if same else "cross"
            outcome.misses.append(f"missing ({where}) {fact.any[0]!r} at {step.probe!r}")
    for fact in step.forbid:
        outcome.forbidden += 1
        if fact.found_in(seen):
            outcome.wrong += 1
            outcome.wrong_why[fact.why or "forbidden"] += 1
            outcome.leaks += fact.why == "foreign"
            outcome.misses.append(f"{fact.why or 'forbidden'} {fact.any[0]!r} at {step.probe!r}")


def check_store(system: System, banned: dict[str, list[Fact]], outcome: Outcome) -> None:
    """No long-term item may still hold a revoked, superseded, deleted or secret fact."""
    for session, facts in banned.items():
        items = system.memories(session)
        if items is None:
            return
        unique = {tuple(fact.any): fact for fact in facts}
        for fact in unique.values():
            outcome.store_checks += 1
            outcome.store_checks_why[fact.why or "banned"] += 1
            if any(fact.found_in(item) for item in items):
                outcome.store_left += 1
                outcome.store_left_why[fact.why or "banned"] += 1
                outcome.misses.append(f"store still holds {fact.why} {fact.any[0]!r}")


def evaluate(
    scenarios: Sequence[Scenario],
    systems: Sequence[str],
    model: Callable[[], BaseChatModel],
    workdir: Path,
    *,
    split: str = "dev",
    progress: bool = True,
) -> list[Outcome]:
    """Every scenario against every system, each on fresh storage and a fresh model."""
    outcomes = []
    pairs = [(scenario, name) for scenario in scenarios for name in systems]
    for n, (scenario, name) in enumerate(pairs, start=1):
        if progress:
            report_progress(n, len(pairs), name, f"{split}/{scenario.name}", scenario.turns)
        system = build(name, model(), workdir, scenario=scenario)
        try:
            outcomes.append(play(scenario, system, split))
        finally:
            system.close()
    return outcomes
