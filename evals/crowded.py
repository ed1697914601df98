"""Dialogues in a crowd: evidence recall when the archive holds far more than the answer.

A dialogue of a few dozen messages fits whole in a 2,000-token recall budget, so any
system that recalls everything it shares a word with looks perfect. Here a split's
dialogues and every user turn of the same split's scenarios are one user's history
(one session): the dialogues' sessions in turn, each after its share of the scenario
turns as conversations of their own (about 2,200 turns on the dev split). Then every
dialogue question is asked in a new conversation, and its evidence is looked for in
what the model was sent, with the strict rule of `evals.dialogue`.

Run: `python -m evals.crowded [--split dev|heldout] [--system ours --system …]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.offline import OfflineChatModel
from evals.contract import System
from evals.dialogue import Context, Dialogue, load_split, turn_text
from evals.report import QUESTION_TYPES, SPLITS
from evals.runner import Tokens, Turns
from evals.scenario import HELD_OUT_DIR, SCENARIO_DIR, Probe, Say, load_all
from evals.systems import build

SESSION = "crowd"
SYSTEMS = ("ours", "bm25_history")


@dataclass(frozen=True)
class Turn:
    conversation: str
    text: str


def history(dialogues: Sequence[Dialogue], crowd: Sequence[Turn]) -> list[Turn]:
    """The session's turns: the dialogues' sessions round-robin (the first of each, then
    the second of each, …), each after its share of the `crowd`, in their order."""
    sessions = [
        (dialogue, dialogue.sessions[index])
        for index in range(max(len(d.sessions) for d in dialogues))
        for dialogue in dialogues
        if index < len(dialogue.sessions)
    ]
    share = -(-len(crowd) // len(sessions))
    turns: list[Turn] = []
    for n, (dialogue, session) in enumerate(sessions):
        turns += crowd[n * share : (n + 1) * share]
        conversation = f"{dialogue.name}-{session.id}"
        turns += [
            Turn(conversation, turn_text(session, index, message))
            for index, message in enumerate(session.messages)
        ]
    return turns


def scenario_turns(split: str) -> list[Turn]:
    """Every user turn of the split's scenarios (fillers and forgets aside), each in a
    conversation named after its scenario and conversation."""
    directory = SCENARIO_DIR if split == "dev" else HELD_OUT_DIR
    return [
        Turn(
            f"{scenario.name}-{step.conversation}",
            step.say if isinstance(step, Say) else step.probe,
        )
        for scenario in load_all(directory)
        for step in scenario.expanded()
        if isinstance(step, Say | Probe)
    ]


@dataclass(frozen=True)
class Found:
    """One question's evidence recall and context size."""

    type: str
    recall: float
    tokens: int


def play(system: System, dialogues: Sequence[Dialogue], turns: Sequence[Turn]) -> list[Found]:
    tokens = Tokens()
    player = Turns(system, tokens)
    for turn in turns:
        player.play(SESSION, turn.conversation, turn.text)
    found = []
    for dialogue in dialogues:
        messages = dialogue.messages
        for question in dialogue.questions:
            conversation = f"ask-{dialogue.name}-{question.id}"
            _, seen = player.play(SESSION, conversation, question.question)
            context = Context(seen)
            hits = [context.has(messages[e].text) for e in question.evidence]
            found.append(Found(question.type, sum(hits) / len(hits), tokens.context[-1]))
            system.drop(SESSION, conversation)
    return found


def table(results: dict[tuple[str, str], list[Found]]) -> str:
    kinds = (*QUESTION_TYPES, "all")
    lines = [
        "| split | system | questions | "
        + " | ".join(kind.replace("_", "-") for kind in kinds)
        + " | context tok/question |",
        "|---|---|---|" + "---|" * (len(kinds) + 1),
    ]
    for (split, name), found in results.items():
        cells = []
        for kind in kinds:
            values = [f.recall for f in found if kind in (f.type, "all")]
            cells.append(f"{statistics.fmean(values):.0%}" if values else "n/a")
        context = statistics.fmean(f.tokens for f in found)
        lines.append(f"| {split} | {name} | {len(found)} | {' | '.join(cells)} | {context:,.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m evals.crowded", description=__doc__)
    parser.add_argument("--split", action="append", choices=SPLITS, help="(repeatable)")
    parser.add_argument("--system", action="append", choices=SYSTEMS, help="(repeatable)")
    args = parser.parse_args()
    results: dict[tuple[str, str], list[Found]] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as workdir:
        for split in args.split or list(SPLITS):
            dialogues = load_split(split)
            turns = history(dialogues, scenario_turns(split))
            for name in args.system or list(SYSTEMS):
                print(f"{split}/{name}: {len(turns)} turns", file=sys.stderr, flush=True)
                system = build(name, OfflineChatModel(), Path(workdir))
                try:
                    results[(split, name)] = play(system, dialogues, turns)
                finally:
                    system.close()
    print("Dialogues in a crowd (each split's dialogues among its scenarios' turns, one")
    print("session; questions asked in a new conversation): evidence recall\n")
    print(table(results))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
