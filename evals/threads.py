"""The long-archive set: one user's threads of conversations with an AI assistant, and
off-topic probes.

A thread is a JSON file in `evals/archives/<split>/` in the dialogue schema of
`evals.dialogue`, read differently: `speakers[0]` is the user of this agent and
`speakers[1]` the assistant, each session one conversation, its lines alternating
strictly, user first; a thread may have as few as three sessions. Off-topic probes are
`evals/offtopic/<split>.jsonl`, one general request a line (`{"id", "language", "kind",
"text", "near"}`) that nothing in any archive answers; `near` ones share common words
with the archive's topics.

A split's history is every session of its threads (and, for `dev`, of the two-person
dialogues of `evals/dialogues/dev/`) in date order: each session one conversation, each
exchange a user line and the assistant line that answers it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evals.dialogue import DIALOGUE_DIR, Dialogue, Id, Session, load_split

EVALS_DIR = Path(__file__).parent
ARCHIVE_DIR = EVALS_DIR / "archives"
OFFTOPIC_DIR = EVALS_DIR / "offtopic"
WITH_DIALOGUES = frozenset({"dev"})
"""Splits whose history also holds the two-person dialogues of the same split."""
OPENERS = {"en": "Hi!", "zh": "你好！"}
"""What the user says when a dialogue session opens with the other speaker: a turn
starts with the user, and the opening line is kept as the answer to a greeting."""


class Thread(Dialogue):
    """One thread: the user and the assistant, at least three conversations."""

    sessions: list[Session] = Field(min_length=3)

    @model_validator(mode="after")
    def _alternates(self) -> Thread:
        user, assistant = self.speakers
        for session in self.sessions:
            for index, message in enumerate(session.messages):
                if message.speaker != (user if index % 2 == 0 else assistant):
                    raise ValueError(
                        f"{session.id}: lines must alternate {user} / {assistant}, "
                        f"starting with {user} ({message.id} breaks it)"
                    )
        return self


class OffTopic(BaseModel):
    """A general request that nothing the user said before answers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Id
    language: Literal["en", "zh"]
    kind: Literal["coding", "fact", "conversion", "howto", "chitchat", "writing"]
    text: str = Field(min_length=1)
    near: bool = False
    """Shares common words with the archive's topics, without being about the user."""


def load_threads(split: str, directory: Path = ARCHIVE_DIR) -> list[Thread]:
    """Every thread of a split, by file name (none when the split has no directory)."""
    return [
        Thread.model_validate(json.loads(path.read_text(encoding="utf-8")))
        for path in sorted((directory / split).glob("*.json"))
    ]


def load_probes(split: str, directory: Path = OFFTOPIC_DIR) -> list[OffTopic]:
    """The split's off-topic probes (none when it has no file)."""
    path = directory / f"{split}.jsonl"
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    return [OffTopic.model_validate_json(line) for line in lines if line.strip()]


def load_history_files(
    split: str, archives: Path = ARCHIVE_DIR, dialogues: Path = DIALOGUE_DIR
) -> list[Dialogue]:
    """The files a split's history is made of: its threads, then (for `dev`) its
    two-person dialogues."""
    files: list[Dialogue] = list(load_threads(split, archives))
    if files and split in WITH_DIALOGUES:
        files += load_split(split, dialogues)
    return files


@dataclass(frozen=True)
class Exchange:
    """One user turn of the replay and the assistant's line that answers it."""

    conversation: str
    date: str
    user: str
    answer: str | None
    """None when the user's line ends its session (the assistant said nothing after)."""


def exchanges(dialogue: Dialogue, session: Session) -> list[Exchange]:
    """A session's turns: each user line with the assistant line after it; an assistant
    line with no user line before it answers the user's greeting."""
    user = dialogue.speakers[0]
    conversation = f"{dialogue.name}-{session.id}"
    turns: list[Exchange] = []
    pending: str | None = None
    for message in session.messages:
        if message.speaker == user:
            if pending is not None:
                turns.append(Exchange(conversation, session.date, pending, None))
            pending = message.text
        else:
            said = pending if pending is not None else OPENERS[dialogue.language]
            turns.append(Exchange(conversation, session.date, said, message.text))
            pending = None
    if pending is not None:
        turns.append(Exchange(conversation, session.date, pending, None))
    return turns


def history(files: Sequence[Dialogue]) -> list[Exchange]:
    """Every session of every file in date order (ties: file, then session order), as
    the exchanges the replay plays."""
    sessions = sorted(
        ((session.date, n, index, dialogue, session))
        for n, dialogue in enumerate(files)
        for index, session in enumerate(dialogue.sessions)
    )
    return [turn for *_, dialogue, session in sessions for turn in exchanges(dialogue, session)]
