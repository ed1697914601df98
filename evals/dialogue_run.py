"""Replay dialogues against systems and measure evidence recall on what each model was sent.

Per dialogue, each question is asked in a new conversation (deleted after it) and then
as a new turn of the last conversation; evidence recall is measured on each context
with the strict rule of `evals.dialogue`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from evals.contract import System
from evals.dialogue import Context, Dialogue, turn_text
from evals.runner import Tokens, Turns, report_progress
from evals.systems import SCRIPTED, build


@dataclass(frozen=True)
class Asked:
    """One dialogue question, asked in a new conversation or in the last one."""

    question: str
    type: str
    mode: str
    """`new` (a new conversation) or `last` (a new turn of the last conversation)."""
    recall: float
    """Share of the question's evidence messages found in the context."""
    answer: str
    reference: str


@dataclass
class DialogueOutcome:
    """What one system did on one dialogue."""

    system: str
    dialogue: str
    split: str = "dev"
    asked: list[Asked] = field(default_factory=list)
    tokens: Tokens = field(default_factory=Tokens)
    seconds: float = 0.0


def play_dialogue(dialogue: Dialogue, system: System, split: str = "dev") -> DialogueOutcome:
    """Replay a dialogue (one conversation per session), then ask every question in a
    new conversation and as a new turn of the last one."""
    outcome = DialogueOutcome(system.name, dialogue.name, split)
    turns = Turns(system, outcome.tokens)
    started = time.perf_counter()
    user = dialogue.name
    for session in dialogue.sessions:
        for index, message in enumerate(session.messages):
            turns.play(user, session.id, turn_text(session, index, message))
    messages = dialogue.messages
    last = dialogue.sessions[-1].id
    for mode in ("new", "last"):
        for question in dialogue.questions:
            conversation = f"ask-{question.id}" if mode == "new" else last
            answer, seen = turns.play(user, conversation, question.question)
            context = Context(seen)
            found = [context.has(messages[e].text) for e in question.evidence]
            outcome.asked.append(
                Asked(
                    question.question,
                    question.type,
                    mode,
                    sum(found) / len(found),
                    answer,
                    question.answer,
                )
            )
            if mode == "new":
                system.drop(user, conversation)
    turns.settle()
    outcome.seconds = time.perf_counter() - started
    return outcome


def evaluate_dialogues(
    dialogues: Sequence[Dialogue],
    systems: Sequence[str],
    model: Callable[[], BaseChatModel],
    workdir: Path,
    *,
    split: str = "dev",
    progress: bool = True,
) -> list[DialogueOutcome]:
    """Every dialogue against every system, each on fresh storage and a fresh model."""
    outcomes = []
    pairs = [(d, name) for d in dialogues for name in systems if name not in SCRIPTED]
    for n, (dialogue, name) in enumerate(pairs, start=1):
        if progress:
            report_progress(n, len(pairs), name, f"{split}/{dialogue.name}", dialogue.turns)
        system = build(name, model(), workdir)
        try:
            outcomes.append(play_dialogue(dialogue, system, split))
        finally:
            system.close()
    return outcomes
