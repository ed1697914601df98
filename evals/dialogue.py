"""The dialogue set: long two-speaker conversations over many sessions, with questions
annotated by the ids of the messages that answer them.

A dialogue is a JSON file in `evals/dialogues/dev/` or `evals/dialogues/heldout/`:

```json
{"name": "…", "title": "…", "language": "en" | "zh", "kind": "casual" | "work",
 "speakers": ["Mia", "Tom"],
 "sessions": [{"id": "s1", "date": "2024-03-02",
               "messages": [{"id": "s1-1", "speaker": "Mia", "text": "…"}, …]}, …],
 "questions": [{"id": "q1", "type": "single" | "multi_hop" | "temporal",
                "question": "…", "answer": "…", "evidence": ["s1-1", "s4-2"]}]}
```

Replay: the dialogue is one user of the agent (one session), each dialogue session one
conversation of theirs, each message one user turn `Speaker: text` (the first of a
session starts with the session's date). Then each question is asked twice: in a new
conversation (cross-conversation recall) and as a new turn of the last conversation.

Evidence recall: a question's evidence message is in a context when at least
`EVIDENCE_SHARE` of the message's consecutive content-word pairs occur in the context
(Chinese: pairs of consecutive content characters), so that a large context does not
pass by sharing a few common words. A question's recall is the share of its evidence
messages found.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DIALOGUE_DIR = Path(__file__).parent / "dialogues"
EVIDENCE_SHARE = 0.6
QuestionType = Literal["single", "multi_hop", "temporal"]
Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,40}$")]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Id
    speaker: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Session(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Id
    date: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    messages: list[Message] = Field(min_length=2)


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Id
    type: QuestionType
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1)
    evidence: list[Id] = Field(min_length=1)


class Dialogue(BaseModel):
    """One dialogue file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Id
    title: str
    language: Literal["en", "zh"]
    kind: Literal["casual", "work"]
    speakers: list[str] = Field(min_length=2, max_length=2)
    sessions: list[Session] = Field(min_length=8)
    questions: list[Question] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> Dialogue:
        ids = [m.id for s in self.sessions for m in s.messages]
        if len(set(ids)) != len(ids):
            raise ValueError("message ids must be unique")
        speakers = {m.speaker for s in self.sessions for m in s.messages}
        if not speakers <= set(self.speakers):
            raise ValueError(f"unknown speakers: {sorted(speakers - set(self.speakers))}")
        missing = {e for q in self.questions for e in q.evidence} - set(ids)
        if missing:
            raise ValueError(f"evidence ids not in the dialogue: {sorted(missing)}")
        return self

    @property
    def messages(self) -> dict[str, Message]:
        return {m.id: m for s in self.sessions for m in s.messages}

    @property
    def turns(self) -> int:
        """User turns a replay plays: every message, then each question twice."""
        return sum(len(s.messages) for s in self.sessions) + 2 * len(self.questions)


def turn_text(session: Session, index: int, message: Message) -> str:
    """What the user sends for a message (the session's first turn carries its date)."""
    text = f"{message.speaker}: {message.text}"
    return f"({session.date}) {text}" if index == 0 else text


def load(path: Path) -> Dialogue:
    return Dialogue.model_validate(json.loads(path.read_text(encoding="utf-8")))


def load_split(split: str, directory: Path = DIALOGUE_DIR) -> list[Dialogue]:
    """Every dialogue of a split (`dev` or `heldout`), by name."""
    return [load(path) for path in sorted((directory / split).glob("*.json"))]


# -- the strict evidence rule ----------------------------------------------------------

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[a-z0-9]+(?:['’][a-z]+)?")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "let",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "yeah",
        "yes",
        "oh",
        "ok",
        "okay",
        "really",
        "also",
        "got",
        "get",
        "i'm",
        "it's",
        "that's",
        "don't",
        "i've",
        "i'll",
        "you're",
        "we're",
        "i'd",
        "s",
        "t",
    ]
)
CJK_STOP = frozenset("的了是我你他她它们在也就和吗呢吧啊呀这那个")


def content_words(text: str) -> list[str]:
    """Lower-cased words without stopwords; Chinese characters one by one, without the
    commonest function characters."""
    words = _TOKEN.findall(text.casefold())
    return [w for w in words if w not in STOPWORDS and w not in CJK_STOP]


def pairs(words: Iterable[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(words))


@lru_cache(maxsize=4096)
def _evidence_pairs(text: str) -> tuple[frozenset[tuple[str, str]], frozenset[str]]:
    words = content_words(text)
    return frozenset(pairs(words)), frozenset(words)


class Context:
    """A context's content-word pairs, computed once for every evidence check."""

    def __init__(self, text: str) -> None:
        words = content_words(text)
        self.pairs = pairs(words)
        self.words = set(words)

    def has(self, evidence: str, share: float = EVIDENCE_SHARE) -> bool:
        """Whether `evidence` is in this context by the strict rule."""
        wanted, words = _evidence_pairs(evidence)
        if not wanted:  # a one-word message: the word itself
            return bool(words) and words <= self.words
        return len(wanted & self.pairs) >= share * len(wanted)
