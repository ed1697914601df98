"""The evaluation scenarios follow the annotation rules of evals/scenarios/README.md:
every fact is something a user typed earlier, no probe gives its own answer away, a
foreign fact was never said in the probing session, and the whole set stays small
enough for `make eval` to run in minutes."""

from __future__ import annotations

from evals.scenario import HELD_OUT_DIR, SCENARIO_DIR, Fact, Forget, Probe, Say, Scenario, load_all
from memory.limits import MAX_CONVERSATIONS

MAX_TOTAL_TURNS = 1_800
"""Every scenario of both splits against every system stays well under five minutes."""


def every_scenario() -> list[Scenario]:
    """The dev split and the held-out split."""
    return [*load_all(), *load_all(HELD_OUT_DIR)]


def said_before(scenario: Scenario) -> list[tuple[Say | Probe | Forget, dict[str, list[str]]]]:
    """Each expanded step with what each session's user had typed before it."""
    said: dict[str, list[str]] = {}
    steps = []
    for step in scenario.expanded():
        steps.append((step, {session: list(texts) for session, texts in said.items()}))
        if isinstance(step, Say | Probe):
            text = step.say if isinstance(step, Say) else step.probe
            said.setdefault(step.session, []).append(text)
    return steps


def typed(fact: Fact, texts: list[str]) -> bool:
    return any(fact.found_in(text) for text in texts)


def test_scenario_files_are_named_after_their_scenarios() -> None:
    for directory in (SCENARIO_DIR, HELD_OUT_DIR):
        names = sorted(s.name for s in load_all(directory))
        assert names == sorted(p.stem for p in directory.glob("*.json"))
    scenarios = every_scenario()
    assert sum(s.turns for s in scenarios) <= MAX_TOTAL_TURNS
    assert {s.language for s in load_all()} == {"en", "zh", "mixed"}
    assert {s.language for s in load_all(HELD_OUT_DIR)} >= {"en", "zh"}
    assert not {s.name for s in load_all()} & {s.name for s in load_all(HELD_OUT_DIR)}


def test_every_fact_is_something_the_user_typed_earlier() -> None:
    for scenario in every_scenario():
        for step, before in said_before(scenario):
            own = before.get(step.session, [])
            others = [t for s, texts in before.items() if s != step.session for t in texts]
            if isinstance(step, Say):
                facts = [*step.key_facts, *step.revokes]
                own = [*own, step.say]
            elif isinstance(step, Forget):
                facts = [step.fact]
            else:
                facts = [*step.expect, *step.forbid]
            for fact in facts:
                where = others if fact.why == "foreign" else own
                assert typed(fact, where), f"{scenario.name}: {fact.any} was never typed"
                if fact.why == "foreign":
                    assert not typed(fact, own), f"{scenario.name}: {fact.any} is not foreign"


def test_no_probe_gives_its_own_answer_away() -> None:
    for scenario in every_scenario():
        for step in scenario.steps:
            if isinstance(step, Probe):
                for fact in [*step.expect, *step.forbid]:
                    assert not fact.found_in(step.probe), f"{scenario.name}: {step.probe!r}"


def test_no_session_outgrows_the_conversation_limit() -> None:
    for scenario in every_scenario():
        conversations: dict[str, set[str]] = {}
        for step in scenario.steps:
            if not isinstance(step, Forget):
                conversations.setdefault(step.session, set()).add(step.conversation)
        assert all(len(names) <= MAX_CONVERSATIONS for names in conversations.values())
